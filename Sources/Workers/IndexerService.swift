import Allocator
import Foundation
import Items
import LimelightConcurrency
import Logging
import ShardStore
import WireProtocol
import ZeroMQ

/// Settings of `limelight-indexer`.
package struct IndexerConfiguration: WorkerLinkConfiguration {
    package var coordinator: String = "tcp://127.0.0.1:7701"
    package var data: String
    package var shards: [Int]
    package var workerID: String
    /// How often expired items are purged.
    package var purgeIntervalSeconds: Double = 60
    package var heartbeatMs: Int = 1000
    package var livenessMs: Int = 3000
    /// What an acknowledged write survives (see ``Durability``).
    package var durability: Durability = .process
    /// A shard's writes that wait together are committed in one transaction
    /// (see ``WriteGroups``), at most this many (1: each write alone)...
    package var maxGroupWrites = 32
    /// ...and at most this many items, unless one write alone holds more.
    package var maxGroupItems = 4_000
    /// Writes read and waiting for their shards at most; past it the indexer
    /// reads no further message until a group is taken.
    package var maxWaitingWrites = 64
    /// The all-MiniLM-L6-v2 folder items' semantic text is embedded with
    /// (see ``IndexerEmbedding``); nil stores items without vectors.
    package var modelDirectory: String?
    /// The cluster secret and CURVE keys shown to the coordinator.
    package var credentials = WorkerCredentials()
    /// See `Body.Register.replica`; nil: this host and data folder.
    package var replica: String?
    /// Where the socket's thread and ZeroMQ's I/O thread run: together, on
    /// the CPU the link starts on (see ``ThreadPlacement``).
    package var socketPlacement: ThreadPlacement = .here

    package init(data: String, shards: [Int], workerID: String? = nil) {
        self.data = data
        self.shards = shards
        self.workerID = workerID ?? "indexer-\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }
}

/// A shard's store, which only its ``DedicatedThread`` touches: the box
/// travels between tasks, the SQLite connection in it does not.
typealias StoreBox = ThreadConfined<ShardStore>

/// The indexer process: owns shards, applies writes, acknowledges after the commit.
///
/// Each shard's SQLite connection lives on its own thread. Writes are
/// queued as they are read and applied one group at a time (``WriteGroups``):
/// the writes of one shard that wait together go into one transaction, each
/// in a savepoint of its own, so each keeps its own outcome (a write that
/// fails is rolled back and refused alone) while the group pays for one
/// commit: a commit writes every index page it touched to the log, and the
/// value index's pages, touched at random, are rewritten by almost every
/// commit of a hundred items or more. Each write is acknowledged after its
/// group has committed. Any other message waits until the writes read
/// before it are done, and is handled alone. Several indexers (`limelight up`
/// starts two) are what puts several cores to work; letting one indexer's
/// shards write at once is no faster when the indexers already keep every
/// core busy, and costs more CPU.
package final class IndexerService: Sendable {
    package let configuration: IndexerConfiguration
    let logger: Logger
    let link: WorkerLink
    let stores: [Int: (StoreBox, DedicatedThread)]
    let tally = WorkerTally()
    let embedding: IndexerEmbedding
    let copies = CopyFiles()
    let groups: WriteGroups
    /// Wakes the background purge of a split's moved slots (``purgeMovedSlots()``).
    let slotPurgeWork = Wakeup()

    package init(configuration: IndexerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.workerID)"
        self.logger = logger
        try FileManager.default.createDirectory(atPath: configuration.data, withIntermediateDirectories: true)
        var stores: [Int: (StoreBox, DedicatedThread)] = [:]
        for shard in configuration.shards {
            var l = logger
            l[metadataKey: "shard"] = "\(shard)"
            let store = try ShardStore(
                path: shardPath(data: configuration.data, shard: shard), mode: .readWrite,
                durability: configuration.durability, logger: l)
            // Read back from SQLite, so the log shows what is in force, not what was asked.
            l.info("opened shard", metadata: ["store.durability": "\((try? store.durabilityInForce())?.rawValue ?? "unknown")"])
            stores[shard] = (StoreBox(store), DedicatedThread(label: "limelight.indexer.shard-\(shard)"))
            // A copy this process's predecessor was sending or receiving when it died.
            for leftover in [Self.snapshotPath(data: configuration.data, shard: shard), Self.receivedPath(data: configuration.data, shard: shard)] {
                try? FileManager.default.removeItem(atPath: leftover)
            }
        }
        self.stores = stores
        groups = WriteGroups(
            maxWaiting: configuration.maxWaitingWrites, maxWrites: configuration.maxGroupWrites, maxItems: configuration.maxGroupItems)
        embedding = IndexerEmbedding(modelDirectory: configuration.modelDirectory, logger: logger)
        link = try WorkerLink(role: .indexer, configuration: configuration, logger: logger)
    }

    package var isRegistered: Bool { link.isRegistered }
    /// Why the coordinator refused this worker, if it did (`run` has then returned).
    package var refusal: String? { link.refusal }

    package func run() async {
        logger.info(
            "indexer serving",
            metadata: [
                "shards": "\(configuration.shards.map(String.init).joined(separator: ","))",
                "data": "\(configuration.data)", "process.allocator": "\(ProcessAllocator.name)",
            ])
        link.reportStatus { await self.status() }
        link.reportSequences { await self.sequences() }
        await link.serve(
            handle: { envelope in await self.handle(envelope) },
            alongside: [
                {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(self.configuration.purgeIntervalSeconds))
                        if Task.isCancelled { break }
                        await self.purge()
                    }
                },
                { await self.purgeMovedSlots() },
                {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        if Task.isCancelled { break }
                        await self.truncateQuietLogs()
                    }
                },
            ])
    }

    package func shutdown() {
        link.close()
    }

    func purge() async {
        for (shard, (box, exec)) in stores {
            do {
                let n = try await exec.run { try box.value.purgeExpired(now: Date()) }
                if n > 0 { tally.changed(shard: shard, wrote: false) }
                if n > 0 { logger.info("purged expired items", metadata: ["shard": "\(shard)", "items": "\(n)"]) }
            } catch {
                logger.error("purge failed", metadata: ["shard": "\(shard)", "error": "\(error)"])
            }
        }
    }

    /// Truncates the write-ahead log of each shard that has not been written
    /// for two seconds since its last write: a bulk publish leaves up to the
    /// checkpoint interval (about 40 MB) of log a shard, which the disk would
    /// otherwise hold until the next write. On the shard's own thread,
    /// between its writes.
    func truncateQuietLogs() async {
        for shard in tally.quietLogs(quiet: 2) {
            guard let (box, exec) = stores[shard] else { continue }
            do {
                let done = try await exec.run { try box.value.truncateLog() }
                if !done {
                    tally.logLeft(shard: shard)
                    logger.debug("write-ahead log left for later: a reader holds an older snapshot", metadata: ["shard": "\(shard)"])
                }
            } catch {
                logger.warning("cannot truncate the write-ahead log", metadata: ["shard": "\(shard)", "error": "\(error)"])
            }
        }
    }

    /// The store and thread of `shard`, or nil after answering request `id`
    /// `bad_shard` when this indexer does not own it.
    func ownedShard(_ shard: Int, answering id: String) async -> (StoreBox, DedicatedThread)? {
        if let owned = stores[shard] { return owned }
        await link.send(id, .error(WireError(code: "bad_shard", message: "this indexer does not own shard \(shard)")))
        return nil
    }

    func handle(_ envelope: Envelope) async {
        switch envelope.body {
        case .write(let w):
            guard stores[w.shard] != nil else {
                _ = await ownedShard(w.shard, answering: envelope.id)
                return
            }
            if await groups.add(WaitingWrite(id: envelope.id, write: w)) {
                Task { await self.applyWaitingWrites() }
            }
            await groups.waitForRoom()
            return
        default:
            break
        }
        // Anything else comes after every write read before it.
        await groups.idle()
        switch envelope.body {
        case .entityDelete(let d):
            await applyToShards(envelope.id, d.shards, sequence: d.sequence, epoch: d.epoch) { store in
                try store.deleteEntities(type: d.entityType, ids: d.ids)
            }
        case .entityAssociate(let a):
            await applyToShards(envelope.id, a.shards, sequence: a.sequence, epoch: a.epoch) { store in
                try store.associate(uniqueIdentifier: a.uniqueIdentifier, with: a.entity) ? 1 : 0
            }
        case .delete(let d):
            // Tests only (``TestHold``): a split's mark sent, not applied.
            if d.keepSlots != nil { await TestHold.wait("mark") }
            var total = 0
            do {
                for shard in d.shards ?? configuration.shards {
                    guard let (box, exec) = stores[shard] else { continue }
                    let applied = try await applySequenced(box, exec, sequence: d.sequence, epoch: d.epoch) { store in
                        var n = 0
                        if d.all == true { n += try store.deleteAll() }
                        if let ids = d.ids, !ids.isEmpty { n += try store.delete(ids: ids) }
                        if let domains = d.domains, !domains.isEmpty { n += try store.delete(domains: domains) }
                        if let keep = d.keepSlots {
                            // Only marked here (milliseconds): the rows go in
                            // the background (``purgeMovedSlots()``).
                            n += try store.markMoved(keeping: SlotFilter(keep))
                        }
                        return n
                    }
                    if case .gap(let have) = applied {
                        await link.send(envelope.id, .error(Self.outOfSequence(shard: shard, sequence: d.sequence ?? 0, have: have)))
                        return
                    }
                    if case .staleEpoch(let have) = applied {
                        await link.send(envelope.id, .error(Self.staleEpoch(shard: shard, epoch: d.epoch, have: have)))
                        return
                    }
                    if case .done(let n) = applied { total += n }
                    if d.keepSlots != nil { slotPurgeWork.signal() }
                    tally.changed(shard: shard, wrote: true)
                }
                tally.finished()
                await link.send(envelope.id, .deleteAck(Body.DeleteAck(deleted: total)))
            } catch {
                tally.finished(failed: true)
                await link.send(envelope.id, .error(WireError(code: "store_failed", message: "\(error)")))
            }
        case .declare(let d):
            do {
                let specs = d.attributes.filter { !$0.isSemanticOnly }.map(\.spec)
                for (_, (box, exec)) in stores {
                    try await exec.run {
                        if d.check == true {
                            try box.value.checkDeclaration(specs, exampleTag: d.exampleTag ?? "")
                        } else {
                            try box.value.declare(specs, semantic: d.attributes.compactMap { a in a.semantic.map { (a.name, $0) } })
                        }
                    }
                }
                tally.finished()
                await link.send(envelope.id, .declareAck(Body.Empty()))
            } catch {
                tally.finished(failed: true)
                await link.send(envelope.id, .error(WireError(code: "bad_declaration", message: "\(error)", field: "attributes")))
            }
        case .copyRequest(let r): await serveCopy(envelope.id, r)
        case .copyChunk(let c): await receiveCopy(envelope.id, c)
        case .write: break  // handled above
        default:
            await link.send(
                envelope.id, .error(WireError(code: "unexpected_type", message: "an indexer does not handle '\(envelope.type.rawValue)'")))
        }
    }
}

