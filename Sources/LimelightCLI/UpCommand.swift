import ArgumentParser
import Foundation
import LimelightClient

/// `limelight up`: a whole cluster on one machine, as child processes.
///
/// One coordinator, `--indexers` indexers and `--query-workers` query workers,
/// shards split between them round-robin, all sharing one data folder (the
/// query workers read the indexers' SQLite files, WAL letting them run beside
/// the writer). Prints `ready ENDPOINT STATS-URL` once every shard is served,
/// and stops the children cleanly on SIGINT or SIGTERM.
struct UpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "up", abstract: "Run a whole cluster on this machine.")

    @Option(help: "Folder for shard files and logs.") var data = "limelight-data"
    @Option(help: "Client endpoint. Port 0 picks a free port.") var listen = "tcp://127.0.0.1:7700"
    @Option(help: "Worker endpoint (default: the client port + 1, or a free port when --listen uses 0).") var workersEndpoint: String?
    @Option(help: "HTTP port of the stats endpoint on 127.0.0.1 (0 picks a free port).") var statsPort = 7780
    @Option(help: "HOST:PORT of the coordinator's HTTP endpoint, instead of --stats-port (0.0.0.0:7780 in a container).")
    var statsListen: String?
    @Option(help: "Number of shards (fixed when the data folder is first used).") var shards = 8
    @Option(help: "Indexer processes.") var indexers = 2
    @Option(help: "Query worker processes.") var queryWorkers = 2
    @Option(help: "Seconds to wait for every shard to be served.") var readyTimeout = 60.0
    @Option(help: "Log level of the children.") var logLevel = "info"
    @Option(help: "Log format of the children: text, or json (one object per line).") var logFormat: LogFormat = .text

    func validate() throws {
        guard shards >= 1 else { throw ValidationError("--shards must be at least 1") }
        guard indexers >= 1, queryWorkers >= 1 else { throw ValidationError("--indexers and --query-workers must be at least 1") }
    }

    func run() async throws {
        let dataDir = URL(fileURLWithPath: data).standardizedFileURL.path
        let logs = (dataDir as NSString).appendingPathComponent("logs")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        try checkShardCount(dataDir)
        let bin = Self.binDirectory()
        let children = Children()

        let workers = workersEndpoint ?? Self.defaultWorkerEndpoint(listen)
        let coordinator = try children.spawn(name: "coordinator", executable: bin + "/limelight-coordinator", arguments: [
            "--listen", listen, "--workers", workers,
        ] + (statsListen.map { ["--stats-listen", $0] } ?? ["--stats-port", String(statsPort)]) + [
            "--shards", String(shards), "--log-level", logLevel, "--log-format", logFormat.rawValue,
        ], logs: logs, captureOutput: true)
        // The coordinator prints its bound endpoints first: "listening CLIENT WORKERS STATS".
        guard let line = coordinator.firstLine(timeout: 20), line.hasPrefix("listening ") else {
            children.stopAll()
            printError("limelight: the coordinator did not start; see \(logs)/coordinator.log")
            throw ExitCode(1)
        }
        let parts = line.split(separator: " ").map(String.init)
        let clientEndpoint = parts[1], workerEndpoint = parts[2], statsURL = parts.count > 3 ? parts[3] : "-"

        // Shards are dealt round-robin: worker i of a role serves the shards s with s % count == i.
        for (role, count) in [("indexer", indexers), ("query", queryWorkers)] {
            for i in 0..<count {
                let mine = (0..<shards).filter { $0 % count == i }
                guard !mine.isEmpty else { continue }
                _ = try children.spawn(name: "\(role)-\(i)", executable: bin + "/limelight-\(role)", arguments: [
                    "--coordinator", workerEndpoint, "--data", dataDir, "--shards", mine.map(String.init).joined(separator: ","),
                    "--id", "\(role)-\(i)", "--log-level", logLevel, "--log-format", logFormat.rawValue,
                ], logs: logs)
            }
        }

        let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) { children.requestStop() }
        defer { _ = signals }

        // Ready once every shard has a live indexer and query worker.
        let client = try LimelightClient(endpoint: Self.connectable(clientEndpoint))
        let deadline = Date().addingTimeInterval(readyTimeout)
        var ready = false
        while Date() < deadline, !children.stopRequested, children.firstExit == nil {
            if let pong = try? await client.ping(timeout: .milliseconds(500)), pong.servedShards.count == pong.shardCount {
                ready = true
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        client.close()
        guard ready else {
            let why = children.firstExit.map { "\($0) exited" } ?? "not every shard was served in time"
            printError("limelight: cluster did not become ready: \(why); logs in \(logs)")
            children.stopAll()
            throw ExitCode(1)
        }
        printLine("ready \(clientEndpoint) \(statsURL)")

        // Run until a signal, or until a child dies unexpectedly.
        while !children.stopRequested {
            if let dead = children.firstExit {
                printError("limelight: \(dead) exited; stopping the cluster (logs in \(logs))")
                children.stopAll()
                throw ExitCode(1)
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        children.stopAll()
    }

    /// A data folder keeps the shard count it was created with: shards are
    /// chosen by hash, so changing the count would lose track of items.
    func checkShardCount(_ dir: String) throws {
        let marker = (dir as NSString).appendingPathComponent("cluster.json")
        if let data = FileManager.default.contents(atPath: marker),
           let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let n = o["shards"] as? Int {
            guard n == shards else {
                printError("limelight: \(dir) was created with \(n) shards; run with --shards \(n) or use another --data folder")
                throw ExitCode(ExitCodes.badInput)
            }
        } else {
            try Data("{\"shards\": \(shards)}\n".utf8).write(to: URL(fileURLWithPath: marker))
        }
    }

    static func defaultWorkerEndpoint(_ listen: String) -> String {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]) else {
            return "tcp://127.0.0.1:7701"
        }
        let host = String(listen[..<colon])
        return port == 0 ? host + ":0" : host + ":\(port + 1)"
    }

    /// A bound wildcard address (`tcp://0.0.0.0:7700`) is reached through loopback.
    static func connectable(_ endpoint: String) -> String {
        endpoint.replacingOccurrences(of: "://0.0.0.0:", with: "://127.0.0.1:").replacingOccurrences(of: "://*:", with: "://127.0.0.1:")
    }

    /// The folder of this executable: the server executables are built beside it.
    static func binDirectory() -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (exe as NSString).deletingLastPathComponent
    }
}

