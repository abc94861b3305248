import ClusterAuth
import Foundation
import Logging
import Synchronization
import WireProtocol
import ZeroMQ

/// What a worker's configuration tells its link: the indexer's and the
/// query worker's both conform, so the link is set up one way for both.
package protocol WorkerLinkConfiguration: Sendable {
    var coordinator: String { get }
    var data: String { get }
    var shards: [Int] { get }
    var workerID: String { get }
    var heartbeatMs: Int { get }
    var livenessMs: Int { get }
    var credentials: WorkerCredentials { get }
    /// See `Body.Register.replica`; nil: this host and data folder.
    var replica: String? { get }
    /// Where the link's socket thread and ZeroMQ's I/O thread run.
    var socketPlacement: ThreadPlacement { get }
}

/// A worker's connection to the coordinator: registration, heartbeats, and
/// re-registration when the coordinator restarts or forgets us.
///
/// A DEALER socket with a routing id of the process's own (random, so it
/// cannot be guessed from the worker id), so replies find the worker again
/// after a reconnect. Registration answers the coordinator's challenge with
/// a proof made from the cluster secret (``WorkerCredentials``). ZeroMQ
/// reconnects the TCP link on its own; this adds the application's half of
/// the Paranoid Pirate pattern: the worker heartbeats, and when the
/// coordinator has been silent for the liveness period it registers again.
package final class WorkerLink: Sendable {
    package let workerID: String
    let registration: Body.Register
    let context: Context
    let socket: AsyncSocket
    let logger: Logger
    let heartbeatMs: Int
    let livenessMs: Int
    let state: LinkState
    /// Requests answered on the socket's own thread (``handleInline(_:)``).
    let inline: InlineHandler
    let reporter = StatusReporter()
    let credentials: WorkerCredentials
    let sequences = SequenceReporter()
    /// What the registrations allow of numbered changes (an indexer's).
    let registrations = RegistrationGate()
    /// The coordinators this worker may register with, and the one it is
    /// connected to (see ``CoordinatorEndpoints``).
    let targets: Mutex<CoordinatorEndpoints>

    /// Connects as `role` with what a worker's configuration says.
    package convenience init(role: Body.Register.Role, configuration c: some WorkerLinkConfiguration, logger: Logger) throws {
        try self.init(
            coordinator: c.coordinator, role: role, workerID: c.workerID, shards: c.shards, logger: logger,
            heartbeatMs: c.heartbeatMs, livenessMs: c.livenessMs, credentials: c.credentials,
            replica: c.replica ?? defaultReplicaName(data: c.data), placement: c.socketPlacement)
    }

    /// Connects as `role` serving `shards`; the link owns its ZeroMQ context.
    package init(
        coordinator: String, role: Body.Register.Role, workerID: String, shards: [Int], logger: Logger,
        heartbeatMs: Int = 1000, livenessMs: Int = 3000, credentials: WorkerCredentials = WorkerCredentials(),
        replica: String? = nil, placement: ThreadPlacement = .anywhere
    ) throws {
        var registration = Body.Register(
            role: role, worker: workerID, shards: shards,
            host: ProcessInfo.processInfo.hostName, pid: Int(getpid()))
        registration.replica = replica
        let context = try Context(ioThreads: 1, placement: placement)
        self.context = context
        self.workerID = workerID
        self.registration = registration
        self.logger = logger
        self.heartbeatMs = heartbeatMs
        self.livenessMs = livenessMs
        self.credentials = credentials
        let targets = CoordinatorEndpoints(coordinator)
        self.targets = Mutex(targets)
        let first = targets.current
        let id = WorkerCredentials.routingID(workerID: workerID)
        let state = LinkState()
        let inline = InlineHandler()
        let registrations = self.registrations
        self.state = state
        self.inline = inline
        socket = try AsyncSocket(
            context: context, type: .dealer, name: "worker-\(registration.worker)",
            intercept: { frames in
                // The coordinator is heard when its message arrives, not when the
                // link's loop gets to it: an indexer's loop waits for each write
                // to commit, and long writes on a loaded machine made the worker
                // take the coordinator for silent, stop heartbeating to register
                // again, and be declared dead by the coordinator in turn.
                state.touch()
                // Taken here, not in the loop: the loop may be waiting on a
                // change the fence holds until this answer.
                if let payload = frames.last, RegistrationGate.mayBeRegistered(payload),
                    case .registered(let r)? = try? Envelope.decode(payload).body
                {
                    registrations.accepted(epoch: r.epoch)
                }
                guard inline.isSet, let payload = frames.last,
                    let envelope = try? Envelope.decode(payload)
                else { return false }
                return inline.handle(envelope)
            }
        ) { s in
            if let curve = credentials.curve { try s.set(curve.socketOptions) }
            try s.set(.routingID(id))
            try s.set(.linger(milliseconds: 0))
            try s.set(.sendHighWaterMark(10_000))
            try s.set(.receiveHighWaterMark(10_000))
            try s.set(.reconnectInterval(milliseconds: 100))
            try s.set(.reconnectIntervalMax(milliseconds: 1000))
            // ZMTP heartbeats notice a dead TCP link on their own; the
            // application heartbeats above notice a dead *process* on a live link.
            try s.set(.heartbeatInterval(milliseconds: Int32(heartbeatMs)))
            try s.set(.heartbeatTimeout(milliseconds: Int32(livenessMs)))
            try s.connect(first)
        }
    }

    package func send(_ id: String, _ body: Body) async {
        do { try await socket.send([Envelope(id: id, body: body).encoded()]) } catch {
            logger.debug("could not send to the coordinator", metadata: ["error": "\(error)"])
        }
    }

    /// ``send(_:_:)`` without waiting at all, from any thread — the socket's
    /// own included, so an inline handler (``handleInline(_:)``) answers with
    /// it. The message joins the socket's queue; a failure is logged.
    package func sendNow(_ id: String, _ body: Body) {
        let logger = self.logger
        let refused = socket.submit([Envelope(id: id, body: body).encoded()]) { error in
            if let error { logger.debug("could not send to the coordinator", metadata: ["error": "\(error)"]) }
        }
        if let refused { logger.debug("could not send to the coordinator", metadata: ["error": "\(refused)"]) }
    }

    /// Sets the handler that sees each request on the socket's own thread
    /// before it enters Swift concurrency: it returns true for the requests
    /// it has dealt with (which then skip `run`'s `handle`), false to pass
    /// one on. It runs on the thread that reads the socket, so it must only
    /// hand work off and never wait; it answers with ``sendNow(_:_:)``.
    /// A query worker takes its shard queries this way: the hop from the
    /// socket's thread to a task and back to one of its own threads cost a
    /// thread wake-up per query for nothing (`limelight-bench path`).
    package func handleInline(_ handler: @escaping @Sendable (Envelope) -> Bool) {
        inline.set(handler)
    }

    /// Leaves `job` for the socket's thread once the messages it read are
    /// handled (``AsyncSocket/deferUntilRead(_:)``): how a query worker runs
    /// a lone search on the thread that read it. False on any other thread.
    package func deferUntilRead(_ job: @escaping @Sendable (_ here: Bool) -> Void) -> Bool {
        socket.deferUntilRead(job)
    }

    /// ``send(_:_:)`` from one of the worker's own threads (never a task):
    /// queues the message without a task or a wait per message (see
    /// ``AsyncSocket/post(_:)``), encoding it on the calling thread.
    package func post(_ id: String, _ body: Body) {
        do { try socket.post([Envelope(id: id, body: body).encoded()]) } catch {
            logger.debug("could not send to the coordinator", metadata: ["error": "\(error)"])
        }
    }

    func register() async {
        var r = registration
        // Before the numbers are read: a change applied after them waits for
        // the answer (``RegistrationFence``).
        registrations.sent()
        r.sequences = await sequences.current?()
        state.registrationSent()
        await send("reg-\(workerID)", .register(r))
    }

    /// Runs the link: registers, heartbeats, and hands every other message to
    /// `handle` in arrival order. Returns when the task is cancelled or the socket closes.
    package func run(handle: @escaping @Sendable (Envelope) async -> Void) async {
        await register()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    // The coordinator's pace wins over ours once it has told us.
                    let (beat, liveness) = self.state.pace(default: (self.heartbeatMs, self.livenessMs))
                    try? await Task.sleep(for: .milliseconds(beat))
                    if Task.isCancelled { break }
                    if self.state.silentFor() > Double(liveness) / 1000 {
                        self.logger.notice("coordinator silent; registering again", metadata: ["worker": "\(self.workerID)"])
                        self.state.touch()
                        await self.move { $0.silent() }
                        await self.register()
                    } else {
                        let status = await self.reporter.current?()
                        await self.send("hb", .heartbeat(Body.Heartbeat(worker: self.workerID, status: status)))
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
                        self.state.setRegistered(true, heartbeatMs: r.heartbeatMs)
                        self.targets.withLock { $0.registered() }
                        self.logger.info(
                            "registered with the coordinator", metadata: ["worker": "\(self.workerID)", "shards.total": "\(r.shardCount)"])
                    case .challenge(let c):
                        await self.answer(c, id: envelope.id)
                    case .error(let e) where e.code == "unregistered":
                        // Every answer a coordinator that does not know this
                        // worker gets (a burst of acknowledgements after a
                        // restart) comes back `unregistered`; one registration
                        // on its way answers them all, and each more would
                        // start the worker's catch-up again.
                        if self.state.awaitsRegistration(within: .milliseconds(self.livenessMs)) { continue }
                        await self.register()
                    case .error(let e) where e.code == "not_active":
                        // An answer to a registration: the next one may go at once.
                        if envelope.id.hasPrefix("reg-") { self.state.registrationAnswered() }
                        // A standby coordinator: not a refusal of this worker. The
                        // heartbeat loop asks again (each beat is answered
                        // `unregistered`, and the worker registers), so it
                        // registers once this coordinator takes over.
                        self.logger.notice(
                            "the coordinator is not active", metadata: ["worker": "\(self.workerID)", "error": "\(e.message)"])
                        if let active = e.active {
                            await self.move { $0.redirected(to: active) }
                            await self.register()
                        } else if envelope.id == "hb" {
                            // The coordinator it is registered with no longer
                            // leads (deposed) and names no successor: the next
                            // one, as if it were silent.
                            await self.move { $0.silent() }
                            await self.register()
                        }
                    case .error(let e) where envelope.id.hasPrefix("reg-"):
                        // The coordinator refused our registration (e.g. shards out of range): say so loudly.
                        self.logger.error("the coordinator refused this worker", metadata: ["error": "\(e.message)"])
                        self.state.setRefusal(e.message)
                        // Retrying cannot help (the flags are wrong): stop, so the process exits and says why.
                        self.close()
                    default:
                        await handle(envelope)
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Registers again with the proof the challenge asks for; without a
    /// secret to make it, refuses itself (the process exits and says why).
    /// Connects to the coordinator `decide` picks, when it picks another.
    func move(_ decide: (inout CoordinatorEndpoints) -> CoordinatorEndpoints.Move?) async {
        guard let m = targets.withLock({ decide(&$0) }) else { return }
        state.setRegistered(false)
        logger.notice(
            "moving to another coordinator", metadata: ["worker": "\(workerID)", "coordinator.from": "\(m.from)", "coordinator.to": "\(m.to)"])
        do { try await socket.reconnect(from: m.from, to: m.to) } catch {
            logger.error("cannot connect to another coordinator", metadata: ["coordinator.to": "\(m.to)", "error": "\(error)"])
        }
    }

    func answer(_ challenge: Body.Challenge, id: String) async {
        switch credentials.secret() {
        case .success(let secret):
            var r = registration
            // The proven registration is the one the coordinator acts on: it
            // carries the shards' sequence numbers too (the catch-up starts there).
            r.sequences = await sequences.current?()
            r.proof = secret.proof(nonce: challenge.nonce, worker: r.worker, role: r.role.rawValue, shards: r.shards)
            r.nonce = challenge.nonce
            await send(id, .register(r))
        case .failure(let why):
            let message = "the coordinator asks for proof of the cluster secret, and this worker has none: \(why.description)"
            logger.error("cannot register", metadata: ["worker": "\(workerID)", "error": "\(message)"])
            state.setRefusal(message)
            close()
        }
    }

    /// Serves until the task is cancelled: the link's own loops, `handle` for
    /// each request, and `alongside` (periodic work such as purging); then
    /// closes the socket and the context.
    package func serve(
        handle: @escaping @Sendable (Envelope) async -> Void,
        alongside: [@Sendable () async -> Void] = []
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.run(handle: handle) }
            for work in alongside { group.addTask { await work() } }
            group.addTask { while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) } }
            await group.next()
            close()
            group.cancelAll()
        }
    }

    /// Sets what each heartbeat reports of the worker (its `WorkerStatus`).
    package func reportStatus(_ provider: @escaping @Sendable () async -> WorkerStatus) {
        reporter.set(provider)
    }

    /// Sets what each registration reports of the shards' sequence numbers
    /// (an indexer's; see `ShardSequence`), read afresh each time it registers.
    package func reportSequences(_ provider: @escaping @Sendable () async -> [ShardSequence]) {
        sequences.set(provider)
    }

    package var isRegistered: Bool { state.registered }
    /// Why the coordinator refused this worker, once it has; serving has then stopped.
    package var refusal: String? { state.refusal }

    package func close() {
        socket.close()
        context.shutdown()
    }
}

