import ArgumentParser
import ControlPlane
import Foundation
import LimelightClient

/// Where the replica commands find the control plane, and how long they wait.
struct ReplicaChangeOptions: ParsableArguments {
    @Option(
        help:
            "The control plane: etcd://HOST:PORT[,…] or file:///PATH (default: the control-plane.json of $LIMELIGHT_DATA or ./limelight-data, as limelight up keeps it)."
    )
    var controlPlane: String?
    @Option(help: "The cluster's name in the control plane.") var cluster = "default"
    @Option(help: "The shards whose replicas change, e.g. 0,2 (default: every shard).") var shards: String?
    @Option(help: "Seconds to wait for the change to finish before exiting 1 (it goes on).") var waitSeconds = 3600.0

    var endpointText: String {
        controlPlane ?? "file://"
            + URL(fileURLWithPath: ProcessInfo.processInfo.environment["LIMELIGHT_DATA"] ?? "limelight-data").standardizedFileURL.path
            + "/control-plane.json"
    }

    /// The shards named by `--shards`, checked against the map's count; every shard without it.
    func shardList(count: Int) throws(ReplicaCommandError) -> [Int] {
        guard let shards else { return Array(0..<count) }
        var list: [Int] = []
        for part in shards.split(separator: ",") {
            guard let n = Int(part.trimmingCharacters(in: .whitespaces)), n >= 0, n < count else {
                throw ReplicaCommandError("--shards \(shards): '\(part)' is not a shard of this cluster (0-\(count - 1))")
            }
            list.append(n)
        }
        guard !list.isEmpty else { throw ReplicaCommandError("--shards names no shard") }
        return Array(Set(list)).sorted()
    }
}

/// A replica command's refusal, printed on standard error (exit 2).
struct ReplicaCommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The name a replica's workers register with for a data folder on this
/// host (the workers' default: host and absolute path).
func replicaName(folder: String) -> String {
    "\(ProcessInfo.processInfo.hostName):\(URL(fileURLWithPath: folder).standardizedFileURL.path)"
}

/// The replica among `known` that `given` names: itself, or a data folder
/// of this host (`limelight-data/replica-1` for `HOST:/abs/limelight-data/replica-1`),
/// or of the one other host that has a replica in that folder.
func resolveReplica(_ given: String, known: [String]) -> String? {
    if known.contains(given) { return given }
    if known.contains(replicaName(folder: given)) { return replicaName(folder: given) }
    // A folder of another host: only when one host has it.
    let path = URL(fileURLWithPath: given).standardizedFileURL.path
    let matches = known.filter { $0.hasSuffix(":" + path) }
    return matches.count == 1 ? matches[0] : nil
}

/// `add-replica`: a new replica of shards, copied and caught up online, queried once in sync.
struct ShardsAddReplicaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-replica",
        abstract:
            "Add a replica of shards online: copied from an in-sync replica, caught up, then queried; exits 0 once it is in sync and queried.")
    @OptionGroup var endpoint: EndpointOptions
    @OptionGroup var options: ReplicaChangeOptions
    @Option(help: "The new replica's data folder on this host: limelight up starts its indexer and query worker there.") var data: String?
    @Option(help: "The new replica's name, as its workers register it (HOST:/data/folder), when you start them yourself.") var replica: String?

    func validate() throws {
        guard (data == nil) != (replica == nil) else { throw ValidationError("give either --data FOLDER or --replica NAME") }
    }

    func run() async throws {
        let folder = data.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        try await ReplicaChangeRun(endpoint: endpoint, options: options, command: "add-replica").run { map, known, shards in
            let name = replica ?? replicaName(folder: folder ?? "")
            return ReplicaChange(kind: .add, shards: shards, add: name, folder: folder)
        }
    }
}