/// The cluster's child processes.
final class Children: @unchecked Sendable {
    // All mutable state is guarded by `lock`.
    private let lock = NSLock()
    private var processes: [(String, Process)] = []
    private var _firstExit: String?
    private var _stopRequested = false
    private var stopping = false

    final class Child: @unchecked Sendable {
        // `lines` is guarded by `lock`; the pipe's handler appends to it.
        let process: Process
        let lock = NSLock()
        var buffer = Data()
        var lines: [String] = []
        init(process: Process) { self.process = process }

        func firstLine(timeout: Double) -> String? {
            let end = Date().addingTimeInterval(timeout)
            while Date() < end {
                lock.lock()
                let l = lines.first
                lock.unlock()
                if let l { return l }
                if !process.isRunning { return nil }
                usleep(20_000)
            }
            return nil
        }
    }

    func spawn(name: String, executable: String, arguments: [String], logs: String, captureOutput: Bool = false) throws -> Child {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let logPath = (logs as NSString).appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        p.standardError = log
        let child = Child(process: p)
        if captureOutput {
            let pipe = Pipe()
            p.standardOutput = pipe
            pipe.fileHandleForReading.readabilityHandler = { h in
                let d = h.availableData
                if d.isEmpty { h.readabilityHandler = nil; return }
                child.lock.lock()
                child.buffer.append(d)
                while let nl = child.buffer.firstIndex(of: 0x0A) {
                    child.lines.append(String(decoding: child.buffer[child.buffer.startIndex..<nl], as: UTF8.self))
                    child.buffer.removeSubrange(child.buffer.startIndex...nl)
                }
                child.lock.unlock()
            }
        } else {
            p.standardOutput = log
        }
        p.terminationHandler = { [weak self] proc in
            guard let self else { return }
            self.lock.lock()
            if !self.stopping && self._firstExit == nil { self._firstExit = "\(name) (status \(proc.terminationStatus))" }
            self.lock.unlock()
        }
        try p.run()
        lock.lock(); processes.append((name, p)); lock.unlock()
        return child
    }

    var firstExit: String? { lock.lock(); defer { lock.unlock() }; return _firstExit }
    var stopRequested: Bool { lock.lock(); defer { lock.unlock() }; return _stopRequested }
    func requestStop() { lock.lock(); _stopRequested = true; lock.unlock() }

    /// Workers first (so nothing is mid-write when the coordinator goes), then the coordinator.
    func stopAll() {
        lock.lock()
        stopping = true
        let all = processes
        lock.unlock()
        let workers = all.filter { $0.0 != "coordinator" }.map(\.1)
        let coordinator = all.filter { $0.0 == "coordinator" }.map(\.1)
        for group in [workers, coordinator] {
            for p in group where p.isRunning { kill(p.processIdentifier, SIGTERM) }
            let end = Date().addingTimeInterval(5)
            while Date() < end, group.contains(where: \.isRunning) { usleep(20_000) }
            for p in group where p.isRunning { kill(p.processIdentifier, SIGKILL) }
            for p in group { p.waitUntilExit() }
        }
    }
}
