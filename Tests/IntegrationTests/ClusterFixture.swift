import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

/// Real processes for integration tests: the executables built beside the
/// test bundle, started with port 0 and a temporary data folder.
final class ClusterFixture: @unchecked Sendable {
    // Processes are added during setup and only read afterwards, from the test's task.
    let data: String
    let shards: Int
    var processes: [String: Process] = [:]
    /// Processes sent SIGSTOP and not yet continued or ended: Foundation reports
    /// them as not running, yet they must still be signalled at the end.
    private var stopped: Set<String> = []
    var clientEndpoint = ""
    var workerEndpoint = ""
    var statsURL = ""
    /// The cluster secret every process of the fixture is given.
    var secretFile: String { data + "/cluster.secret" }

    static var binDirectory: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // Inside an .xctest bundle on some layouts, go up to the products folder.
        while !FileManager.default.fileExists(atPath: dir + "/limelight-coordinator"), dir != "/" {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }

    /// Starts `limelight` with `arguments` (`up …`), standard error discarded;
    /// returns it (the caller stops it) and the words of its first line:
    /// `ready ENDPOINT STATS-URL` once it serves, anything else when it failed.
    static func startUp(_ arguments: [String]) throws -> (process: Process, ready: [String]) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binDirectory + "/limelight")
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let line = ChildProcess.firstLine(out.fileHandleForReading, of: p) ?? ""
        return (p, line.split(separator: " ").map(String.init))
    }

    init(shards: Int) throws {
        self.shards = shards
        data = NSTemporaryDirectory() + "limelight-it-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
    }

    deinit { stopAll() }

    func logPath(_ name: String) -> String { "\(data)/\(name).log" }

    @discardableResult
    func start(_ name: String, _ executable: String, _ args: [String], captureFirstLine: Bool = false) throws -> String? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binDirectory + "/" + executable)
        p.arguments = args
        _ = FileManager.default.createFile(atPath: logPath(name), contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath(name)))
        log.seekToEndOfFile()
        p.standardError = log
        var line: String?
        if captureFirstLine {
            let pipe = Pipe()
            p.standardOutput = pipe
            try p.run()
            line = ChildProcess.firstLine(pipe.fileHandleForReading, of: p)
        } else {
            p.standardOutput = log
            try p.run()
        }
        processes[name] = p
        return line
    }

    /// `livenessMs`: silence after which the coordinator takes a worker for
    /// dead. Only a test that waits for a death needs it short: 1 s declared
    /// busy workers dead when the whole suite ran in parallel.
    func startCoordinator(extra: [String] = [], livenessMs: Int = 5000) throws {
        let line = try start(
            "coordinator", "limelight-coordinator",
            [
                "--listen", "tcp://127.0.0.1:0", "--workers", "tcp://127.0.0.1:0", "--stats-port", "0",
                "--shards", String(shards), "--heartbeat-ms", "200", "--liveness-ms", String(livenessMs), "--log-level", "debug",
                "--cluster-secret-file", secretFile,
            ] + extra, captureFirstLine: true)
        guard let line, line.hasPrefix("listening ") else {
            throw FixtureError("coordinator did not report its endpoints: \(line ?? "nothing")")
        }
        let parts = line.split(separator: " ").map(String.init)
        clientEndpoint = parts[1]
        workerEndpoint = parts[2]
        statsURL = parts[3]
    }

    func startIndexer(_ name: String, shards: [Int], data: String? = nil, extra: [String]? = nil) throws {
        try start(
            name, "limelight-indexer",
            [
                "--coordinator", workerEndpoint, "--data", data ?? self.data,
                "--shards", shards.map(String.init).joined(separator: ","), "--id", name,
                "--log-level", "debug",
            ] + (extra ?? ["--cluster-secret-file", secretFile]))
    }

    func startQueryWorker(_ name: String, shards: [Int], data: String? = nil, extra: [String]? = nil) throws {
        try start(
            name, "limelight-query",
            [
                "--coordinator", workerEndpoint, "--data", data ?? self.data,
                "--shards", shards.map(String.init).joined(separator: ","), "--id", name,
                "--log-level", "debug",
            ] + (extra ?? ["--cluster-secret-file", secretFile]))
    }

    /// A coordinator, one indexer and one query worker serving every shard.
    static func simple(shards: Int = 4) async throws -> (ClusterFixture, LimelightClient) {
        let f = try ClusterFixture(shards: shards)
        try f.startCoordinator()
        try f.startIndexer("indexer-0", shards: Array(0..<shards))
        try f.startQueryWorker("query-0", shards: Array(0..<shards))
        let client = try LimelightClient(endpoint: f.clientEndpoint)
        try await f.waitServed(client)
        return (f, client)
    }

    /// Waits until every shard has a live indexer and query worker.
    ///
    /// The deadline is checked only after a ping and then one last, longer
    /// ping is tried: when the whole suite runs in parallel on two cores,
    /// synchronous tests can hold the cooperative pool's threads for longer
    /// than the timeout, and this task then wakes after its deadline with a
    /// cluster that has long been ready (CI saw twelve tests fail so).
    func waitServed(_ client: LimelightClient, timeout: Double = 60) async throws {
        func served(_ wait: Duration) async -> Bool {
            guard let p = try? await client.ping(timeout: wait) else { return false }
            return p.servedShards.count == p.shardCount
        }
        let end = Date().addingTimeInterval(timeout)
        repeat {
            if await served(.milliseconds(500)) { return }
            try await Task.sleep(for: .milliseconds(50))
        } while Date() < end
        if await served(.seconds(5)) { return }
        throw FixtureError("cluster not ready; logs in \(data)")
    }

    func kill(_ name: String, signal: Int32 = SIGKILL) {
        // Not `isRunning`: Foundation reports a stopped (SIGSTOP) process as not running.
        guard let p = processes[name], p.isRunning || stopped.contains(name) else { return }
        Foundation.kill(p.processIdentifier, signal)
        switch signal {
        case SIGSTOP: stopped.insert(name)
        case SIGCONT: stopped.remove(name)
        case SIGKILL, SIGTERM:
            // A stopped or continued process is still running: only wait for ends.
            stopped.remove(name)
            p.waitUntilExit()
        default: break
        }
    }

    func stopAll() {
        // A stopped process looks "not running" to Foundation but must still be
        // continued and ended. One that has ended is not signalled: its pid may
        // already belong to another process (pid_max can be 32,768, and a test
        // run starts many thousands of threads and processes).
        for (name, p) in processes where p.isRunning || stopped.contains(name) {
            Foundation.kill(p.processIdentifier, SIGCONT)
            Foundation.kill(p.processIdentifier, SIGTERM)
        }
        let end = Date().addingTimeInterval(5)
        while Date() < end, processes.values.contains(where: \.isRunning) { usleep(20_000) }
        for (_, p) in processes where p.isRunning { Foundation.kill(p.processIdentifier, SIGKILL) }
        for (_, p) in processes { p.waitUntilExit() }
        processes.removeAll()
        stopped.removeAll()
    }

    func removeData() { try? FileManager.default.removeItem(atPath: data) }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Collects a query's batches and completion.
