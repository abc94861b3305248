import ArgumentParser
import ControlPlane
import Coordinator
import Embedder
import Foundation
import Logging
import ShardStore
import Tenancy
import WireProtocol
import Workers
import ZeroMQ

/// `limelight-coordinator`: the front door of a cluster.
package struct CoordinatorCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "limelight-coordinator",
        abstract: "Routes writes to indexers, scatters queries to query workers, merges their batches, serves stats.")

    @Option(help: "Client endpoint (ROUTER). Port 0 picks a free port.") var listen = "tcp://127.0.0.1:7700"
    @Option(help: "Worker endpoint (ROUTER) where indexers and query workers connect.") var workers = "tcp://127.0.0.1:7701"
    @Option(
        help: "HOST:PORT of the HTTP endpoint (status page, /stats, /metrics, /healthz, /readyz); port 0 picks a free port. Default 127.0.0.1:7780.")
    var statsListen: String?
    @Option(help: "HTTP port on 127.0.0.1 (or --stats-host): the same as --stats-listen 127.0.0.1:N.") var statsPort: Int?
    @Flag(help: "Serve no HTTP endpoint.") var noStats = false
    @Option(help: "Host for --stats-port.") var statsHost = "127.0.0.1"
    @Option(help: "Number of shards, fixed when the cluster is created.") var shards = 8
    @Option(help: "Milliseconds between worker heartbeats.") var heartbeatMs = 1000
    @Option(help: "Milliseconds of silence after which a worker is taken as dead.") var livenessMs = 3000
    @Option(help: "Default query deadline in milliseconds.") var deadlineMs = 30_000
    @Option(help: "Largest accepted message in bytes.") var maxFrameBytes = 32 * 1024 * 1024
    @Option(help: "Publish batches in flight at once; later ones wait (see --max-waiting-writes).") var maxPendingWrites = 256
    @Option(help: "Publish batches that may wait for room; past this a batch is answered busy.") var maxWaitingWrites = 256
    @Option(help: "Messages queued towards one peer beyond ZeroMQ's high-water mark; past this a peer that does not read loses new messages.")
    var peerOutboxLimit = 10_000
    @OptionGroup var model: ModelOptions
    @OptionGroup var security: CoordinatorSecurityOptions
    @Option(help: "Items of changes kept per shard to catch up a replica that was away; one further behind is copied from a fresh replica.")
    var catchUpLog = 20_000
    @Option(
        help:
            "After a start, milliseconds to wait for the indexer of a replica known from its query workers before numbering a shard's changes without it."
    )
    var replicaWaitMs = 10_000
    @Option(
        help:
            "Replicas every shard is meant to have: after a start, a shard's changes are numbered only once this many replicas' indexers reported it (or --replica-wait-ms ran out)."
    )
    var replicas = 1
    @Option(
        help:
            "Answer the shard queries of this data folder in the coordinator's own process (a query worker inside it: no message hops, for single-host clusters); its indexers must write there."
    )
    var localData: String?
    @Option(help: "With --local-data: the shards answered locally (0,1,2 or 0-3; default all).") var localShards: String?
    @Option(help: "With --local-data: the folder's replica name, as its indexer registers it (default HOST:DATA-FOLDER).") var localReplica: String?
    @Option(help: "With --local-data: shard queries run at once (default: the cores, at least 2).") var localConcurrency: Int?
    @Option(
        help:
            "Where the sockets' threads and ZeroMQ's I/O thread run, together: here (the CPU the process starts on), a CPU's number, or anywhere (see docs/operations.md)."
    )
    var socketCpu: ThreadPlacement = .here
    @Option(help: "API key store (a SQLite file, made mode 0600 if missing; see docs/security.md). Without it the cluster has no keys.")
    var keys: String?
    @Flag(help: "Refuse every request without a valid API key (ping excepted). Needs --keys.") var requireKeys = false
    @Option(help: "With --keys: a file holding a master key, made (mode 0600) with a new key when it does not name a live master key.")
    var masterKeyFile: String?
    @Option(
        help:
            "The control plane through which coordinators elect the active one: etcd://HOST:PORT[,HOST:PORT…] (etcd's HTTP gateway) or file:///PATH. Without it this coordinator is the cluster's only one and serves at once."
    ) var controlPlane: String?
    @Option(help: "With --control-plane: the cluster's name there (its keys' prefix).") var cluster = "default"
    @Option(help: "With --control-plane: this coordinator's name in the election (default coordinator-HOST-PID).") var coordinatorId: String?
    @Option(help: "With --control-plane: the active coordinator's lease in seconds (at least 2); a standby takes over about this long after a crash.")
    var leaseSeconds = 3
    @Option(
        help:
            "With an etcd control plane: an active coordinator that had live workers and has had none for this long steps down for a standby the workers can reach (milliseconds; 0: never)."
    )
    var stepDownWithoutWorkersMs = 6000
    @Option(
        help:
            "Milliseconds a replica may leave a write unanswered after another replica of its shard committed it; past that it is taken as lost (its writes in flight are resent without it, and it catches up when it registers again). 0: never."
    )
    var replicaLagMs = 10_000
    @Option(
        help:
            "Milliseconds a shard copy to a replica may go without a chunk sent or acknowledged before it is abandoned and started again."
    )
    var copyStallMs = 60_000
    @Option(help: "With --control-plane: the client endpoint a standby names when it answers not_active (default: the bound one).")
    var advertiseClients: String?
    @Option(help: "With --control-plane: the worker endpoint a standby names to workers (default: the bound one).") var advertiseWorkers: String?
    @OptionGroup var log: ServerLogOptions

    package init() {}

    package func validate() throws {
        guard shards >= 1, shards <= 4096 else { throw ValidationError("--shards must be between 1 and 4096") }
        guard livenessMs > heartbeatMs else { throw ValidationError("--liveness-ms must exceed --heartbeat-ms") }
        if statsListen != nil, statsPort != nil { throw ValidationError("give --stats-listen or --stats-port, not both") }
        _ = try httpAddress()
        if keys == nil, requireKeys || masterKeyFile != nil { throw ValidationError("--require-keys and --master-key-file need --keys FILE") }
        if localData == nil, localShards != nil || localReplica != nil || localConcurrency != nil {
            throw ValidationError("--local-shards, --local-replica and --local-concurrency need --local-data DIR")
        }
        _ = try localShardList()
    }

    /// The shards `--local-data` answers: `--local-shards`, else every one.
    func localShardList() throws -> [Int] {
        guard let localShards else { return Array(0..<shards) }
        guard let list = Sharding.parseList(localShards), !list.isEmpty, list.allSatisfy({ $0 >= 0 && $0 < shards }) else {
            throw ValidationError("--local-shards: '\(localShards)' is not a list of shards of 0-\(shards - 1) like 0,1,2 or 0-3")
        }
        return list
    }

    /// Where the HTTP endpoint binds: `--stats-listen`, else `--stats-host`:`--stats-port`, else 127.0.0.1:7780.
    func httpAddress() throws -> (host: String, port: Int) {
        if let statsListen { return try parseHostPort(statsListen, option: "--stats-listen") }
        return (statsHost, statsPort ?? 7780)
    }

    package func run() async throws {
        var c = CoordinatorConfiguration()
        c.listen = listen
        c.workers = workers
        c.socketPlacement = socketCpu
        let http = try httpAddress()
        c.statsPort = noStats ? nil : http.port
        c.statsHost = http.host
        c.shards = shards
        c.heartbeatMs = heartbeatMs
        c.livenessMs = livenessMs
        c.defaultDeadlineMs = deadlineMs
        c.maxFrameBytes = maxFrameBytes
        c.maxPendingWrites = max(1, maxPendingWrites)
        c.maxWaitingWrites = max(0, maxWaitingWrites)
        c.peerOutboxLimit = max(1, peerOutboxLimit)
        c.modelDirectory = try model.directory()
        c.clusterSecret = try security.clusterSecret()
        c.curve = try security.curve()
        c.catchUpLogItems = max(1, catchUpLog)
        c.replicaWaitMs = max(0, replicaWaitMs)
        c.replicas = max(1, replicas)
        c.keyStorePath = keys
        c.requireKeys = requireKeys
        c.controlPlane = controlPlane
        c.cluster = cluster
        c.coordinatorID = coordinatorId
        c.leaseSeconds = max(2, leaseSeconds)
        c.replicaLagMs = replicaLagMs
        c.copyStallMs = max(1, copyStallMs)
        // Coordinators on a file control plane share their host with the workers: no partition to step down from.
        if controlPlane?.hasPrefix("etcd://") == true { c.stepDownWithoutWorkersMs = stepDownWithoutWorkersMs }
        c.advertiseClients = advertiseClients
        c.advertiseWorkers = advertiseWorkers
        var store: KeyStore?
        if let keys {
            do {
                store = try KeyStore(path: keys)
                if let masterKeyFile { try store?.ensureKeyFile(masterKeyFile, app: nil, role: .master) }
            } catch {
                printError("limelight-coordinator: \(error)")
                throw ExitCode(1)
            }
        }
        let service = try CoordinatorService(configuration: c, logger: log.logger("limelight.coordinator"), keyStore: store)
        if let election = service.election {
            // The shard count is the cluster's, kept in the control plane: a
            // coordinator started with another must not serve.
            do {
                let map = try await election.ensureShardMap(shards: c.shards)
                // The new shards of a split under way may register at once.
                let split = try await election.store.get(ClusterKeys(cluster: c.cluster).shardSplit).flatMap { ShardSplit.decode($0.value) }
                await service.useShardMap(map, splitTo: split?.to)
            } catch {
                printError("limelight-coordinator: \(error)")
                service.shutdown()
                throw ExitCode(ExitCodes.badInput)
            }
        }
        var runner: ShardQueryRunner?
        if let localData {
            let shards = try localShardList()
            let id = "coordinator-local"
            var l = log.logger("limelight.coordinator.local")
            l[metadataKey: "worker"] = "\(id)"
            // A query worker's own defaults (threads, queue bound), so the two stay alike.
            let defaults = QueryWorkerConfiguration(data: localData, shards: shards, workerID: id)
            let r = ShardQueryRunner(
                data: localData, shards: shards, workerID: id,
                concurrency: localConcurrency ?? defaults.concurrency, maxQueued: defaults.maxQueued,
                logger: l, reply: { service.localReply($0, $1) }, replyNow: { service.localReplyLater($0, $1) },
                inline: { service.deferUntilClientsRead($0) })
            service.attach(
                LocalQueryWorker(
                    workerID: id, shards: shards, replica: localReplica ?? defaultReplicaName(data: localData),
                    take: { r.take($0) }))
            runner = r
        }
        defer { runner?.stop() }
        let failure = FailureBox()
        await runUntilSignalled {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await service.run() }
                do {
                    let url = try await service.statsURL()
                    // One line on standard output with the bound endpoints, for `limelight up` and scripts.
                    printLine("listening \(service.clientEndpoint) \(service.workerEndpoint) \(url ?? "-")")
                } catch {
                    failure.set("\(error)")
                    printError("limelight-coordinator: \(error)")
                    group.cancelAll()
                }
            }
        }
        if failure.value != nil { throw ExitCode(1) }
        if let reason = service.deposed {
            // Crash-only: a deposed coordinator holds in-flight state of an
            // epoch that is over; a new process campaigns afresh.
            printError("limelight-coordinator: deposed: \(reason)")
            throw ExitCode(3)
        }
    }
}

