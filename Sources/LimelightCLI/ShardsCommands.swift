import ArgumentParser
import ControlPlane
import Foundation
import LimelightClient

/// `limelight shards`: the cluster's shards and their replicas
/// (docs/operations.md, "Shards and replicas").
struct ShardsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shards", abstract: "Show the cluster's shards: their slots, replicas and each replica's state.",
        subcommands: [
            ShardsStatusCommand.self, ShardsSplitCommand.self, ShardsAddReplicaCommand.self, ShardsRetireCommand.self, ShardsMoveCommand.self,
        ])
}

/// `status`: a line per shard, from the coordinator's stats (an admin or
/// master key reads them; without `--key` the data folder's master key of
/// `limelight up` is used when it is there).
struct ShardsStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "A line per shard: its number, slots, replicas and their state (--json: a JSON object per line).")
    @OptionGroup var endpoint: EndpointOptions
    @Flag(
        help:
            "A JSON object per line: shard, slots, inSyncSet (the control plane's in-sync replicas, null: none), replicas [{replica, state, sequence, live, inSyncSet}], queryWorkers."
    ) var json = false
    @Option(
        help:
            "Read each shard's in-sync set from this control plane (etcd://HOST:PORT[,…] or file:///PATH) rather than as the active coordinator last wrote it."
    )
    var controlPlane: String?
    @Option(help: "The cluster's name in the control plane.") var cluster = "default"

    func run() async throws {
        let client = try await connectForKeys(endpoint)
        defer { client.close() }
        let stats: JSONValue
        do { stats = try await client.stats() } catch let e as ClientError { throw failure(e, "shards status") }
        var rows = ShardStatus.rows(stats: stats)
        if let controlPlane {
            let store: any ControlPlaneStore
            do { store = try openControlPlane(controlPlane) } catch {
                printError("limelight shards status: \(error)")
                throw ExitCode(ExitCodes.badInput)
            }
            let keys = ClusterKeys(cluster: cluster)
            for i in rows.indices {
                let key = keys.inSync(shard: rows[i].shard)
                let kv = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.get(key) }
                rows[i].inSync = kv.flatMap { InSyncSet.decode($0.value) }?.replicas
            }
        }
        for row in rows { printLine(json ? row.json.serializedString() : row.text) }
    }
}

/// What `limelight shards status` shows of a shard, read from the stats.
struct ShardStatus: Equatable {
    struct Replica: Equatable {
        var name: String
        var state: State
        var sequence: Int
        var live: Bool
    }

    /// A replica's state, as an operator names it.
    enum State: String, Equatable {
        /// It has every change of the shard that a replica committed.
        case inSync = "in sync"
        /// A whole-shard copy is being installed on it.
        case copying
        /// It is being sent the changes it missed, from the log.
        case catchingUp = "catching up"
        /// It is further behind than the log reaches: it waits for a copy.
        case detached
        /// It is behind, and nothing is on its way to it yet (the next sweep sends it).
        case behind
        /// Its indexer is not connected.
        case away
        /// It is being retired: no write or query is sent to it.
        case retiring
    }

    var shard: Int
    /// The slots the shard owns (nil: the cluster has no shard map, and
    /// shards by `hash mod N`).
    var slots: Int?
    var replicas: [Replica]
    var queryWorkers: Int
    /// The shard's in-sync set in the control plane: the replicas that hold
    /// every acknowledged change (nil: the cluster keeps none, or has none yet).
    var inSync: [String]?

    /// One per shard of the stats' `shards`, with the replicas of its `replication` entry.
    static func rows(stats: JSONValue) -> [ShardStatus] {
        let map = stats["shardMap"]
        let perShard: Int? = map.flatMap { m in
            guard let slots = m["slots"]?.intValue, let shards = m["shards"]?.intValue, shards > 0 else { return nil }
            return slots / shards
        }
        let replication = Dictionary(
            (stats["replication"]?["shards"]?.arrayValue ?? []).compactMap { s in s["shard"]?.intValue.map { ($0, s) } },
            uniquingKeysWith: { a, _ in a })
        return (stats["shards"]?.arrayValue ?? []).compactMap { s -> ShardStatus? in
            guard let n = s["shard"]?.intValue else { return nil }
            let replicas = (replication[n]?["replicas"]?.arrayValue ?? []).compactMap { r -> Replica? in
                guard let name = r["replica"]?.stringValue else { return nil }
                return Replica(name: name, state: state(of: r), sequence: r["sequence"]?.intValue ?? 0, live: r["live"]?.boolValue ?? false)
            }
            let inSync = replication[n]?["inSync"]?["replicas"]?.arrayValue.map { $0.compactMap(\.stringValue) }
            return ShardStatus(
                shard: n, slots: perShard, replicas: replicas, queryWorkers: s["queryWorkers"]?.arrayValue?.count ?? 0, inSync: inSync)
        }
    }

    /// A replica's state from its `replication` entry: what is under way
    /// first (a copy, a catch-up), then whether it is fresh.
    static func state(of r: JSONValue) -> State {
        if r["live"]?.boolValue == false { return .away }
        if r["retiring"]?.boolValue == true { return .retiring }
        if r["copying"] != nil { return .copying }
        if r["catchingUpTo"] != nil { return .catchingUp }
        if r["detached"]?.boolValue == true { return .detached }
        return r["fresh"]?.boolValue == true ? .inSync : .behind
    }

    var text: String {
        let list = replicas.isEmpty ? "none" : replicas.map { "\($0.name) \($0.state.rawValue) (\($0.sequence))" }.joined(separator: ", ")
        let set = inSync.map { ", in-sync set: " + ($0.isEmpty ? "none" : $0.joined(separator: ", ")) } ?? ""
        return "shard \(shard): \(slots.map { "\($0) slots" } ?? "no slots"), \(queryWorkers) query workers, replicas: \(list)\(set)"
    }