func collect(_ handle: QueryHandle) async throws -> (items: [JSONValue], batches: Int, completion: Body.Completion?) {
    var items: [JSONValue] = []
    var batches = 0
    var completion: Body.Completion?
    for try await e in handle.events {
        switch e {
        case .batch(let b): items += b; batches += 1
        case .completion(let c): completion = c
        }
    }
    return (items, batches, completion)
}

func spotlight(
    _ q: String, fetch: [String]? = nil, sort: [JSONValue]? = nil, limit: Int? = nil,
    batchSize: Int? = nil, deadlineMs: Int? = nil
) -> Body.QueryRequest {
    Body.QueryRequest(
        language: "spotlight", query: q, fetchAttributes: fetch, sort: sort, limit: limit,
        batchSize: batchSize, deadlineMs: deadlineMs)
}

func item(_ uid: String, domain: String, _ attrs: [String: JSONValue]) -> JSONValue {
    .object(["uniqueIdentifier": .string(uid), "domainIdentifier": .string(domain), "attributes": .object(attrs)])
}

func uids(_ items: [JSONValue]) -> [String] { items.compactMap { $0["uniqueIdentifier"]?.stringValue } }

extension Body.PublishAck {
    /// The first rejection's code and message, for an expectation's comment:
    /// a load-dependent failure in CI must say why the items were refused.
    var firstRejection: String {
        guard let r = results.first(where: { $0.status == .rejected }) else { return "none rejected" }
        return "item \(r.index) \(r.uniqueIdentifier ?? "?"): \(r.error?.code ?? "?"): \(r.error?.message ?? "")"
    }
}