/// The flags every worker takes (docs/design.md: `--coordinator`, `--data`, `--shards`).
struct WorkerOptions: ParsableArguments {
    @Option(
        help:
            "The coordinator's worker endpoint; with standby coordinators, each one's, separated by commas (the worker moves to the active one)."
    ) var coordinator = "tcp://127.0.0.1:7701"
    @Option(help: "Folder of the shard files.") var data: String
    @Option(help: "Shards: 0,1,2 or 0-3.") var shards: String
    @Option(help: "Worker id (default: ROLE-HOST-PID).") var id: String?
    @OptionGroup var security: WorkerSecurityOptions
    @Option(
        help:
            "Name of the copy of the shard files this worker serves (default: HOST:DATA-FOLDER). An indexer and a query worker with the same name share files."
    )
    var replica: String?
    @Option(
        help:
            "Where the socket's thread and ZeroMQ's I/O thread run, together: here (the CPU the process starts on), a CPU's number, or anywhere (see docs/operations.md)."
    )
    var socketCpu: ThreadPlacement = .here

    func shardList() throws -> [Int] {
        guard let list = Sharding.parseList(shards) else { throw ValidationError("--shards: '\(shards)' is not a list like 0,1,2 or 0-3") }
        return list
    }
}

/// A worker the coordinator refused exits 2 with the coordinator's reason.
func exitIfRefused(_ refusal: String?) throws {
    guard let refusal else { return }
    printError("the coordinator refused this worker: \(refusal)")
    throw ExitCode(ExitCodes.badInput)
}

