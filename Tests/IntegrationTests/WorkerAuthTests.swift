import ClusterAuth
import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol
import ZeroMQ

/// Issue 13, parts 3 and 4, on real processes: workers prove they belong to
/// the cluster, and CURVE keeps unknown clients and workers out.
@Suite(.serialized)
struct WorkerAuthTests {
    /// A worker made of nothing but a DEALER socket, as an attacker would write one.
    final class RogueWorker: @unchecked Sendable {
        let context: Context
        let socket: AsyncSocket
        // `inbox` is guarded by `lock`.
        let lock = NSLock()
        var inbox: [Envelope] = []
        var reader: Task<Void, Never>?

        init(endpoint: String, routingID: String, curve: CurveClientKeys? = nil) throws {
            context = try Context()
            socket = try AsyncSocket(context: context, type: .dealer, name: "rogue") { s in
                if let curve { try s.set(curve.socketOptions) }
                try s.set(.routingID(Array(routingID.utf8)))
                try s.connect(endpoint)
            }
            reader = Task { [socket, weak self] in
                for await frames in socket.messages {
                    guard let payload = frames.last, let e = try? Envelope.decode(payload) else { continue }
                    self?.lock.withLock { self?.inbox.append(e) }
                }
            }
        }

        /// Sends, and waits until ZeroMQ has taken the message, for at most
        /// `timeout` seconds.
        ///
        /// Never an unbounded `AsyncSocket.send`: a DEALER whose one
        /// connection failed its CURVE handshake has no peer left, and ZeroMQ
        /// then holds a send back for good. On a loaded CI machine the
        /// handshake failed before the first send and the test hung until
        /// CI's own limit. The bound is generous: with the integration
        /// suites' clusters all starting at once on two cores, a rogue's
        /// first message, to a coordinator it could reach, once waited
        /// over 5 s in CI.
        func send(_ id: String, _ body: Body, timeout: Double = 30) async throws {
            let taken = offer(id, body)
            let end = Date().addingTimeInterval(timeout)
            while Date() < end {
                switch taken.outcome {
                case .some(nil): return
                case .some(let error?): throw error
                case nil: try await Task.sleep(for: .milliseconds(10))
                }
            }
            throw FixtureError("ZeroMQ did not take \(id) within \(timeout) s: the socket has no peer")
        }

        /// Queues a message without waiting for ZeroMQ to take it; the
        /// result is set once it is taken (nil) or refused (the error).
        @discardableResult
        func offer(_ id: String, _ body: Body) -> Taken {
            let taken = Taken()
            if let refused = socket.submit([Envelope(id: id, body: body).encoded()], accepted: { taken.outcome = .some($0) }) {
                taken.outcome = .some(refused)
            }
            return taken
        }

        /// What became of an offered message: nil while ZeroMQ has not
        /// taken it, then `.some(nil)` (taken) or `.some(error)`.
        final class Taken: @unchecked Sendable {
            // `value` is guarded by `lock`.
            private let lock = NSLock()
            private var value: (any Error)??
            var outcome: (any Error)?? {
                get { lock.withLock { value } }
                set { lock.withLock { value = newValue } }
            }
        }

        var received: [Envelope] { lock.withLock { inbox } }

        /// The first received message of `type` (waiting up to `timeout`
        /// seconds: as generous as ``send(_:_:timeout:)``'s bound, since the
        /// coordinator answers as slowly as it accepts under CI's load).
        func next(_ type: MessageType, after count: Int = 0, timeout: Double = 30) async throws -> Envelope {
            let end = Date().addingTimeInterval(timeout)
            while Date() < end {
                if let e = received.dropFirst(count).first(where: { $0.type == type }) { return e }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw FixtureError("no \(type.rawValue) within \(timeout) s; got \(received.map(\.type.rawValue))")
        }

        func close() {
            reader?.cancel()
            socket.close()
            context.shutdown()
        }
    }

    static func liveWorkers(_ client: LimelightClient) async throws -> [String: Int] {
        let stats = try await client.stats()
        var out: [String: Int] = [:]
        for w in stats["workers"]?.arrayValue ?? [] {
            if let id = w["id"]?.stringValue { out[id] = Int(w["pid"]?.doubleValue ?? -1) }
        }
        return out
    }