    var json: JSONValue {
        .object([
            "shard": .number(Double(shard)), "slots": slots.map { .number(Double($0)) } ?? .null,
            "queryWorkers": .number(Double(queryWorkers)),
            "inSyncSet": inSync.map { .array($0.map { .string($0) }) } ?? .null,
            "replicas": .array(
                replicas.map {
                    .object([
                        "replica": .string($0.name), "state": .string($0.state.rawValue), "sequence": .number(Double($0.sequence)),
                        "live": .bool($0.live), "inSyncSet": .bool(inSync?.contains($0.name) ?? false),
                    ])
                }),
        ])
    }
}

/// `split --to N`: records the split in the control plane (`shards/split`),
/// which the active coordinator carries out and `limelight up` starts the
/// new shards' workers for; prints each new shard's progress (from the
/// coordinator's stats) and exits 0 once the new map is in force.
struct ShardsSplitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "split",
        abstract: "Split every shard online: N shards become --to (a multiple of N); exits 0 once the new map is in force.")
    @OptionGroup var endpoint: EndpointOptions
    @Option(help: "The new shard count: a multiple of today's.") var to: Int
    @Option(
        help:
            "The control plane: etcd://HOST:PORT[,…] or file:///PATH (default: the control-plane.json of $LIMELIGHT_DATA or ./limelight-data, as limelight up keeps it)."
    )
    var controlPlane: String?
    @Option(help: "The cluster's name in the control plane.") var cluster = "default"
    @Option(help: "Seconds to wait for the split to finish before exiting 1 (it goes on).") var waitSeconds = 3600.0

    func run() async throws {
        let endpointText =
            controlPlane ?? "file://"
            + URL(fileURLWithPath: ProcessInfo.processInfo.environment["LIMELIGHT_DATA"] ?? "limelight-data").standardizedFileURL.path
            + "/control-plane.json"
        let store: any ControlPlaneStore
        do { store = try openControlPlane(endpointText) } catch {
            printError("limelight shards split: \(error)")
            throw ExitCode(ExitCodes.badInput)
        }
        let keys = ClusterKeys(cluster: cluster)
        let clock = ContinuousClock()
        let started = clock.now
        let read = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.range(keys.root + "shards/", prefix: true) }
        guard let mapKV = read.first(keys.shardMap), let map = ShardMap.decode(mapKV.value) else {
            printError(
                "limelight shards split: the control plane at \(endpointText) has no shard map (cluster '\(cluster)'): is the coordinator started with it?"
            )
            throw ExitCode(ExitCodes.badInput)
        }
        if let under = read.first(keys.shardSplit).flatMap({ ShardSplit.decode($0.value) }) {
            guard under.to == to else {
                printError("limelight shards split: a split from \(under.before.shards) to \(under.to) shards is under way; wait for it to finish")
                throw ExitCode(ExitCodes.badInput)
            }
            printLine("following the split under way: \(under.before.shards) → \(to) shards")
        } else if map.shards == to {
            printLine("the cluster has \(to) shards already")
            return
        } else {
            let split: ShardSplit
            do { split = try ShardSplit(splitting: map, to: to) } catch {
                printError("limelight shards split: \(error)")
                throw ExitCode(ExitCodes.badInput)
            }
            let result = try await controlPlaneCall { () async throws(ControlPlaneError) in
                try await store.commit(split.starting(keys: keys, mapRevision: mapKV.modRevision))
            }
            guard result.succeeded else {
                printError("limelight shards split: the shard map or a split changed meanwhile; run the command again")
                throw ExitCode(ExitCodes.badInput)
            }
            printLine("splitting \(map.shards) → \(to) shards (map epoch \(map.epoch) → \(map.epoch + 1))")
        }
        let client = try? await connectForKeys(endpoint)
        defer { client?.close() }
        var last = ""
        let deadline = started.advanced(by: .seconds(waitSeconds))
        while clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(250))
            let now = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.range(keys.root + "shards/", prefix: true) }
            let current = now.first(keys.shardMap).flatMap { ShardMap.decode($0.value) }
            if now.first(keys.shardSplit) == nil, let current, current.shards == to {
                let seconds =
                    Double(started.duration(to: clock.now).components.seconds) + Double(started.duration(to: clock.now).components.attoseconds) / 1e18
                var figures = ""
                if let stats = try? await client?.stats(), let c = stats["counters"] {
                    figures =
                        "; writes held \(c["split.writePauseMs"]?.intValue ?? 0) ms, queries by the new map \(c["split.switchMs"]?.intValue ?? 0) ms before its commit, "
                        + "\(c["copy.bytes"]?.intValue ?? 0) bytes copied"
                }
                printLine(String(format: "split done: %d shards, map epoch %d, %.1f s", to, current.epoch, seconds) + figures)
                return
            }
            guard let stats = try? await client?.stats() else { continue }
            let rows = ShardStatus.rows(stats: stats).filter { $0.shard >= map.shards }
            let line = rows.map { r in
                "shard \(r.shard): " + (r.replicas.isEmpty ? "waiting for its indexer" : r.replicas.map { $0.state.rawValue }.joined(separator: ", "))
            }
            .joined(separator: "; ")
            if !line.isEmpty, line != last {
                printLine(line)
                last = line
            }
        }
        printError("limelight shards split: not finished after \(Int(waitSeconds)) s; it goes on (see limelight shards status)")
        throw ExitCode(1)
    }
}