/// `retire`: a replica leaves shards online; refused when it is a shard's last in-sync one.
struct ShardsRetireCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retire",
        abstract:
            "Retire a replica of shards online: it stops taking writes and queries, then its workers stop; refused for a shard's last in-sync replica."
    )
    @OptionGroup var endpoint: EndpointOptions
    @OptionGroup var options: ReplicaChangeOptions
    @Option(help: "The replica to retire: its name (limelight shards status) or, on its host, its data folder.") var replica: String

    func run() async throws {
        try await ReplicaChangeRun(endpoint: endpoint, options: options, command: "retire").run { _, status, shards in
            let name = try ReplicaChangeRun.resolve(replica, status: status, shards: shards)
            return ReplicaChange(kind: .retire, shards: shards, retire: name)
        }
    }
}

/// `move`: add a replica, then retire another, online.
struct ShardsMoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "move",
        abstract: "Move shards from one replica to a new one online: add-replica, then retire; exits 0 once the old one is retired.")
    @OptionGroup var endpoint: EndpointOptions
    @OptionGroup var options: ReplicaChangeOptions
    @Option(help: "The replica to retire: its name (limelight shards status) or, on its host, its data folder.") var from: String
    @Option(help: "The new replica's data folder on this host: limelight up starts its workers there.") var toData: String?
    @Option(help: "The new replica's name, as its workers register it (HOST:/data/folder), when you start them yourself.") var to: String?

    func validate() throws {
        guard (toData == nil) != (to == nil) else { throw ValidationError("give either --to-data FOLDER or --to NAME") }
    }

    func run() async throws {
        let folder = toData.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        try await ReplicaChangeRun(endpoint: endpoint, options: options, command: "move").run { _, status, shards in
            let old = try ReplicaChangeRun.resolve(from, status: status, shards: shards)
            let new = to ?? replicaName(folder: folder ?? "")
            guard new != old else { throw ReplicaCommandError("--from and the new replica are the same: \(old)") }
            return ReplicaChange(kind: .move, shards: shards, add: new, folder: folder, retire: old)
        }
    }
}

/// What the three commands share: record the change (or follow the same
/// one under way), print the replicas' progress from the stats, exit 0 once
/// the coordinator completed it (the record is gone), 2 when it refused it.
struct ReplicaChangeRun {
    var endpoint: EndpointOptions
    var options: ReplicaChangeOptions
    var command: String

    func fail(_ message: String, _ code: Int32 = ExitCodes.badInput) -> ExitCode {
        printError("limelight shards \(command): \(message)")
        return ExitCode(code)
    }

    static func resolve(_ given: String, status: [ShardStatus], shards: [Int]) throws(ReplicaCommandError) -> String {
        let known = Array(Set(status.filter { shards.contains($0.shard) }.flatMap { $0.replicas.map(\.name) })).sorted()
        guard let name = resolveReplica(given, known: known) else {
            throw ReplicaCommandError(
                "no replica '\(given)' of shards \(shards.map(String.init).joined(separator: ",")); they have: \(known.joined(separator: ", "))")
        }
        return name
    }

