import Foundation
import Items
import Logging
import Planner
import WireProtocol
import ZeroMQ

/// The coordinator process: the cluster's front door.
///
/// A ROUTER socket for clients and one for workers, each owned by its own
/// thread (`AsyncSocket`); an HTTP stats endpoint on a STREAM socket; and the
/// `CoordinatorCore` actor that makes every decision. `limelight-coordinator`
/// is a thin command over this, and tests build the same thing with port 0.
public final class CoordinatorService: Sendable {
    public let configuration: CoordinatorConfiguration
    let logger: Logger
    let context: Context
    let clients: AsyncSocket
    let workerSocket: AsyncSocket
    let statsSocket: AsyncSocket?
    let core: CoordinatorCore
    let clientOutbox: AsyncStream<Outgoing>
    let workerOutbox: AsyncStream<Outgoing>

    /// The endpoints actually bound (port 0 resolved).
    public let clientEndpoint: String
    public let workerEndpoint: String
    public let statsURL: String?

    public init(configuration: CoordinatorConfiguration, logger: Logger, planner: Planner = Planner()) throws {
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
        if let port = configuration.statsPort {
            let host = configuration.statsHost == "localhost" ? "127.0.0.1" : configuration.statsHost
            let s = try AsyncSocket(context: context, type: .stream, name: "coordinator-stats") { s in
                try s.set(.linger(milliseconds: 0))
                try s.bind("tcp://\(host):\(port == 0 ? "*" : String(port))")
            }
            statsSocket = s
            let bound = s.endpoint ?? "tcp://\(host):\(port)"
            let hostPort = bound.replacingOccurrences(of: "tcp://", with: "")
            statsURL = "http://\(hostPort)/stats"
        } else {
            statsSocket = nil
            statsURL = nil
        }
        clientEndpoint = clients.endpoint ?? configuration.listen
        workerEndpoint = workerSocket.endpoint ?? configuration.workers
        let (co, cc) = AsyncStream<Outgoing>.makeStream()
        let (wo, wc) = AsyncStream<Outgoing>.makeStream()
        clientOutbox = co
        workerOutbox = wo
        core = CoordinatorCore(configuration: configuration, logger: logger, planner: planner,
                               clientOutbox: cc, workerOutbox: wc)
    }

    /// Serves until the task is cancelled, then closes every socket.
    public func run() async {
        logger.info("coordinator listening", metadata: [
            "endpoint.clients": "\(clientEndpoint)", "endpoint.workers": "\(workerEndpoint)",
            "stats.url": "\(statsURL ?? "-")", "shards": "\(configuration.shards)",
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
            if let stats = statsSocket { group.addTask { await self.serveStats(stats) } }
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
        statsSocket?.close()
        context.shutdown()
    }

    func pump(_ socket: AsyncSocket, isClient: Bool) async {
        for await frames in socket.messages {
            guard frames.count >= 2, let payload = frames.last else { continue }
            let route = Array(frames.dropLast())
            if isClient {
                await core.handleClient(route: route, payload: payload)
                // Back-pressure: read no more client messages while writes are backed up.
                await core.awaitWriteRoom()
            } else {
                await core.handleWorker(route: route, payload: payload)
            }
        }
    }

    func drain(_ outbox: AsyncStream<Outgoing>, to socket: AsyncSocket) async {
        for await o in outbox {
            let route: [Data]
            switch o.to {
            case .client(let r), .worker(let r): route = r
            }
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

    func serveStats(_ socket: AsyncSocket) async {
        var http = StatsHTTP()
        for await frames in socket.messages {
            guard frames.count == 2 else { continue }
            let connection = frames[0]
            guard let route = http.receive(connection: connection, bytes: frames[1]) else { continue }
            let response: Data
            switch route {
            case .stats:
                let stats = await core.stats()
                response = StatsHTTP.response(status: "200 OK", body: stats.serialized())
            case .health:
                let pong = await core.pong()
                let healthy = pong.servedShards.count == pong.shardCount
                let body = JSONValue.object(["healthy": .bool(healthy), "servedShards": .number(Double(pong.servedShards.count)),
                                             "shardCount": .number(Double(pong.shardCount))]).serialized()
                response = StatsHTTP.response(status: healthy ? "200 OK" : "503 Service Unavailable", body: body)
            case .notFound(let path):
                response = StatsHTTP.response(status: "404 Not Found", body: JSONValue.object(["error": .string("no such path: \(path)")]).serialized())
            case .badRequest:
                response = StatsHTTP.response(status: "400 Bad Request", body: JSONValue.object(["error": .string("expected GET /stats")]).serialized())
            }
            try? await socket.send([connection, response])
            try? await socket.send([connection, Data()])
        }
    }
}
