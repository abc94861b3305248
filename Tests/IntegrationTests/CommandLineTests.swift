import Foundation
import Items
import LimelightClient
import Testing
import ZeroMQ

/// The `limelight` command as a user runs it: real processes, real exit codes.
@Suite(.serialized)
struct CommandLineTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `limelight ARGS…`, feeding `input` on standard input.
    static func limelight(_ args: [String], input: String? = nil, environment: [String: String] = [:]) throws -> Run {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "LIMELIGHT_ENDPOINT")
        // Nor a key of the developer's own (docs/security.md: where the CLI looks for one).
        for k in ["LIMELIGHT_KEY", "LIMELIGHT_KEY_FILE", "LIMELIGHT_DATA"] { env.removeValue(forKey: k) }
        for (k, v) in environment { env[k] = v }
        let r = try ChildProcess.run(ClusterFixture.binDirectory + "/limelight", args, input: input.map { Data($0.utf8) }, environment: env)
        var stderr = String(decoding: r.stderr, as: UTF8.self)
        if r.timedOut { stderr += "\n[test] limelight \(args.joined(separator: " ")) was still running after its time limit, and was stopped" }
        return Run(status: r.timedOut ? -1 : r.status, stdout: String(decoding: r.stdout, as: UTF8.self), stderr: stderr)
    }

    @Test func publishQueryAndDeleteWithTheDocumentedOutputAndExitCodes() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let ep = ["--endpoint", cluster.clientEndpoint]
        let lines = """
            {"uniqueIdentifier": "w1", "domainIdentifier": "com.example", "attributes": {"title": "MyWindowClass", "size": 5}}
            {"uniqueIdentifier": "w2", "domainIdentifier": "com.example.sub", "attributes": {"title": "Broken Window", "size": 7}}
            {"uniqueIdentifier": "w3", "domainIdentifier": "org.other", "attributes": {"title": "NSWindow", "size": 9}}
            {"domainIdentifier": "org.other", "attributes": {"title": "no identifier"}}
            not json at all
            """
        let pub = try Self.limelight(["publish", "-"] + ep, input: lines)
        #expect(pub.status == 1)  // some items were rejected
        #expect(pub.stderr.contains("stdin:4"))  // each rejection names its line
        #expect(pub.stderr.contains("stdin:5"))
        #expect(pub.stderr.contains("published 3 items"))

        let q = try Self.limelight(["query", #"title == "Window"w"#, "--json", "--fetch", "title"] + ep)
        #expect(q.status == 0)
        let rows = q.stdout.split(separator: "\n").map { try? JSONValue.parse(String($0)) }
        #expect(Set(rows.compactMap { $0?["uniqueIdentifier"]?.stringValue }) == ["w1", "w2"])
        // Only the requested attributes, and nothing else on standard output.
        #expect(rows.allSatisfy { $0?["attributes"]?.objectValue?.keys.sorted() == ["title"] })
        #expect(rows.allSatisfy { $0?["domainIdentifier"] != nil })

        let sorted = try Self.limelight(["query", "size > 0", "--json", "--sort", "size:desc"] + ep)
        let sizes = sorted.stdout.split(separator: "\n").compactMap { try? JSONValue.parse(String($0))["attributes"]?["size"]?.doubleValue }
        #expect(sizes == [9, 7, 5])

        let env = try Self.limelight(["query", #"title == "NSWindow""#, "--json"], environment: ["LIMELIGHT_ENDPOINT": cluster.clientEndpoint])
        #expect(env.stdout.contains("w3"))

        let bad = try Self.limelight(["query", #"title == "x" &&"#] + ep)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("at 15: expected a comparison after '&&'"))

        let del = try Self.limelight(["delete", "--domains", "com.example"] + ep)
        #expect(del.status == 0)
        #expect(del.stdout.contains("deleted 2"))
        let rest = try Self.limelight(["query", "size > 0", "--json"] + ep)
        #expect(rest.stdout.split(separator: "\n").count == 1)
    }

    @Test func anUnreachableServerExitsThree() throws {
        let r = try Self.limelight(["query", "title == \"x\"", "--endpoint", "tcp://127.0.0.1:1", "--timeout", "0.5"])
        #expect(r.status == 3)
        #expect(r.stderr.contains("cannot reach"))
    }

    @Test func aResultMissingAShardExitsFourAndNamesIt() async throws {
        let cluster = try ClusterFixture(shards: 2)
        defer { cluster.stopAll(); cluster.removeData() }
        try cluster.startCoordinator()
        try cluster.startIndexer("indexer-0", shards: [0, 1])
        try cluster.startQueryWorker("query-0", shards: [0])
        let client = try LimelightClient(endpoint: cluster.clientEndpoint)
        defer { client.close() }
        let end = Date().addingTimeInterval(10)
        while (try? await client.ping())?.servedShards != [0], Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        let r = try Self.limelight(["query", #"title == "*""#, "--json", "--endpoint", cluster.clientEndpoint])
        #expect(r.status == 4)
        #expect(r.stderr.contains("shard 1"))
    }

    @Test func upPrintsReadyAndStopsItsChildrenOnSIGTERM() async throws {
        let data = NSTemporaryDirectory() + "limelight-up-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (p, parts) = try ClusterFixture.startUp([
            "up", "--data", data, "--listen", "tcp://127.0.0.1:0", "--stats-port", "0",
            "--shards", "4", "--no-require-keys",
        ])
        #expect(parts.count == 4 && parts[0] == "ready")
        #expect(parts.count == 4 && parts[2].hasPrefix("http://127.0.0.1:") && parts[2].hasSuffix("/stats"))
        // The fourth field is the base of Algolia's REST API, on the stats server.
        #expect(parts.count == 4 && parts[3] + "/stats" == parts[2])
        let client = try LimelightClient(endpoint: parts[1])
        let pong = try await client.ping()
        #expect(pong.servedShards == [0, 1, 2, 3])
        let stats = try await client.stats()
        // Two indexers and two query workers by default, shards split between them.
        #expect(stats["workers"]?.arrayValue?.count == 4)
        client.close()

        let children = Self.childPIDs(of: p.processIdentifier)
        #expect(children.count == 5)
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(children.allSatisfy { kill($0, 0) != 0 })  // every child is gone
    }

    /// Z85 has '-' in its alphabet: `up` must hand its workers a coordinator
    /// key that begins with one as `--curve-server-key=KEY`, or every worker
    /// exits 64 on a "missing value" (CI met it: about 1 key in 85).
    @Test func upWithACurveKeyBeginningWithADashBecomesReady() async throws {
        let data = NSTemporaryDirectory() + "limelight-up-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: data) }
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        var pair = try CurveKeyPair.generate()
        while !pair.publicKey.z85.hasPrefix("-") { pair = try CurveKeyPair.generate() }
        try CurveCertificate.write(pair, base: data + "/coordinator")
        let (p, parts) = try ClusterFixture.startUp([
            "up", "--data", data + "/cluster", "--listen", "tcp://127.0.0.1:0", "--stats-port", "0",
            "--shards", "1", "--indexers", "1", "--query-workers", "1",
            "--curve-secret-key", data + "/coordinator.key_secret", "--no-require-keys",
        ])
        defer { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() }
        try #require(parts.count == 4 && parts[0] == "ready", "limelight up never became ready: \(parts)")
        let client = try LimelightClient(endpoint: parts[1], curve: CurveClientKeys(serverKey: pair.publicKey, keyPair: try CurveKeyPair.generate()))
        defer { client.close() }
        #expect(try await client.ping().servedShards == [0])
    }

    static func childPIDs(of parent: Int32) -> [Int32] {
        let procs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return procs.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && Int32(fields[1]) == parent
        }
    }
}