    func run(_ make: (ShardMap, [ShardStatus], [Int]) throws -> ReplicaChange) async throws {
        let store: any ControlPlaneStore
        do { store = try openControlPlane(options.endpointText) } catch { throw fail("\(error)") }
        let keys = ClusterKeys(cluster: options.cluster)
        let clock = ContinuousClock()
        let started = clock.now
        let read = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.range(keys.root + "shards/", prefix: true) }
        guard let map = read.first(keys.shardMap).flatMap({ ShardMap.decode($0.value) }) else {
            throw fail(
                "the control plane at \(options.endpointText) has no shard map (cluster '\(options.cluster)'): is the coordinator started with it?")
        }
        if read.first(keys.shardSplit) != nil { throw fail("a shard split is under way; wait for it to finish") }
        let client: LimelightClient
        do { client = try await connectForKeys(endpoint) } catch let e as ClientError { throw failure(e, "shards \(command)") }
        defer { client.close() }
        func status() async throws -> (rows: [ShardStatus], copied: Int) {
            do {
                let stats = try await client.stats()
                return (ShardStatus.rows(stats: stats), stats["counters"]?["copy.bytes"]?.intValue ?? 0)
            } catch let e as ClientError { throw failure(e, "shards \(command)") }
        }
        let before = try await status()
        let change: ReplicaChange
        do { change = try make(map, before.rows, try options.shardList(count: map.shards)) } catch let e as ReplicaCommandError {
            throw fail(e.description)
        }
        if change.kind == .retire, let name = change.retire {
            // Checked first from the stats (the coordinator checks again): a
            // replica under writes may lag a change for a moment, so a few
            // readings over ``ReplicaRun.refuseAfter``'s span are taken.
            var rows = before.rows
            var lacking = Self.lacking(rows, retiring: name, shards: change.shards)
            let until = clock.now.advanced(by: .seconds(3))
            while !lacking.isEmpty, clock.now < until {
                try? await Task.sleep(for: .milliseconds(200))
                rows = try await status().rows
                lacking = Self.lacking(rows, retiring: name, shards: change.shards)
            }
            if let shard = lacking.first {
                throw fail(
                    "shard \(shard) has no in-sync replica but \(name): retiring it would leave the shard none "
                        + "(add one first: limelight shards add-replica, or limelight shards move)")
            }
        }
        if let under = read.first(keys.replicaChange).flatMap({ ReplicaChange.decode($0.value) }) {
            guard under.kind == change.kind, under.add == change.add, under.retire == change.retire, under.shards == change.shards else {
                throw fail("another replica change is under way (\(under.summary)); wait for it to finish")
            }
            printLine("following the change under way: \(under.summary)")
        } else {
            if let add = change.add, change.kind == .add,
                before.rows.filter({ change.shards.contains($0.shard) }).allSatisfy({ $0.replicas.contains { $0.name == add } })
            {
                printLine("\(add) is a replica of shards \(change.shards.map(String.init).joined(separator: ",")) already")
                return
            }
            let result = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.commit(change.starting(keys: keys)) }
            guard result.succeeded else { throw fail("a split or another replica change started meanwhile; run the command again") }
            printLine(change.summary + (change.add != nil && change.folder == nil ? " (start its indexer and query worker with its --data)" : ""))
        }
        var last = ""
        let deadline = started.advanced(by: .seconds(options.waitSeconds))
        while clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(250))
            let now = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.range(keys.root + "shards/", prefix: true) }
            guard let kv = now.first(keys.replicaChange), let stored = ReplicaChange.decode(kv.value) else {
                let seconds = Double(started.duration(to: clock.now) / .milliseconds(1)) / 1000
                let copied = (try? await status().copied).map { max(0, $0 - before.copied) } ?? 0
                printLine(String(format: "done: %@ in %.1f s, %d bytes copied", change.summary, seconds, copied))
                return
            }
            if stored.phase == .refused {
                _ = try? await store.commit(
                    Transaction(if: [.unchanged(keys.replicaChange, since: kv.modRevision)], then: [.delete(keys.replicaChange)]))
                throw fail(stored.reason ?? "the coordinator refused the change")
            }
            guard let rows = try? await status().rows else { continue }
            let line = progress(stored, rows)
            if line != last {
                printLine(line)
                last = line
            }
        }
        throw fail("not finished after \(Int(options.waitSeconds)) s; it goes on (see limelight shards status)", 1)
    }

    /// The shards among `shards` with no in-sync replica but `retiring`.
    static func lacking(_ rows: [ShardStatus], retiring: String, shards: [Int]) -> [Int] {
        rows.filter { shards.contains($0.shard) && !$0.replicas.contains { $0.name != retiring && $0.state == .inSync } }.map(\.shard)
    }

    /// One line: each changing replica's state per shard.
    func progress(_ change: ReplicaChange, _ rows: [ShardStatus]) -> String {
        rows.filter { change.shards.contains($0.shard) }.map { row in
            let parts = [change.add, change.retire].compactMap { $0 }.map { name in
                "\(name) " + (row.replicas.first { $0.name == name }.map(\.state.rawValue) ?? "waiting for its indexer")
            }
            return "shard \(row.shard): " + parts.joined(separator: ", ")
        }
        .joined(separator: "; ") + " [\(change.phase.rawValue)]"
    }
}
