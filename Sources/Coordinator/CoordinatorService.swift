import Foundation
import Items
import Logging
import Planner
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
public final class CoordinatorService: Sendable {
    public let configuration: CoordinatorConfiguration
    let logger: Logger
    let context: Context
    let clients: AsyncSocket
    let workerSocket: AsyncSocket
    let http: HTTPEndpoint?
    let core: CoordinatorCore
    let clientOutbox: AsyncStream<Outgoing>
    let workerOutbox: AsyncStream<Outgoing>

    /// The endpoints actually bound (port 0 resolved).
    public let clientEndpoint: String
    public let workerEndpoint: String

    /// `keyStore`: the cluster's API keys (docs/security.md); nil for a cluster without keys.
    public init(configuration: CoordinatorConfiguration, logger: Logger, planner: Planner = Planner(), keyStore: KeyStore? = nil) throws {
        precondition(configuration.shards >= 1, "a cluster has at least one shard")
        self.configuration = configuration
        self.logger = logger
        context = try Context(ioThreads: 1)
        let hwm = configuration.highWaterMark
        // ZeroMQ's own limit sits well above ours, so an oversized frame still
        // reaches us and gets a named error reply; only absurd ones cut the link.
        let hardLimit = Int64(configuration.maxFrameBytes) * 4
        let listen = zmqEndpoint(configuration.listen)
        clients = try AsyncSocket(context: context, type: .router, name: "coordinator-clients") { s in
            try s.set(.routerMandatory(true))
            try s.set(.sendHighWaterMark(hwm))
            try s.set(.receiveHighWaterMark(hwm))
            try s.set(.maxMessageSize(hardLimit))
            try s.set(.linger(milliseconds: 0))
            try s.bind(listen)
        }
        let workersAt = zmqEndpoint(configuration.workers)
        workerSocket = try AsyncSocket(context: context, type: .router, name: "coordinator-workers") { s in
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
        let (co, cc) = AsyncStream<Outgoing>.makeStream()
        let (wo, wc) = AsyncStream<Outgoing>.makeStream()
        clientOutbox = co
        workerOutbox = wo
        let core = CoordinatorCore(configuration: configuration, logger: logger, planner: planner,
                                   clientOutbox: cc, workerOutbox: wc, keyStore: keyStore)
        self.core = core
        http = configuration.statsPort.map { HTTPEndpoint(host: configuration.statsHost, port: $0, core: core, logger: logger) }
    }

    /// The stats URL (`http://HOST:PORT/stats`, port 0 resolved) once the HTTP
    /// endpoint listens; nil when it serves none. Throws when it cannot bind,
    /// and `run` then returns. Call it while `run` is running.
    public func statsURL() async throws -> String? {
        guard let http else { return nil }
        let port = try await http.bound.wait().get()
        let host = http.host.contains(":") ? "[\(http.host)]" : http.host
        return "http://\(host):\(port)/stats"
    }

    /// Serves until the task is cancelled, then closes every socket.
    public func run() async {
        logger.info("coordinator listening", metadata: [
            "endpoint.clients": "\(clientEndpoint)", "endpoint.workers": "\(workerEndpoint)",
            "http.listen": "\(http.map { "\($0.host):\($0.port)" } ?? "-")", "shards": "\(configuration.shards)",
        ])
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.pump(self.clients, isClient: true) }
            group.addTask { await self.pump(self.workerSocket, isClient: false) }
            group.addTask { await self.drain(self.clientOutbox, to: self.clients) }
            group.addTask { await self.drain(self.workerOutbox, to: self.workerSocket) }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(max(50, self.configuration.heartbeatMs / 2)))
                    await self.core.sweep()
                }
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
            shutdown()
            group.cancelAll()
        }
    }

    /// Closes the sockets and the context. Safe to call more than once.
    public func shutdown() {
        clients.close()
        workerSocket.close()
        context.shutdown()
    }

    func pump(_ socket: AsyncSocket, isClient: Bool) async {
        for await frames in socket.messages {
            guard frames.count >= 2, let payload = frames.last else { continue }
            let route = Array(frames.dropLast())
            if isClient {
                // Never waits for write room: a publish past the limit waits
                // in the core's bounded queue (or is answered `busy`), so pings,
                // cancels and queries keep being read while writes are throttled.
                await core.handleClient(route: route, payload: payload)
            } else if frames.count > 2 {
                // Workers are DEALER sockets sending one frame per message; more
                // would be read as part of the route and never match a worker.
                await core.rejectMultiFrame(route: [frames[0]], frames: frames.count - 1)
            } else {
                await core.handleWorker(route: route, payload: payload)
            }
        }
    }

    /// Hands each outgoing message to its peer's own queue (``PeerOutboxes``),
    /// so a peer that does not read holds back only its own messages.
    func drain(_ outbox: AsyncStream<Outgoing>, to socket: AsyncSocket) async {
        let outboxes = PeerOutboxes(limit: configuration.peerOutboxLimit)
        // Discarding: a sender that finished leaves nothing behind in the group.
        await withDiscardingTaskGroup { senders in
            for await o in outbox {
                let route: [Data]
                switch o.to {
                case .client(let r), .worker(let r): route = r
                }
                switch outboxes.enqueue(o, route: route) {
                case .queued: break
                case .startSender:
                    senders.addTask { await self.sendAll(to: route, from: outboxes, on: socket) }
                case .dropped(let first):
                    await core.count("outbox.dropped")
                    if first {
                        logger.warning("a peer is not reading its messages: its outbox is full, dropping new ones until it drains", metadata: [
                            "peer": "\(o.to.kind)", "peer.route": "\(route.map { $0.map { String(format: "%02x", $0) }.joined() }.joined(separator: "/"))",
                            "outbox.limit": "\(configuration.peerOutboxLimit)", "message.type": "\(o.envelope.type.rawValue)",
                        ])
                    }
                }
            }
        }
    }

    /// Sends one peer's queued messages in order until its queue is empty.
    func sendAll(to route: [Data], from outboxes: PeerOutboxes, on socket: AsyncSocket) async {
        while let o = outboxes.next(route: route) {
            do {
                try await socket.send(route + [o.envelope.encoded()])
            } catch {
                // The peer is gone (ROUTER_MANDATORY). A worker that vanished is
                // forgotten at once, so its work is retried on a replica without
                // waiting for the heartbeat to lapse.
                if case .worker(let r) = o.to { await core.workerUnreachable(route: r) }
                logger.debug("dropped a reply to a departed peer", metadata: ["message.type": "\(o.envelope.type.rawValue)", "error": "\(error)"])
            }
        }
    }
}