extension IndexerService {
    /// What the next heartbeat reports: the tally, and per shard its items
    /// and the size of its files. A heartbeat never waits for a shard: a
    /// count is taken on the shard's own thread, after whatever write it is
    /// doing, and reported from the next heartbeat on; until then the last
    /// count stands. (Waiting for it held heartbeats behind long writes, and
    /// the coordinator took a busy indexer for dead.)
    func status() async -> WorkerStatus {
        var shards: [ShardStatus] = []
        for shard in configuration.shards.sorted() {
            guard let (box, exec) = stores[shard] else { continue }
            let known = tally.knownCount(shard: shard)
            let items = known.count ?? known.last
            if known.count == nil, tally.beginCounting(shard: shard) {
                let tally = self.tally
                Task {
                    let n = try? await exec.run({ try box.value.count() })
                    tally.setCount(n, shard: shard, generation: known.generation)
                }
            }
            shards.append(
                ShardStatus(
                    shard: shard, items: items ?? 0,
                    databaseBytes: databaseBytes(path: shardPath(data: configuration.data, shard: shard))))
        }
        return tally.status(shards: shards, dataFolder: configuration.data)
    }

    /// A store outcome as it travels back to the coordinator.
    static func result(_ index: Int, _ outcome: WriteOutcome) -> ItemResult {
        switch outcome {
        case .stored(let uid):
            return ItemResult(index: index, uniqueIdentifier: uid, status: .stored)
        case .rejected(let uid, let error):
            return ItemResult(index: index, uniqueIdentifier: uid, status: .rejected, error: WireError(error))
        }
    }
}