/// `limelight-indexer`: owns shards and applies writes.
package struct IndexerCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "limelight-indexer",
        abstract: "Owns shards (one SQLite file each), applies writes, acknowledges after the commit, purges expired items.")

    @OptionGroup var worker: WorkerOptions
    @Option(help: "Seconds between purges of expired items.") var purgeInterval = 60.0
    @Option(
        help:
            "What an acknowledged write survives: process (a crash of the process; WAL, synchronous=NORMAL) or power (a power cut too; synchronous=FULL, one fsync per batch)."
    )
    var durability: Durability = .process
    @OptionGroup var model: ModelOptions
    @OptionGroup var log: ServerLogOptions

    package init() {}

    package func run() async throws {
        var c = IndexerConfiguration(data: worker.data, shards: try worker.shardList(), workerID: worker.id)
        c.coordinator = worker.coordinator
        c.purgeIntervalSeconds = purgeInterval
        c.durability = durability
        c.modelDirectory = try model.directory()
        c.credentials = try worker.security.credentials()
        c.replica = worker.replica
        c.socketPlacement = worker.socketCpu
        let service = try IndexerService(configuration: c, logger: log.logger("limelight.indexer"))
        await runUntilSignalled { await service.run() }
        try exitIfRefused(service.refusal)
    }
}

