import Allocator
import ClusterAuth
import ControlPlane
import Foundation
import Items
import Logging
import Planner
import Synchronization
import Tenancy
import WireProtocol
import ZeroMQ

/// The coordinator process: the cluster's front door.
///
/// A ROUTER socket for clients and one for workers, each owned by its own
/// thread (`AsyncSocket`); the HTTP endpoint (`HTTPEndpoint`: status page,
/// stats, Prometheus metrics, health); and the `CoordinatorCore` actor that
/// makes every decision. `limelight-coordinator`
/// is a thin command over this, and tests build the same thing with port 0.
package final class CoordinatorService: Sendable {
    package let configuration: CoordinatorConfiguration
    let logger: Logger
    let context: Context
    let clients: AsyncSocket
    let workerSocket: AsyncSocket
    let http: HTTPEndpoint?
    let core: CoordinatorCore
    /// Checks CURVE keys when CURVE is on (CurveServerSettings.swift).
    let zap: ZAPHandler?
    /// The election, with `--control-plane`; nil for a cluster's only coordinator.
    package let election: CoordinatorElection?
    /// The control plane as the split and in-sync loops read and write it:
    /// a store of their own, apart from the election's, since a store's
    /// calls run one at a time and a renewal must never wait behind
    /// theirs (cut off from etcd, each call takes its whole timeout on
    /// every member; against a slow etcd, the queue alone could outlast
    /// the lease).
    let loopsStore: (any ControlPlaneStore)?
    /// With keys and a control plane: what seals the keys' secrets there.
    let keySealKey: [UInt8]?
    /// Set when the election deposed this coordinator: `run` has returned,
    /// and the process should end (a new one campaigns afresh).
    private let deposedReason = Mutex<String?>(nil)

    /// The endpoints actually bound (port 0 resolved).
    package let clientEndpoint: String
    package let workerEndpoint: String

    /// `keyStore`: the cluster's API keys (docs/security.md); nil for a cluster without keys.
    package init(configuration: CoordinatorConfiguration, logger: Logger, planner: Planner = Planner(), keyStore: sending KeyStore? = nil) throws {
        precondition(configuration.shards >= 1, "a cluster has at least one shard")
        self.configuration = configuration
        self.logger = logger
        context = try Context(ioThreads: 1, placement: configuration.socketPlacement)
        let hwm = configuration.highWaterMark
        // ZeroMQ's own limit sits well above ours, so an oversized frame still
        // reaches us and gets a named error reply; only absurd ones cut the link.
        let hardLimit = Int64(configuration.maxFrameBytes) * 4
        let listen = zmqEndpoint(configuration.listen)
        let curve = configuration.curve
        let refusals = RefusalCounter(logger: logger)
        // Messages are handled on the thread of the socket that read them,
        // as the core's actor (see CoordinatorExecutor); until the core
        // exists they go the long way, through `pump`.
        let inbound = InboundRouter()
        // Bound before the sockets, so that no handshake slips past it.
        let zapContext = context
        zap = try curve.map { curve in
            try ZAPHandler(context: zapContext) { request in
                let decision = curve.decide(request)
                if case .deny(let why) = decision { refusals.refused(request, reason: why) }
                return decision
            }
        }
        clients = try AsyncSocket(
            context: context, type: .router, name: "coordinator-clients",
            intercept: { inbound.take($0, isClient: true) }
        ) { s in
            if let curve { try s.set(curve.socketOptions(domain: CurveServerSettings.clientDomain)) }
            try s.set(.routerMandatory(true))
            try s.set(.sendHighWaterMark(hwm))
            try s.set(.receiveHighWaterMark(hwm))
            try s.set(.maxMessageSize(hardLimit))
            try s.set(.linger(milliseconds: 0))
            try s.bind(listen)
        }
        let workersAt = zmqEndpoint(configuration.workers)
        workerSocket = try AsyncSocket(
            context: context, type: .router, name: "coordinator-workers",
            intercept: { inbound.take($0, isClient: false) }
        ) { s in
            if let curve { try s.set(curve.socketOptions(domain: CurveServerSettings.workerDomain)) }
            try s.set(.routerMandatory(true))
            try s.set(.routerHandover(true))
            try s.set(.sendHighWaterMark(hwm))
            try s.set(.receiveHighWaterMark(hwm))
            try s.set(.maxMessageSize(hardLimit))
            try s.set(.linger(milliseconds: 0))
            try s.bind(workersAt)
        }
        clientEndpoint = clients.endpoint ?? configuration.listen
        workerEndpoint = workerSocket.endpoint ?? configuration.workers
        let (boundClients, boundWorkers) = (clientEndpoint, workerEndpoint)
        // A member that hangs is left within a third of the lease, so that
        // another can renew it in time.
        let controlPlaneTimeout = Duration.milliseconds(max(300, configuration.leaseSeconds * 1000 / 3))
        loopsStore = try configuration.controlPlane.map { endpoint in try openControlPlane(endpoint, timeout: controlPlaneTimeout) }
        // Keys are shared through the control plane, their secrets sealed
        // with a key derived from the cluster secret (docs/security.md).
        if keyStore != nil, configuration.controlPlane != nil {
            guard let secret = configuration.clusterSecret else {
                throw TenancyError(
                    .storeFailed,
                    "API keys with a control plane need a cluster secret (--cluster-secret-file): the keys are kept in the control plane, their secrets sealed with it"
                )
            }
            keySealKey = secret.derivedKey(ClusterSecret.apiKeySeal)
        } else {
            keySealKey = nil
        }
        election = try configuration.controlPlane.map { endpoint in
            let id = configuration.coordinatorID ?? "coordinator-\(ProcessInfo.processInfo.hostName)-\(getpid())"
            var leadership = Leadership(
                id: id, clients: configuration.advertiseClients ?? boundClients,
                workers: configuration.advertiseWorkers ?? boundWorkers, keys: ClusterKeys(cluster: configuration.cluster))
            leadership.host = ProcessInfo.processInfo.hostName
            leadership.pid = Int(getpid())
            var l = logger
            l[metadataKey: "coordinator.id"] = "\(id)"
            return CoordinatorElection(
                store: try openControlPlane(endpoint, timeout: controlPlaneTimeout),
                leadership: leadership, leaseSeconds: configuration.leaseSeconds, logger: l)
        }
        let core = CoordinatorCore(
            configuration: configuration, logger: logger, planner: planner,
            clients: clients, workers: workerSocket, keyStore: keyStore, election: election)
        self.core = core
        refusals.core = core
        inbound.set(core)
        http = configuration.statsPort.map { HTTPEndpoint(host: configuration.statsHost, port: $0, core: core, logger: logger) }
    }

    /// The shard map the control plane holds: the coordinator routes by it.
    package func useShardMap(_ map: ShardMap, splitTo: Int? = nil) async { await core.useShardMap(map, splitTo: splitTo) }

    /// The stats URL (`http://HOST:PORT/stats`, port 0 resolved) once the HTTP
    /// endpoint listens; nil when it serves none. Throws when it cannot bind,
    /// and `run` then returns. Call it while `run` is running.
    package func statsURL() async throws -> String? {
        guard let http else { return nil }
        let port = try await http.bound.wait().get()
        let host = http.host.contains(":") ? "[\(http.host)]" : http.host
        return "http://\(host):\(port)/stats"
    }

    /// Serves until the task is cancelled, then closes every socket.
    package func run() async {
        logger.info(
            "coordinator listening",
            metadata: [
                "endpoint.clients": "\(clientEndpoint)", "endpoint.workers": "\(workerEndpoint)",
                "process.allocator": "\(ProcessAllocator.name)",
                "http.listen": "\(http.map { "\($0.host):\($0.port)" } ?? "-")", "shards": "\(configuration.shards)",
                "workers.auth":
                    "\(configuration.clusterSecret.map { "cluster secret \($0.path)" } ?? (configuration.curve?.workerKeys != nil ? "CURVE keys" : "none"))",
                "curve":
                    "\(configuration.curve.map { "on, clients: \($0.clientKeys.map { "\($0.count) keys" } ?? "any key"), workers: \($0.workerKeys.map { "\($0.count) keys" } ?? "any key")" } ?? "off")",
            ])
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.pump(self.clients, isClient: true) }
            group.addTask { await self.pump(self.workerSocket, isClient: false) }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(max(50, self.configuration.heartbeatMs / 2)))
                    await self.core.sweep()
                }
            }
            if let election {
                // Ends only when deposed: the service then stops, and the
                // process with it (``deposed``).
                group.addTask {
                    await election.run { role in
                        self.logger.notice("coordinator role changed", metadata: ["coordinator.role": "\(role)"])
                        if case .deposed(_, let reason) = role { self.deposedReason.withLock { $0 = reason } }
                    }
                    if self.deposed == nil {
                        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                    } else {
                        await self.core.deposedAnswerChanges(within: .seconds(1))
                    }
                }
            }
            if let loopsStore {
                group.addTask { await self.followSplits(loopsStore) }
                group.addTask { await self.followInSync(loopsStore) }
                if let keySealKey { group.addTask { await self.followKeys(loopsStore, sealKey: keySealKey) } }
            }
            if let http {
                group.addTask {
                    do { try await http.run() } catch {
                        self.logger.critical("the HTTP endpoint stopped", metadata: ["error": "\(error)"])
                    }
                }
            }
            // Wait for cancellation, then close the sockets so every loop ends.
            group.addTask {
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            }
            await group.next()
            if deposed == nil { await election?.resign() }
            shutdown()
            group.cancelAll()
        }
    }

    /// Follows the shard split the control plane holds (`shards/split`,
    /// written by `limelight shards split`): reads it when the core wakes
    /// the loop (``CoordinatorCore/controlPlaneWork``: a worker answered,
    /// registered or was lost while a change is under way, or a worker's
    /// replica is unknown), at most every 20 ms while a change is under way
    /// (a write pause lasts a few of these reads), and at least every 250 ms
    /// then, every second otherwise (a change the commands record is seen
    /// within that), and writes what the core's ``CoordinatorCore/splitTick(_:splitRevision:mapRevision:)``
    /// asks for; the same for a replica change (`shards/replica-change`,
    /// ``CoordinatorCore/replicaTick(_:revision:retired:retiredRevision:)``).
    /// Only the active coordinator carries a split or a change on.
    func followSplits(_ store: any ControlPlaneStore) async {
        let keys = ClusterKeys(cluster: configuration.cluster)
        while !Task.isCancelled {
            let busy = await core.changeUnderWay
            if busy { try? await Task.sleep(for: .milliseconds(20)) }
            await core.controlPlaneWork.wait(upTo: busy ? .milliseconds(250) : .seconds(1))
            guard let epoch = election?.servingEpoch() else { continue }
            do throws(ControlPlaneError) {
                let read = try await store.range(keys.root + "shards/", prefix: true)
                let splitKV = read.first(keys.shardSplit), mapKV = read.first(keys.shardMap)
                let stored = splitKV.flatMap { ShardSplit.decode($0.value) }
                let command = await core.splitTick(
                    stored, map: mapKV.flatMap { ShardMap.decode($0.value) }, epoch: epoch, splitRevision: splitKV?.modRevision ?? 0,
                    mapRevision: mapKV?.modRevision ?? 0)
                switch command {
                case .store(let t)?:
                    let result = try await store.commit(t)
                    await core.splitStored(result.succeeded)
                case .commit(let t, let map)?:
                    let result = try await store.commit(t)
                    await core.splitCommitted(result.succeeded, map: map)
                case .purge?, nil:
                    break
                }
                let changeKV = read.first(keys.replicaChange), retiredKV = read.first(keys.retiredReplicas)
                let change = await core.replicaTick(
                    changeKV.flatMap { ReplicaChange.decode($0.value) }, revision: changeKV?.modRevision ?? 0,
                    retired: retiredKV.flatMap { RetiredReplicas.decode($0.value) }, retiredRevision: retiredKV?.modRevision ?? 0)
                switch change {
                case .store(let t)?:
                    let result = try await store.commit(t)
                    await core.replicaStored(result.succeeded)
                case .complete(let t)?:
                    let result = try await store.commit(t)
                    await core.replicaCompleted(result.succeeded)
                case nil:
                    break
                }
            } catch {
                logger.warning("could not read or write the shard split in the control plane", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Keeps the shards' in-sync sets in the control plane (see
    /// ``InSyncReplicas``): once this coordinator serves, reads them, then
    /// every few milliseconds makes the transactions the core asks for (a
    /// replica to take out before a change it missed is acknowledged, one to
    /// put back). A transaction that fails, or whose answer is lost, is
    /// followed by a fresh read of the set before the next try.
    func followInSync(_ store: any ControlPlaneStore) async {
        let keys = ClusterKeys(cluster: configuration.cluster)
        let prefix = keys.root + "shards/"
        while !Task.isCancelled {
            guard let epoch = election?.servingEpoch() else {
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            var lookAgain = false
            do throws(ControlPlaneError) {
                if await !core.inSyncLoaded {
                    let read = try await store.range(prefix, prefix: true)
                    var sets: [Int: (set: InSyncSet?, revision: Int)] = [:]
                    for kv in read.values {
                        guard kv.key.hasSuffix("/in-sync"),
                            let shard = Int(kv.key.dropFirst(prefix.count).split(separator: "/").first ?? "")
                        else { continue }
                        sets[shard] = (InSyncSet.decode(kv.value), kv.modRevision)
                    }
                    await core.loadInSync(sets, epoch: epoch)
                }
                let steps = await core.inSyncSteps()
                // Written sets may release answers that free more work: look again at once.
                lookAgain = !steps.isEmpty
                for step in steps {
                    guard case .write(let shard, let set, let t) = step else { continue }
                    var result: TransactionResult?
                    do throws(ControlPlaneError) { result = try await store.commit(t) } catch {
                        logger.warning("could not write an in-sync set; reading it again", metadata: ["shard": "\(shard)", "error": "\(error)"])
                    }
                    if let result, result.succeeded {
                        await core.inSyncWrote(shard: shard, set: set, succeeded: true, revision: result.revision)
                        continue
                    }
                    // Not written, or not known: read what the control plane holds.
                    let kv: KeyValue?
                    do throws(ControlPlaneError) { kv = try await store.get(keys.inSync(shard: shard)) } catch {
                        // Tried again later; its stale revision makes it fail, then read.
                        await core.inSyncWrote(shard: shard, set: set, succeeded: false, revision: 0)
                        throw error
                    }
                    let stored = kv.flatMap { InSyncSet.decode($0.value) }
                    if let kv, stored == set {
                        // The lost answer's transaction was applied.
                        await core.inSyncWrote(shard: shard, set: set, succeeded: true, revision: kv.modRevision)
                    } else {
                        await core.inSyncWrote(shard: shard, set: set, succeeded: false, revision: 0)
                        await core.inSyncReread(shard: shard, stored: stored, revision: kv?.modRevision ?? 0)
                        lookAgain = false
                    }
                }
            } catch {
                logger.warning("could not read the in-sync sets from the control plane", metadata: ["error": "\(error)"])
                lookAgain = false
            }
            if !lookAgain { await core.inSyncWork.wait(upTo: .milliseconds(100)) }
        }
    }

    /// Why the election deposed this coordinator, once it has.
    package var deposed: String? { deposedReason.withLock { $0 } }

    /// Closes the sockets and the context. Safe to call more than once.
    package func shutdown() {
        clients.close()
        workerSocket.close()
        context.shutdown()
    }

    /// Handles what the sockets received before the core existed (see
    /// ``InboundRouter``); everything later is handled on the sockets' threads.
    func pump(_ socket: AsyncSocket, isClient: Bool) async {
        for await frames in socket.messages {
            await core.receive(frames, isClient: isClient)
        }
    }
}

/// Hands each received message to the core on the socket's own thread, as
/// the core's actor (``CoordinatorExecutor/run(_:)``): no stream, no task,
/// no hop to another thread before the message is handled.
final class InboundRouter: Sendable {
    /// Set once, before the service is returned.
    private let core = Mutex<CoordinatorCore?>(nil)

    func set(_ core: CoordinatorCore) { self.core.withLock { $0 = core } }

    /// False (the message goes to the socket's stream) until the core is set.
    func take(_ frames: [Data], isClient: Bool) -> Bool {
        guard let core = self.core.withLock({ $0 }) else { return false }
        core.executor.run {
            core.assumeIsolated { $0.receive(frames, isClient: isClient) }
        }
        return true
    }
}

extension CoordinatorCore {
    /// One message from a client or a worker, as the sockets deliver it.
    func receive(_ frames: [Data], isClient: Bool) {
        guard frames.count >= 2, let payload = frames.last else { return }
        let route = Array(frames.dropLast())
        if isClient {
            // Never waits for write room: a publish past the limit waits
            // in the core's bounded queue (or is answered `busy`), so pings,
            // cancels and queries keep being read while writes are throttled.
            handleClient(route: route, payload: payload)
        } else if frames.count > 2 {
            // Workers are DEALER sockets sending one frame per message; more
            // would be read as part of the route and never match a worker.
            rejectMultiFrame(route: [frames[0]], frames: frames.count - 1)
        } else {
            handleWorker(route: route, payload: payload)
        }
    }
}