    static func counter(_ client: LimelightClient, _ name: String) async throws -> Int {
        Int(try await client.stats()["counters"]?[name]?.doubleValue ?? 0)
    }

    @Test func aRogueWorkerIsRefusedAndCannotEvictALiveOne() async throws {
        let (f, client) = try await ClusterFixture.simple(shards: 2)
        defer { client.close(); f.stopAll(); f.removeData() }
        let realPid = Int(f.processes["indexer-0"]!.processIdentifier)
        #expect(try await Self.liveWorkers(client)["indexer-0"] == realPid)

        // Presents the live indexer's worker id as its routing id too, which
        // used to take over the indexer's connection (ROUTER handover).
        let rogue = try RogueWorker(endpoint: f.workerEndpoint, routingID: "indexer-0")
        defer { rogue.close() }
        let claim = Body.Register(role: .indexer, worker: "indexer-0", shards: [0, 1], host: "rogue", pid: 1)
        try await rogue.send("reg-indexer-0", .register(claim))
        let challenge = try await rogue.next(.challenge)
        guard case .challenge(let c) = challenge.body else { Issue.record("not a challenge"); return }
        #expect(c.nonce.count == 64)

        // A proof made with another secret is refused.
        let wrong = try ClusterSecret(text: "not the cluster's secret, but long enough")
        var forged = claim
        forged.proof = wrong.proof(nonce: c.nonce, worker: claim.worker, role: "indexer", shards: claim.shards)
        forged.nonce = c.nonce
        try await rogue.send("reg-indexer-0", .register(forged))
        let refusal = try await rogue.next(.error)
        guard case .error(let e) = refusal.body else { Issue.record("not an error"); return }
        #expect(e.code == "unauthorized")

        // The wrong proof spent the nonce: sent again, it is not judged, it only earns a new challenge.
        try await rogue.send("reg-indexer-0", .register(forged))
        let again = try await rogue.next(.challenge, after: 2)
        guard case .challenge(let c2) = again.body else { Issue.record("not a challenge"); return }
        #expect(c2.nonce != c.nonce)

        // The real indexer is still the one registered, and still gets the writes.
        #expect(try await Self.liveWorkers(client)["indexer-0"] == realPid)
        #expect(try await Self.counter(client, "workers.refused") >= 1)
        let items = (0..<6).map { item("auth-\($0)", domain: "org.auth.d\($0)", ["title": .string("Kept \($0)")]) }
        let ack = try await client.publish(items)
        #expect(ack.results.allSatisfy { $0.status == .stored })
        let found = try await collect(client.query(spotlight("title == \"Kept*\"")))
        #expect(Set(uids(found.items)) == Set(items.compactMap { $0["uniqueIdentifier"]?.stringValue }))
        #expect(!rogue.received.contains { $0.type == .write }, "the rogue received a write")

        // A real worker process with the wrong secret file exits, saying why,
        // and the live indexer stays.
        let badSecret = f.data + "/wrong.secret"
        try Data("another cluster's secret entirely\n".utf8).write(to: URL(fileURLWithPath: badSecret))
        try f.startIndexer("impostor", shards: [0, 1], extra: ["--cluster-secret-file", badSecret, "--id", "indexer-0"])
        let impostor = f.processes["impostor"]!
        let end = Date().addingTimeInterval(15)
        while impostor.isRunning, Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!impostor.isRunning && impostor.terminationStatus == 2)
        let log = (try? String(contentsOfFile: f.logPath("impostor"), encoding: .utf8)) ?? ""
        #expect(log.contains("refused this worker") && log.contains("cluster's secret"), "\(log.suffix(600))")
        #expect(try await Self.liveWorkers(client)["indexer-0"] == realPid)

        // With the cluster's own secret the same id may take over: that is a
        // restart. The old process is killed first, as in a restart (left
        // alive, it registers again when told it is unregistered, and the
        // two take the id from each other in turn: CI saw the old one hold it).
        // The coordinator still counts it live, so the new one takes over.
        f.kill("indexer-0")
        try f.startIndexer("restarted", shards: [0, 1], extra: ["--cluster-secret-file", f.secretFile, "--id", "indexer-0"])
        let newPid = Int(f.processes["restarted"]!.processIdentifier)
        let until = Date().addingTimeInterval(10)
        while try await Self.liveWorkers(client)["indexer-0"] != newPid, Date() < until { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try await Self.liveWorkers(client)["indexer-0"] == newPid)
    }

