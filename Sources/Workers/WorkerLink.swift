import Foundation
import Logging
import WireProtocol
import ZeroMQ

/// A worker's connection to the coordinator: registration, heartbeats, and
/// re-registration when the coordinator restarts or forgets us.
///
/// A DEALER socket with a stable routing id (the worker id), so replies find
/// the worker again after a reconnect. ZeroMQ reconnects the TCP link on its
/// own; this adds the application's half of the Paranoid Pirate pattern: the
/// worker heartbeats, and when the coordinator has been silent for the
/// liveness period it registers again.
public final class WorkerLink: Sendable {
    public let workerID: String
    let registration: Body.Register
    let socket: AsyncSocket
    let logger: Logger
    let heartbeatMs: Int
    let livenessMs: Int
    let state = LinkState()

    public init(context: Context, coordinator: String, registration: Body.Register, logger: Logger,
                heartbeatMs: Int = 1000, livenessMs: Int = 3000) throws {
        self.workerID = registration.worker
        self.registration = registration
        self.logger = logger
        self.heartbeatMs = heartbeatMs
        self.livenessMs = livenessMs
        let id = Array(registration.worker.utf8)
        socket = try AsyncSocket(context: context, type: .dealer, name: "worker-\(registration.worker)") { s in
            try s.set(.routingID(id))
            try s.set(.linger(milliseconds: 0))
            try s.set(.sendHighWaterMark(10_000))
            try s.set(.receiveHighWaterMark(10_000))
            try s.set(.reconnectInterval(milliseconds: 100))
            try s.set(.reconnectIntervalMax(milliseconds: 1000))
            try s.connect(coordinator)
        }
    }

    public func send(_ id: String, _ body: Body) async {
        do { try await socket.send([Envelope(id: id, body: body).encoded()]) } catch {
            logger.debug("could not send to the coordinator", metadata: ["error": "\(error)"])
        }
    }

    func register() async {
        await send("reg-\(workerID)", .register(registration))
    }

    /// Runs the link: registers, heartbeats, and hands every other message to
    /// `handle` in arrival order. Returns when the task is cancelled or the socket closes.
    public func run(handle: @escaping @Sendable (Envelope) async -> Void) async {
        await register()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(self.heartbeatMs))
                    if Task.isCancelled { break }
                    if self.state.silentFor() > Double(self.livenessMs) / 1000 {
                        self.logger.notice("coordinator silent; registering again", metadata: ["worker": "\(self.workerID)"])
                        self.state.touch()
                        await self.register()
                    } else {
                        await self.send("hb", .heartbeat(Body.Heartbeat(worker: self.workerID)))
                    }
                }
            }
            group.addTask {
                for await frames in self.socket.messages {
                    guard let payload = frames.last else { continue }
                    self.state.touch()
                    let envelope: Envelope
                    do throws(ProtocolError) { envelope = try Envelope.decode(payload) } catch {
                        self.logger.notice("unreadable message from the coordinator", metadata: ["error": "\(error)"])
                        if let id = error.id { await self.send(id, .error(error.wire)) }
                        continue
                    }
                    switch envelope.body {
                    case .heartbeat: continue
                    case .registered(let r):
                        self.state.setRegistered(true)
                        self.logger.info("registered with the coordinator", metadata: ["worker": "\(self.workerID)", "shards.total": "\(r.shardCount)"])
                    case .error(let e) where e.code == "unregistered":
                        await self.register()
                    case .error(let e) where envelope.id.hasPrefix("reg-"):
                        // The coordinator refused our registration (e.g. shards out of range): say so loudly.
                        self.logger.error("the coordinator refused this worker", metadata: ["error": "\(e.message)"])
                        self.state.setRefusal(e.message)
                    default:
                        await handle(envelope)
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    public var isRegistered: Bool { state.registered }
    public var refusal: String? { state.refusal }

    public func close() {
        socket.close()
    }
}

/// The link's small mutable state, shared by its loops under a lock.
final class LinkState: @unchecked Sendable {
    // Every field is read and written only while holding `lock`.
    private let lock = NSLock()
    private var lastHeard = Date()
    private var _registered = false
    private var _refusal: String?

    func touch() { lock.lock(); lastHeard = Date(); lock.unlock() }
    func silentFor() -> TimeInterval { lock.lock(); defer { lock.unlock() }; return Date().timeIntervalSince(lastHeard) }
    func setRegistered(_ v: Bool) { lock.lock(); _registered = v; lock.unlock() }
    var registered: Bool { lock.lock(); defer { lock.unlock() }; return _registered }
    func setRefusal(_ s: String) { lock.lock(); _refusal = s; lock.unlock() }
    var refusal: String? { lock.lock(); defer { lock.unlock() }; return _refusal }
}

/// Runs blocking work (SQLite) on a thread of its own, never on Swift's cooperative pool.
final class SerialExecutor: @unchecked Sendable {
    // DispatchQueue is thread-safe; the class only wraps it.
    let queue: DispatchQueue
    init(label: String) { queue = DispatchQueue(label: label) }

    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { cont in
            queue.async {
                do { cont.resume(returning: try work()) } catch { cont.resume(throwing: error) }
            }
        }
    }
}

/// Where a worker keeps shard `n` inside its data folder.
public func shardPath(data: String, shard: Int) -> String {
    (data as NSString).appendingPathComponent("shard-\(shard).sqlite")
}