/// The link's small mutable state, shared by its loops.
final class LinkState: Sendable {
    private struct State {
        var lastHeard = Date()
        var registered = false
        var refusal: String?
        var heartbeatMs: Int?
        /// When the registration now unanswered was sent.
        var registrationSentAt: ContinuousClock.Instant?
    }
    private let state = Mutex(State())

    func registrationSent() { state.withLock { $0.registrationSentAt = .now } }
    func registrationAnswered() { state.withLock { $0.registrationSentAt = nil } }

    /// Whether a registration sent less than `window` ago is still unanswered.
    func awaitsRegistration(within window: Duration) -> Bool {
        state.withLock { s in s.registrationSentAt.map { $0.duration(to: .now) < window } ?? false }
    }

    func touch() { state.withLock { $0.lastHeard = Date() } }
    func silentFor() -> TimeInterval { state.withLock { Date().timeIntervalSince($0.lastHeard) } }

    func setRegistered(_ v: Bool, heartbeatMs: Int? = nil) {
        state.withLock {
            $0.registered = v
            if v { $0.registrationSentAt = nil }
            if let heartbeatMs, heartbeatMs > 0 { $0.heartbeatMs = heartbeatMs }
        }
    }

    /// Heartbeat interval and liveness period: the coordinator's when known
    /// (it expects a beat at least that often), otherwise our own.
    func pace(default d: (Int, Int)) -> (Int, Int) {
        guard let hb = state.withLock({ $0.heartbeatMs }) else { return d }
        return (hb, max(d.1, hb * 3))
    }
    var registered: Bool { state.withLock { $0.registered } }
    func setRefusal(_ s: String) { state.withLock { $0.refusal = s } }
    var refusal: String? { state.withLock { $0.refusal } }
}

/// A closure set once the service is built, read by the link's loops: the
/// inline request handler, and where heartbeats and registrations get the
/// worker's status and sequence numbers from.
final class LateBound<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    func set(_ v: Value) { value.withLock { $0 = v } }
    var current: Value? { value.withLock { $0 } }
}

/// The inline request handler of a ``WorkerLink``, set once the service is built.
typealias InlineHandler = LateBound<@Sendable (Envelope) -> Bool>

extension LateBound where Value == @Sendable (Envelope) -> Bool {
    var isSet: Bool { current != nil }
    func handle(_ e: Envelope) -> Bool { current?(e) ?? false }
}

/// Where heartbeats get the worker's status from, once the service has said.
typealias StatusReporter = LateBound<@Sendable () async -> WorkerStatus>

/// Where registrations get an indexer's sequence numbers from.
typealias SequenceReporter = LateBound<@Sendable () async -> [ShardSequence]>

/// Where a worker keeps shard `n` inside its data folder.
package func shardPath(data: String, shard: Int) -> String {
    (data as NSString).appendingPathComponent("shard-\(shard).sqlite")
}