    @Test func registrationsThatCrossStillGetIn() async throws {
        // Six registrations before the first challenge is answered (a worker
        // told `unregistered` for each heartbeat while the coordinator was
        // slow): the answers to every challenge count or earn a new one, and
        // none is refused.
        let f = try ClusterFixture(shards: 1)
        defer { f.stopAll(); f.removeData() }
        try f.startCoordinator()
        let secret = try ClusterSecret.read(path: f.secretFile)
        let worker = try RogueWorker(endpoint: f.workerEndpoint, routingID: "member#1")
        defer { worker.close() }
        let claim = Body.Register(role: .query, worker: "member", shards: [0])
        for _ in 0..<6 { try await worker.send("reg-member", .register(claim)) }
        let end = Date().addingTimeInterval(3)
        var answered = 0
        // Answers each challenge as it comes, as a worker does, for 3 s.
        while Date() < end {
            let challenges = worker.received.compactMap { e -> String? in
                if case .challenge(let c) = e.body { return c.nonce } else { return nil }
            }
            for nonce in challenges.dropFirst(answered) {
                var r = claim
                r.nonce = nonce
                r.proof = secret.proof(nonce: nonce, worker: "member", role: "query", shards: [0])
                try await worker.send("reg-member", .register(r))
            }
            answered = challenges.count
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(worker.received.contains { $0.type == .registered })
        #expect(!worker.received.contains { $0.type == .error }, "\(worker.received.map(\.type.rawValue))")
    }

    @Test func aWorkerWithoutTheSecretIsRefusedWithAClearMessage() async throws {
        let f = try ClusterFixture(shards: 1)
        defer { f.stopAll(); f.removeData() }
        try f.startCoordinator()
        try f.startQueryWorker("query-lost", shards: [0], extra: ["--cluster-secret-file", f.data + "/missing.secret"])
        let p = f.processes["query-lost"]!
        let end = Date().addingTimeInterval(15)
        while p.isRunning, Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!p.isRunning && p.terminationStatus == 2)
        let log = (try? String(contentsOfFile: f.logPath("query-lost"), encoding: .utf8)) ?? ""
        #expect(log.contains("cannot read the cluster secret file \(f.data)/missing.secret"), "\(log.suffix(600))")
    }

    /// Runs `limelight keys curve NAME` and reads the pair back.
    static func makeKeys(_ base: String) throws -> CurveKeyPair {
        let run = try CommandLineTests.limelight(["keys", "curve", base])
        guard run.status == 0 else { throw FixtureError("keys curve failed: \(run.stderr)") }
        let pair = try CurveCertificate.readKeyPair(path: base + ".key_secret")
        #expect(run.stdout == "public-key = \"\(pair.publicKey.z85)\"\n")
        #expect(try CurveCertificate.read(path: base + ".key").publicKey == pair.publicKey)
        #expect(try CurveCertificate.read(path: base + ".key").secretKey == nil)
        let mode = (try FileManager.default.attributesOfItem(atPath: base + ".key_secret")[.posixPermissions] as? Int) ?? -1
        #expect(mode == 0o600)
        return pair
    }

