import ArgumentParser
import ClusterAuth
import ControlPlane
import Foundation
import LimelightClient
import ShardStore
import Tenancy
import ZeroMQ

/// `limelight up`: a whole cluster on one machine, as child processes.
///
/// One coordinator, `--indexers` indexers and `--query-workers` query workers,
/// shards split between them round-robin, all sharing one data folder (the
/// query workers read the indexers' SQLite files, WAL letting them run beside
/// the writer). Prints `ready ENDPOINT STATS-URL REST-URL` once every shard is
/// served (REST-URL: the base of Algolia's REST API, `/1/indexes/…` below it,
/// on the same HTTP server as the stats),
/// and stops the children cleanly on SIGINT or SIGTERM.
///
/// A child that dies is restarted (see ``Supervisor``): a crashed indexer
/// costs its shards' writes for the second or two it takes to come back, not
/// the cluster. A restarted coordinator binds the ports the first one bound,
/// so clients and workers reconnect to it. A child that fails
/// `--restart-limit` times within `--restart-window` seconds stops the
/// cluster with exit status 1.
struct UpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "up", abstract: "Run a whole cluster on this machine.")

    @Option(help: "Folder for shard files and logs.") var data = "limelight-data"
    @Option(help: "Client endpoint. Port 0 picks a free port.") var listen = "tcp://127.0.0.1:7700"
    @Option(
        help:
            "Worker endpoint (default: 127.0.0.1 and the client port + 1, or a free port when --listen uses 0). Only workers of this machine reach the default; give an address to let other hosts' workers in."
    )
    var workersEndpoint: String?
    @Option(
        help:
            "The coordinator's CURVE key pair (NAME.key_secret from `limelight keys curve`): encrypts the client and worker sockets; clients need its package key."
    )
    var curveSecretKey: String?
    @Option(help: "HTTP port of the stats endpoint on 127.0.0.1 (0 picks a free port).") var statsPort = 7780
    @Option(help: "HOST:PORT of the coordinator's HTTP endpoint, instead of --stats-port (0.0.0.0:7780 in a container).")
    var statsListen: String?
    @Option(help: "Number of shards (fixed when the data folder is first used).") var shards = 8
    @Option(help: "Indexer processes.") var indexers = 2
    @Option(help: "Query worker processes.") var queryWorkers = 2
    @Option(
        help:
            "Copies of every shard, each with its own indexers and query workers (--indexers and --query-workers per copy) and its own folder (the first in --data, the others in --data/replica-N). A write is acknowledged once every live copy has it; a copy that comes back is caught up before it serves queries."
    )
    var replicas = 1
    @Option(
        help:
            "Milliseconds a copy may leave a write unanswered after another copy committed it before it is taken as lost (see limelight-coordinator --replica-lag-ms)."
    )
    var replicaLagMs = 10_000
    @Flag(
        help:
            "The coordinator answers the first copy's shard queries itself (a query worker inside its process: no message hops between them, the fastest on one host); no limelight-query processes are started for that copy."
    )
    var localQueries = false
    @Option(
        help:
            "Memory each query worker may hold for its shards: SQLite's caches and maps, and the derived index structures outside their mapped files (bytes, or with K, M, G; see limelight-query --memory-budget). Default: a sixteenth of the machine's memory."
    )
    var memoryBudget: MemorySize?
    @Option(help: "Seconds to wait for every shard to be served.") var readyTimeout = 60.0
    @Option(help: "Log level of the children.") var logLevel = "info"
    @Option(help: "Log format of the children: text, or json (one object per line).") var logFormat: LogFormat = .text
    @Option(help: "What an acknowledged write survives: process (WAL, synchronous=NORMAL) or power (synchronous=FULL). Passed to every indexer.")
    var durability: Durability = .process
    @Option(help: "Failures of one child within --restart-window after which the cluster stops instead of restarting it.")
    var restartLimit = 5
    @Option(help: "Seconds over which --restart-limit counts a child's failures.") var restartWindow = 60.0
    @OptionGroup var model: ModelOptions
    @Option(
        help:
            "Where every process's socket threads and ZeroMQ's I/O thread run: here (the CPU limelight up starts on, the same for every process, so that a request's hops between them stay on one CPU), a CPU's number, or anywhere (default: here, or $LIMELIGHT_SOCKET_CPU, which the children read)."
    )
    var socketCpu: ThreadPlacement?
    /// On by default: a cluster someone can reach must not serve every
    /// app's items to anyone, and `up` writes the keys where the command
    /// line finds them (DATA/limelight.key, DATA/master.key), so a new user
    /// copies nothing. `--no-require-keys` serves keyless requests unscoped,
    /// seeing every app's items (tests of other features, trusted loopback use).
    @Flag(
        inversion: .prefixedNo,
        help:
            "Refuse requests without an API key (the CLI finds DATA/limelight.key itself when $LIMELIGHT_DATA or ./limelight-data names the data folder; see docs/security.md). --no-require-keys serves keyless requests unscoped."
    )
    var requireKeys = true

    func validate() throws {
        guard shards >= 1 else { throw ValidationError("--shards must be at least 1") }
        guard replicas >= 1 else { throw ValidationError("--replicas must be at least 1") }
        guard indexers >= 1, queryWorkers >= 1 else { throw ValidationError("--indexers and --query-workers must be at least 1") }
        guard restartLimit >= 1 else { throw ValidationError("--restart-limit must be at least 1") }
        guard restartWindow > 0 else { throw ValidationError("--restart-window must be more than 0 seconds") }
        _ = try model.directory()
    }

    /// The children's `--socket-cpu`: one CPU for every process (`here`
    /// resolved once, in this process, so that they do not each take the
    /// CPU they happen to start on), or none when the environment names one
    /// (the children read `LIMELIGHT_SOCKET_CPU` themselves).
    static func socketArguments(option: ThreadPlacement?, environment: [String: String], currentCPU: Int?) -> [String] {
        if option == nil, environment["LIMELIGHT_SOCKET_CPU"] != nil { return [] }
        switch option ?? .here {
        case .here: return currentCPU.map { ["--socket-cpu", String($0)] } ?? ["--socket-cpu", "here"]
        case let placement: return ["--socket-cpu", placement.description]
        }
    }

    func run() async throws {
        let dataDir = URL(fileURLWithPath: data).standardizedFileURL.path
        let logs = (dataDir as NSString).appendingPathComponent("logs")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        try checkShardCount(dataDir)
        let keyStore = try makeKeys(dataDir)
        let bin = Self.binDirectory()
        // The children's cluster secret: made once, kept in the data folder (0600).
        let secretFile = (dataDir as NSString).appendingPathComponent("cluster.secret")
        do { _ = try ClusterSecret.readOrCreate(path: secretFile) } catch {
            printError("limelight: \(error)")
            throw ExitCode(1)
        }
        var security = ["--cluster-secret-file", secretFile]
        var workerSecurity = security
        var clientCurve: CurveClientKeys?
        if let curveSecretKey {
            do {
                let pair = try CurveCertificate.readKeyPair(path: curveSecretKey)
                security += ["--curve-secret-key", curveSecretKey]
                // Joined with `=`: Z85 has '-' in its alphabet, and a key that
                // begins with one would otherwise read as a flag (1 key in 85).
                workerSecurity += ["--curve-server-key=\(pair.publicKey.z85)"]
                clientCurve = CurveClientKeys(serverKey: pair.publicKey, keyPair: try CurveKeyPair.generate())
            } catch {
                printError("limelight: --curve-secret-key: \(error)")
                throw ExitCode(ExitCodes.badInput)
            }
        }
        let children = Supervisor(restartLimit: restartLimit, restartWindow: restartWindow)

        let placement = Self.socketArguments(
            option: socketCpu, environment: ProcessInfo.processInfo.environment,
            currentCPU: ThreadPlacement.currentCPU())
        let workers = workersEndpoint ?? Self.defaultWorkerEndpoint(listen)
        let statsArguments = statsListen.map { ["--stats-listen", $0] } ?? ["--stats-port", String(statsPort)]
        func coordinatorArguments(listen: String, workers: String, stats: [String]) -> [String] {
            ["--listen", listen, "--workers", workers] + stats + [
                "--shards", String(shards), "--log-level", logLevel, "--log-format", logFormat.rawValue,
                "--keys", keyStore, "--replicas", String(replicas), "--replica-lag-ms", String(replicaLagMs),
                // The control plane of one host: a file in the data folder. A
                // restarted coordinator takes over at once from its ended
                // predecessor (same host, pid gone), so the lease only has to
                // outlast a loaded machine's pauses.
                "--control-plane", "file://\(dataDir)/control-plane.json", "--lease-seconds", "10",
            ] + (localQueries ? ["--local-data", dataDir] : []) + modelArguments + security + (requireKeys ? ["--require-keys"] : []) + placement
        }
        let coordinator = try children.spawn(
            Supervisor.Spec(
                name: "coordinator", executable: bin + "/limelight-coordinator",
                arguments: coordinatorArguments(listen: listen, workers: workers, stats: statsArguments), logs: logs), captureOutput: true)
        // The coordinator prints its bound endpoints first: "listening CLIENT WORKERS STATS".
        guard let line = coordinator.firstLine(timeout: 20), line.hasPrefix("listening ") else {
            children.stopAll()
            printError("limelight: the coordinator did not start; see \(logs)/coordinator.log")
            throw ExitCode(1)
        }
        let parts = line.split(separator: " ").map(String.init)
        let clientEndpoint = parts[1], workerEndpoint = parts[2], statsURL = parts.count > 3 ? parts[3] : "-"
        // A restarted coordinator binds what this one bound (port 0 resolved).
        var boundStats = statsArguments
        if statsListen == nil, let port = URL(string: statsURL)?.port { boundStats = ["--stats-port", String(port)] }
        children.setArguments(coordinatorArguments(listen: clientEndpoint, workers: workerEndpoint, stats: boundStats), of: "coordinator")

        // Each worker's folder and shards: a replica retired from all of
        // them (limelight shards retire) has its workers stopped for good.
        var folderOf: [String: (folder: String, shards: [Int])] = [:]
        func spawnWorker(_ role: String, name: String, folder: String, shards mine: [Int]) throws {
            folderOf[name] = (folder, mine)
            try children.spawn(
                Supervisor.Spec(
                    name: name, executable: bin + "/limelight-\(role)",
                    arguments: [
                        "--coordinator", workerEndpoint, "--data", folder, "--shards", mine.map(String.init).joined(separator: ","),
                        "--id", name, "--log-level", logLevel, "--log-format", logFormat.rawValue,
                    ] + workerSecurity + placement + (role == "indexer" ? indexerArguments : [])
                        + (role == "query" ? memoryBudget.map { ["--memory-budget", $0.description] } ?? [] : []), logs: logs))
        }
        // The shard count in force: the control plane's map, which splits
        // (`limelight shards split`) make larger than --shards.
        let controlPlane = FileControlPlane(path: "\(dataDir)/control-plane.json")
        let current = await Self.shardCount(controlPlane) ?? shards
        let retiredAtStart = await Self.retiredReplicas(controlPlane)
        func isRetired(_ folder: String, _ mine: [Int]) -> Bool {
            mine.allSatisfy { retiredAtStart.isRetired(replicaName(folder: folder), shard: $0) }
        }
        // Shards are dealt round-robin: worker i of a role serves the shards s
        // with s % count == i; each replica has its own set, on its own files.
        for replica in 0..<replicas {
            let folder = Self.replicaFolder(dataDir, replica)
            if isRetired(folder, Array(0..<current)) { continue }
            let prefix = replica == 0 ? "" : "replica\(replica)-"
            for (role, count) in [("indexer", indexers), ("query", queryWorkers)] {
                if role == "query", replica == 0, localQueries { continue }
                for i in 0..<count {
                    let mine = (0..<current).filter { $0 % count == i }
                    guard !mine.isEmpty else { continue }
                    try spawnWorker(role, name: "\(prefix)\(role)-\(i)", folder: folder, shards: mine)
                }
            }
        }
        // A split's new shards get an indexer and a query worker of their
        // own in each replica, started as soon as the split is recorded.
        var served = current
        func startSplitWorkers() async throws {
            guard let to = await Self.splitTarget(controlPlane), to > served else { return }
            for j in served..<to {
                for replica in 0..<replicas {
                    let prefix = replica == 0 ? "" : "replica\(replica)-"
                    for role in ["indexer", "query"] {
                        try spawnWorker(role, name: "\(prefix)\(role)-s\(j)", folder: Self.replicaFolder(dataDir, replica), shards: [j])
                    }
                }
            }
            printError("limelight: splitting to \(to) shards: started the workers of shards \(served)-\(to - 1)")
            served = to
        }
        try await startSplitWorkers()
        // Replicas added by `limelight shards add-replica --data` / `move
        // --to-data`: an indexer and a query worker each, on their folder,
        // started when the change is recorded and again at every start
        // (DATA/added-replicas.json keeps them).
        let addedFile = (dataDir as NSString).appendingPathComponent("added-replicas.json")
        var added = AddedReplicas.read(addedFile)
        func startAddedReplica(_ r: AddedReplicas.Replica) throws {
            let prefix =
                "added-" + (r.folder as NSString).lastPathComponent.map { $0.isLetter || $0.isNumber ? $0 : "-" }.reduce("") { $0 + String($1) }
            guard folderOf["\(prefix)-indexer"] == nil else { return }
            for role in ["indexer", "query"] { try spawnWorker(role, name: "\(prefix)-\(role)", folder: r.folder, shards: r.shards) }
        }
        for r in added.replicas where !isRetired(r.folder, r.shards) { try startAddedReplica(r) }
        // Started as soon as the change is recorded: the coordinator keeps
        // queries off a replica it does not know until it has read the
        // control plane, and off an added one until it is in sync.
        func followReplicaChanges() async throws {
            let change = await Self.replicaChange(controlPlane)
            if let change, change.phase == .adding, let folder = change.folder,
                !added.replicas.contains(where: { $0.folder == folder })
            {
                let r = AddedReplicas.Replica(folder: folder, shards: change.shards)
                added.replicas.append(r)
                added.write(addedFile)
                try startAddedReplica(r)
                printError("limelight: \(change.summary): started its indexer and query worker on \(folder)")
            }
            let retired = await Self.retiredReplicas(controlPlane)
            // A retired replica being added again is not stopped.
            func isRetired(_ folder: String, _ shards: [Int]) -> Bool {
                let name = replicaName(folder: folder)
                return change?.add != name && shards.allSatisfy { retired.isRetired(name, shard: $0) }
            }
            for (name, w) in folderOf where isRetired(w.folder, w.shards) {
                folderOf.removeValue(forKey: name)
                children.retire(name)
                printError("limelight: stopped \(name): its replica \(w.folder) was retired")
            }
            // A retired added replica is forgotten: added again, it is started again.
            if added.replicas.contains(where: { isRetired($0.folder, $0.shards) }) {
                added.replicas.removeAll { isRetired($0.folder, $0.shards) }
                added.write(addedFile)
            }
        }

        let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) { children.requestStop() }
        defer { _ = signals }

        // Ready once every shard has a live indexer and query worker; a child
        // that dies meanwhile is restarted like any other.
        let client = try LimelightClient(endpoint: Self.connectable(clientEndpoint), curve: clientCurve)
        let deadline = Date().addingTimeInterval(readyTimeout)
        var ready = false
        var gaveUp: String?
        while Date() < deadline, !children.stopRequested, gaveUp == nil {
            gaveUp = supervise(children, logs: logs)
            if let pong = try? await client.ping(timeout: .milliseconds(500)), pong.servedShards.count == pong.shardCount {
                ready = true
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        client.close()
        guard ready else {
            let why = gaveUp ?? "not every shard was served in time"
            printError("limelight: cluster did not become ready: \(why); logs in \(logs)")
            children.stopAll()
            throw ExitCode(1)
        }
        // Algolia's REST API answers on the stats server, below /1 (docs/algolia.md).
        let restURL = statsURL.hasSuffix("/stats") ? String(statsURL.dropLast("/stats".count)) : "-"
        printLine("ready \(clientEndpoint) \(statsURL) \(restURL)")

        // Run until a signal, restarting children that die, or until one keeps
        // failing; start the workers a split needs.
        var ticks = 0
        while !children.stopRequested {
            if let why = supervise(children, logs: logs) {
                printError("limelight: \(why); stopping the cluster (logs in \(logs))")
                children.stopAll()
                throw ExitCode(1)
            }
            ticks += 1
            if ticks % 3 == 0 {
                try await startSplitWorkers()
                try await followReplicaChanges()
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        children.stopAll()
    }

    /// The cluster's key store, with a master key in `DATA/master.key` and an
    /// admin key of the app `default` in `DATA/limelight.key` (both mode 0600,
    /// made once and kept), where the command line looks for them: the user
    /// of `limelight up` never copies a key. Returns the store's path.
    func makeKeys(_ dataDir: String) throws -> String {
        let path = (dataDir as NSString).appendingPathComponent("keys.sqlite")
        do {
            let store = try KeyStore(path: path)
            try store.ensureKeyFile((dataDir as NSString).appendingPathComponent("master.key"), app: nil, role: .master)
            try store.ensureKeyFile((dataDir as NSString).appendingPathComponent("limelight.key"), app: "default", role: .admin)
        } catch {
            printError("limelight: \(error)")
            throw ExitCode(1)
        }
        return path
    }

    /// Arguments only the indexers take.
    var indexerArguments: [String] { ["--durability", durability.rawValue] + modelArguments }
    /// `--model`, for the coordinator (query texts) and the indexers (items); the
    /// children also inherit `LIMELIGHT_MODEL` from the environment.
    var modelArguments: [String] { model.model.map { ["--model", $0] } ?? [] }

    /// Reports the children that died and schedules their restarts; returns
    /// why the cluster must stop when one failed too often.
    func supervise(_ children: Supervisor, logs: String) -> String? {
        for exit in children.takeExits() {
            guard let delay = children.schedule(exit) else {
                return "\(exit.name) \(exit) and has failed \(children.restartLimit) times within \(Int(children.restartWindow)) s"
            }
            printError(
                "limelight: \(exit.name) (pid \(exit.pid)) \(exit); restarting it in \(delay) s "
                    + "(failure \(children.recentFailures(of: exit.name)) of \(children.restartLimit) within \(Int(children.restartWindow)) s; log \(logs)/\(exit.name).log)"
            )
        }
        return children.restartDue()
    }

    /// A data folder keeps the shard count it was created with: shards are
    /// chosen by hash, so changing the count would lose track of items.
    func checkShardCount(_ dir: String) throws {
        let marker = (dir as NSString).appendingPathComponent("cluster.json")
        if let data = FileManager.default.contents(atPath: marker),
            let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let n = o["shards"] as? Int
        {
            guard n == shards else {
                printError("limelight: \(dir) was created with \(n) shards; run with --shards \(n) or use another --data folder")
                throw ExitCode(ExitCodes.badInput)
            }
        } else {
            try Data("{\"shards\": \(shards)}\n".utf8).write(to: URL(fileURLWithPath: marker))
        }
    }

    /// The shard count of the map in the data folder's control plane; nil
    /// before the coordinator first made it.
    static func shardCount(_ store: FileControlPlane) async -> Int? {
        guard let kv = try? await store.get(ClusterKeys().shardMap) else { return nil }
        return ShardMap.decode(kv.value)?.shards
    }

    /// The shard count a split under way leads to, if one is.
    static func splitTarget(_ store: FileControlPlane) async -> Int? {
        guard let kv = try? await store.get(ClusterKeys().shardSplit) else { return nil }
        return ShardSplit.decode(kv.value)?.to
    }

    /// The replica change under way, if any.
    static func replicaChange(_ store: FileControlPlane) async -> ReplicaChange? {
        guard let kv = try? await store.get(ClusterKeys().replicaChange) else { return nil }
        return ReplicaChange.decode(kv.value)
    }

    /// The replicas retired from shards.
    static func retiredReplicas(_ store: FileControlPlane) async -> RetiredReplicas {
        guard let kv = try? await store.get(ClusterKeys().retiredReplicas) else { return RetiredReplicas() }
        return RetiredReplicas.decode(kv.value) ?? RetiredReplicas()
    }

    /// Replica 0 keeps its shard files in the data folder itself (as a
    /// cluster without replicas does); replica N in `replica-N` inside it.
    static func replicaFolder(_ dataDir: String, _ replica: Int) -> String {
        replica == 0 ? dataDir : (dataDir as NSString).appendingPathComponent("replica-\(replica)")
    }

    /// Loopback, whatever `--listen` says: `up`'s workers all run here, and a
    /// worker socket open to the network is a door for rogue workers
    /// (docs/security-transport.md). `--workers-endpoint` opens it on purpose.
    static func defaultWorkerEndpoint(_ listen: String) -> String {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]) else {
            return "tcp://127.0.0.1:7701"
        }
        return port == 0 ? "tcp://127.0.0.1:0" : "tcp://127.0.0.1:\(port + 1)"
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

/// The replicas `limelight up` started for `limelight shards add-replica
/// --data` (or `move --to-data`), kept in the data folder so that a restarted
/// `up` starts them again (a retired one is skipped).
struct AddedReplicas: Codable {
    struct Replica: Codable {
        var folder: String
        var shards: [Int]
    }
    var replicas: [Replica] = []

    static func read(_ path: String) -> AddedReplicas {
        FileManager.default.contents(atPath: path).flatMap { try? JSONDecoder().decode(Self.self, from: $0) } ?? AddedReplicas()
    }

    func write(_ path: String) {
        guard let data = try? JSONEncoder().encode(self) else { return }
        try? data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