extension IndexerService {
    /// Runs an entity operation on each named shard (all of this indexer's
    /// when none are named) on the shard's own thread, and answers one
    /// `entity_ack` with the items affected in total, or an error.
    func applyToShards(
        _ id: String, _ shards: [Int]?, sequence: Int? = nil, epoch: Int? = nil, _ op: @escaping @Sendable (ShardStore) throws -> Int
    ) async {
        var total = 0
        do {
            for shard in shards ?? configuration.shards {
                guard let (box, exec) = stores[shard] else { continue }
                var n = 0
                switch try await applySequenced(box, exec, sequence: sequence, epoch: epoch, op) {
                case .done(let count): n = count
                case .skipped, .awaitingRegistration: break  // the latter never returned by applySequenced
                case .gap(let have):
                    await link.send(id, .error(Self.outOfSequence(shard: shard, sequence: sequence ?? 0, have: have)))
                    return
                case .staleEpoch(let have):
                    await link.send(id, .error(Self.staleEpoch(shard: shard, epoch: epoch, have: have)))
                    return
                }
                if n > 0 { tally.changed(shard: shard, wrote: true) }
                total += n
            }
            tally.finished()
            await link.send(id, .entityAck(Body.EntityAck(count: total)))
        } catch {
            tally.finished(failed: true)
            await link.send(id, .error(WireError(code: "store_failed", message: "\(error)")))
        }
    }
}