    @Test func withCurveOnlyKnownKeysGetIn() async throws {
        let f = try ClusterFixture(shards: 2)
        defer { f.stopAll(); f.removeData() }
        let keys = f.data + "/keys"
        for folder in ["clients", "workers", "others"] {
            try FileManager.default.createDirectory(atPath: "\(keys)/\(folder)", withIntermediateDirectories: true)
        }
        let server = try Self.makeKeys("\(keys)/coordinator")
        let clientPair = try Self.makeKeys("\(keys)/clients/app")
        _ = try Self.makeKeys("\(keys)/workers/indexer")
        _ = try Self.makeKeys("\(keys)/workers/query")
        let strangerPair = try Self.makeKeys("\(keys)/others/stranger")
        // Existing files are never overwritten.
        #expect(try CommandLineTests.limelight(["keys", "curve", "\(keys)/clients/app"]).status == 2)

        try f.startCoordinator(extra: [
            "--curve-secret-key", "\(keys)/coordinator.key_secret",
            "--client-keys", "\(keys)/clients", "--worker-keys", "\(keys)/workers",
        ])
        let serverKey = ["--curve-server-key", "\(keys)/coordinator.key"]
        try f.startIndexer(
            "indexer-0", shards: [0, 1],
            extra: ["--cluster-secret-file", f.secretFile] + serverKey
                + ["--curve-secret-key", "\(keys)/workers/indexer.key_secret"])
        try f.startQueryWorker(
            "query-0", shards: [0, 1],
            extra: [
                "--cluster-secret-file", f.secretFile, "--curve-server-key=\(server.publicKey.z85)",
                "--curve-secret-key", "\(keys)/workers/query.key_secret",
            ])
        // A worker whose key is not on the list never gets in, even with the secret.
        try f.startIndexer(
            "indexer-stranger", shards: [0, 1],
            extra: ["--cluster-secret-file", f.secretFile] + serverKey
                + ["--curve-secret-key", "\(keys)/others/stranger.key_secret"])

        // A known client: publish and query end to end.
        let client = try LimelightClient(endpoint: f.clientEndpoint, curve: CurveClientKeys(serverKey: server.publicKey, keyPair: clientPair))
        defer { client.close() }
        try await f.waitServed(client)
        let items = (0..<4).map { item("curve-\($0)", domain: "org.curve.d\($0)", ["title": .string("Sealed \($0)")]) }
        let ack = try await client.publish(items)
        #expect(ack.results.allSatisfy { $0.status == .stored })
        let found = try await collect(client.query(spotlight("title == \"Sealed*\"")))
        #expect(Set(uids(found.items)) == ["curve-0", "curve-1", "curve-2", "curve-3"])

        // The command line with the client's key file works too.
        let ok = try CommandLineTests.limelight([
            "query", "title == \"Sealed*\"", "--json", "--endpoint", f.clientEndpoint,
            "--curve-server-key", "\(keys)/coordinator.key", "--curve-secret-key", "\(keys)/clients/app.key_secret",
        ])
        #expect(ok.status == 0 && ok.stdout.split(separator: "\n").count == 4, "\(ok.stderr)")

        // An unknown client key, and a client without CURVE, are refused.
        let stranger = try LimelightClient(endpoint: f.clientEndpoint, curve: CurveClientKeys(serverKey: server.publicKey, keyPair: strangerPair))
        defer { stranger.close() }
        await #expect(throws: (any Error).self) { _ = try await stranger.ping(timeout: .seconds(2)) }
        let plain = try LimelightClient(endpoint: f.clientEndpoint)
        defer { plain.close() }
        await #expect(throws: (any Error).self) { _ = try await plain.ping(timeout: .seconds(1)) }
        let refused = try CommandLineTests.limelight([
            "query", "title == \"Sealed*\"", "--endpoint", f.clientEndpoint, "--timeout", "2",
            "--curve-server-key=\(server.publicKey.z85)", "--curve-secret-key", "\(keys)/others/stranger.key_secret",
        ])
        #expect(refused.status == 3 && refused.stderr.contains("allows this client's key"), "\(refused.stderr)")
        #expect(try await Self.counter(client, "connections.refused.clients") >= 1)

        // The stranger worker: refused at the handshake, never registered.
        // Its process may not have tried yet on a busy machine: waited for.
        let deadline = ContinuousClock.now + .seconds(30)
        while try await Self.counter(client, "connections.refused.workers") < 1, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await Self.counter(client, "connections.refused.workers") >= 1)
        #expect(Set(try await Self.liveWorkers(client).keys) == ["indexer-0", "query-0"])

        // A raw DEALER with an unknown key cannot even say register. Whether
        // ZeroMQ takes the message (queued before the handshake failed, then
        // dropped) or never does (no peer left), nothing comes back.
        let rogue = try RogueWorker(
            endpoint: f.workerEndpoint, routingID: "rogue",
            curve: CurveClientKeys(serverKey: server.publicKey, keyPair: try CurveKeyPair.generate()))
        defer { rogue.close() }
        rogue.offer("reg-rogue", .register(Body.Register(role: .query, worker: "query-0", shards: [0])))
        try await Task.sleep(for: .seconds(1))
        #expect(rogue.received.isEmpty)
        #expect(Set(try await Self.liveWorkers(client).keys) == ["indexer-0", "query-0"])
    }
}