/// `limelight-query`: evaluates queries on shards opened read-only.
package struct QueryWorkerCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "limelight-query",
        abstract: "Opens shards read-only, evaluates queries and streams result batches.")

    @OptionGroup var worker: WorkerOptions
    @Option(help: "Queries evaluated at once.") var concurrency = max(2, ProcessInfo.processInfo.activeProcessorCount)
    @Option(help: "Shard queries that may wait for a thread; past it a query's shard is answered busy (the coordinator tries another replica).")
    var maxQueued = 1000
    @Option(
        help:
            "Memory the process may hold for its shards (bytes, or with K, M, G): SQLite's page caches and maps of its connections, and the derived index structures outside their mapped files (past it, a shard's are dropped and it is answered from SQLite); when the process's resident memory passes it, the mapped files' pages are let go (they stay in the page cache). Default: a sixteenth of the machine's memory."
    )
    var memoryBudget: MemorySize?
    @OptionGroup var log: ServerLogOptions

    package init() {}

    package func run() async throws {
        // The budget covers SQLite's caches and maps of every connection (a
        // shard's queries at once, and one on the socket's thread) and the
        // posting indexes' heap (see ReaderMemory).
        let budget = (memoryBudget ?? MemorySize.defaultQueryBudget).bytes
        let shards = try worker.shardList()
        let connections = shards.count * (concurrency + 1)
        let reader = ReaderMemory(budget: budget, connections: connections)
        ShardStore.readerMemory = reader
        ShardStore.memoryBudget = reader.indexBudget(budget, connections: connections)
        var c = QueryWorkerConfiguration(data: worker.data, shards: shards, workerID: worker.id)
        c.coordinator = worker.coordinator
        c.concurrency = concurrency
        c.credentials = try worker.security.credentials()
        c.maxQueued = maxQueued
        c.memoryBudget = budget
        c.replica = worker.replica
        c.socketPlacement = worker.socketCpu
        let service = try QueryWorkerService(configuration: c, logger: log.logger("limelight.query"))
        await runUntilSignalled { await service.run() }
        try exitIfRefused(service.refusal)
    }
}

extension Durability: ExpressibleByArgument {}

extension ThreadPlacement: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

/// `--model DIR`: the all-MiniLM-L6-v2 folder for semantic search (the
/// coordinator embeds queries, indexers embed items). Optional: without it
/// (and without `LIMELIGHT_MODEL`) semantic searches are refused with a clear
/// error and everything else works. A folder that is named but lacks the
/// model's files stops the process at start-up, rather than at the first
/// semantic search.
struct ModelOptions: ParsableArguments {
    @Option(help: "Folder of the all-MiniLM-L6-v2 files for semantic search (default: $LIMELIGHT_MODEL; scripts/install-model prints it).")
    var model: String?

    func directory(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        guard let folder = try? Embedder.modelDirectory(explicit: model, environment: environment) else { return nil }
        for file in ["config.json", "vocab.txt", "model.safetensors"] {
            let path = (folder as NSString).appendingPathComponent(file)
            guard FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("--model: \(path) is missing (scripts/install-model prints the model folder)")
            }
        }
        return folder
    }
}

/// An amount of memory on the command line: bytes, or a number with K, M or
/// G (powers of 1,024), as `512M` or `2G`.
package struct MemorySize: ExpressibleByArgument, Sendable, CustomStringConvertible {
    package let bytes: Int

    package init(bytes: Int) { self.bytes = bytes }

    package init?(argument: String) {
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        let text = argument.uppercased().hasSuffix("B") ? String(argument.dropLast()) : argument
        if let unit = text.last.flatMap({ units[Character($0.uppercased())] }) {
            guard let n = Double(text.dropLast()), n >= 0, n * Double(unit) < Double(Int.max) else { return nil }
            bytes = Int(n * Double(unit))
        } else {
            guard let n = Int(text), n >= 0 else { return nil }
            bytes = n
        }
    }

    package var description: String { "\(bytes)" }

    /// A query worker's default: a sixteenth of the machine's memory.
    package static var defaultQueryBudget: MemorySize { MemorySize(bytes: Int(ProcessInfo.processInfo.physicalMemory / 16)) }
}
