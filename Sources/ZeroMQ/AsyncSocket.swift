import CZeroMQ
import Dispatch
import Foundation
import Synchronization

/// A socket owned by one dedicated thread, bridged to Swift concurrency.
///
/// ZeroMQ sockets must stay on one thread and their calls block, which suits
/// neither actors nor the cooperative thread pool. So each `AsyncSocket` starts
/// an *owner thread* that makes every zmq call for its socket; tasks talk to it
/// through lock-protected queues: one entry per suspended `send`, and a bounded
/// buffer of received messages. The owner thread sleeps in
/// `zmq_poll` on the socket and on a wake-up pipe, which ``send(_:)``,
/// ``close()`` and a consumer that frees buffer space write to — it never spins
/// and never polls on a short timeout to notice work.
///
/// **Sending.** ``send(_:)`` returns when ZeroMQ has accepted the message
/// (queued it on the pipe to a peer), not when it was delivered. It suspends
/// meanwhile, so a full high-water mark (a slow or absent peer) holds the
/// sender back instead of losing or hoarding messages, and every send learns
/// its own outcome: a ROUTER with ``SocketOption/routerMandatory(_:)`` throws
/// ``ZMQError/Code/hostUnreachable`` from exactly the `send` whose peer is gone.
/// Messages are sent in the order their `send`s were queued. The owner thread
/// works on at most `outboundCapacity` messages at a time; further senders wait
/// their turn in line. ROUTER and STREAM sockets keep order per peer only: a
/// message to a peer whose pipe is full waits (retried on a short back-off, as
/// ZeroMQ has no "this peer is writable again" signal) while messages to other
/// peers go ahead. A PUB socket drops messages at its high-water mark, as
/// ZeroMQ defines, and a ROUTER without `routerMandatory` silently drops
/// messages to unknown peers.
///
/// **Receiving.** ``messages`` yields whole multipart messages from a buffer of
/// `inboundCapacity` messages. When the consumer falls behind and the buffer is
/// full, the owner thread stops reading the socket (it keeps sending), so
/// ZeroMQ's receive high-water mark fills and pushes back to the peers.
///
/// **Ending.** ``close()`` makes later and still-queued sends throw
/// ``ZMQError/Code/closed``, ends ``messages`` after the messages already
/// buffered, and lets the owner thread close the socket (linger 0 unless
/// configured). ``Context/shutdown()`` ends it the same way with
/// ``ZMQError/Code/terminated``, which ``failure`` then reports.
public final class AsyncSocket: Sendable {
    /// The socket's ``Socket/lastEndpoint`` after `configure`, e.g. the port
    /// picked for `tcp://127.0.0.1:0`; `nil` if it neither bound nor connected.
    public let endpoint: String?
    /// The pattern this socket follows.
    public let type: SocketType
    /// The owner thread's name, for debuggers and logs.
    public let name: String

    private let core: Core

    /// Starts the owner thread, creates the socket there and runs `configure`
    /// on it before the loop starts, then returns.
    ///
    /// `init` waits for `configure` to finish (set options, bind, connect:
    /// none of which blocks in ZeroMQ), so keep slow work out of it.
    ///
    /// - Parameters:
    ///   - name: the owner thread's name (Linux shows 15 characters).
    ///   - outboundCapacity: messages the owner thread works on at a time.
    ///   - inboundCapacity: received messages buffered for ``messages``
    ///     before the owner thread stops reading.
    ///   - configure: options, `bind` and `connect`; runs on the owner thread.
    /// - Throws: whatever `configure` throws, or a ``ZMQError`` if the socket
    ///   cannot be created; no thread is left behind then.
    public init(context: Context, type: SocketType, name: String = "zmq",
                outboundCapacity: Int = 1024, inboundCapacity: Int = 1024,
                configure: @Sendable (Socket) throws -> Void) throws {
        precondition(outboundCapacity > 0 && inboundCapacity > 0, "capacities must be positive")
        let core = try Core(outboundCapacity: outboundCapacity, inboundCapacity: inboundCapacity)
        let startup = Startup()
        withoutActuallyEscaping(configure) { configure in
            // The owner thread calls and releases `configure` before it
            // signals `startup.done`, and this init waits for that signal, so
            // the closure does not outlive this call (which
            // `withoutActuallyEscaping` checks).
            let handOff = ConfigureHandOff(configure)
            let thread = Thread {
                Owner.run(core: core, context: context, type: type, startup: startup, configure: handOff)
            }
            thread.name = name
            thread.start()
            startup.done.wait()
        }
        guard let result = startup.result.withLock({ $0 }) else {
            fatalError("AsyncSocket owner thread ended without reporting its start")
        }
        self.endpoint = try result.get()
        self.type = type
        self.name = name
        self.core = core
    }

    deinit {
        core.close()
    }

    /// Queues a multipart message and waits until ZeroMQ has accepted it.
    ///
    /// - Throws: ``ZMQError`` with `.hostUnreachable` (ROUTER with
    ///   `routerMandatory`, peer gone), `.closed` after ``close()``,
    ///   `.terminated` after ``Context/shutdown()``, `.invalidArgument` for an
    ///   empty message, `.notSupported` for a socket type that cannot send;
    ///   `CancellationError` if the task is cancelled before the owner thread
    ///   took the message (once taken, the send completes regardless).
    public func send(_ frames: [Data]) async throws {
        let id = core.makeID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                core.enqueue(Outgoing(id: id, frames: frames, completion: .resume(continuation)))
            }
        } onCancel: {
            core.cancelSend(id)
        }
    }

    /// Queues a multipart message from a plain thread (one that is not
    /// running a task), without waiting for ZeroMQ to accept it.
    ///
    /// For blocking work on threads of its own (a query scanning a shard): an
    /// ``send(_:)`` from there would need a task to await it and a thread to
    /// wait for that task — two thread wake-ups per message on top of the
    /// owner thread's. `post` costs the owner thread's alone. Back-pressure
    /// stays: `post` blocks while 16 posted messages are still unaccepted,
    /// so a slow peer slows the poster rather than filling memory. Messages
    /// keep their order with each other and with `send`s queued after them.
    /// A message the socket cannot take once queued (it closed meanwhile) is
    /// dropped, as one sent to a closed socket is; later posts throw.
    ///
    /// Never call it from a task: it may block its thread.
    /// - Throws: ``ZMQError/Code/closed`` after ``close()``, `.terminated`
    ///   after ``Context/shutdown()``.
    public func post(_ frames: [Data]) throws {
        core.posted.reserve()
        if let error = core.enqueue(Outgoing(id: core.makeID(), frames: frames, completion: .posted(core.posted))) {
            throw error
        }
    }

    /// Queues a multipart message without waiting, and calls `accepted` once
    /// ZeroMQ has accepted it (`nil`) or failed it (the error ``send(_:)``
    /// would throw).
    ///
    /// For senders that must never suspend, such as an actor handing a
    /// peer's next message over: no continuation, no task, so no thread
    /// wake-up beyond the owner thread's. `accepted` runs **on the owner
    /// thread**, between its socket calls: keep it short and never block in
    /// it (queueing the next message with `submit` is fine).
    /// - Returns: `nil` when queued; otherwise the reason it was refused at
    ///   once (closed, terminated), and `accepted` is never called.
    public func submit(_ frames: [Data], accepted: @escaping @Sendable ((any Error)?) -> Void) -> (any Error)? {
        core.enqueue(Outgoing(id: core.makeID(), frames: frames, completion: .callback(accepted)), completeOnRefusal: false)
    }

    /// ``send(_:)-([Data])`` for byte arrays.
    public func send(_ frames: [[UInt8]]) async throws {
        try await send(frames.map { Data($0) })
    }

    /// Inbound multipart messages, in arrival order, each delivered to exactly
    /// one iterator. Ends after ``close()`` (once the buffered messages are
    /// read) or when the socket fails (see ``failure``).
    public var messages: Messages { Messages(core: core) }

    /// Stops the owner thread and closes the socket. Sends not yet handed to
    /// ZeroMQ throw `.closed`; messages already buffered can still be read from
    /// ``messages``, which then ends. Does not wait for the thread: use
    /// ``closeAndWait()`` for that. Idempotent.
    public func close() {
        core.close()
    }

    /// ``close()``, then waits until the owner thread has closed the socket,
    /// so that its endpoint is free again and its context can terminate.
    public func closeAndWait() async {
        core.close()
        await core.waitForExit()
    }

    /// Whether ``close()`` was called or the socket failed.
    public var isClosed: Bool { core.state.withLock { $0.closing } }

    /// Received messages waiting in the inbound buffer (for tests and metrics).
    var bufferedMessageCount: Int { core.state.withLock { $0.inbound.count } }

    /// Why the owner thread stopped on its own (`.terminated` after
    /// ``Context/shutdown()``); `nil` while running or after ``close()``.
    public var failure: ZMQError? { core.state.withLock { $0.failure } }

    /// The inbound message stream of an ``AsyncSocket``.
    ///
    /// A bounded buffer rather than an `AsyncStream`: an `AsyncStream` would
    /// either drop messages or buffer without limit when the consumer is slow;
    /// this one stops the owner thread from reading instead, so ZeroMQ's
    /// high-water marks push back on the peers. Several iterators may consume
    /// concurrently; each message goes to one of them. Cancelling a waiting
    /// iterator ends it (returns `nil`) without losing a message.
    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = [Data]
        public typealias Failure = Never

        let core: Core

        public func makeAsyncIterator() -> Iterator { Iterator(core: core) }

        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = [Data]
            public typealias Failure = Never

            let core: Core

            public mutating func next() async -> [Data]? {
                await core.nextInbound()
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async -> [Data]? {
                await core.nextInbound()
            }
        }
    }
}

// MARK: - STREAM helpers

extension AsyncSocket {
    /// STREAM sockets: writes raw bytes to the TCP connection `peer` (the
    /// routing id that came as the first frame of its messages) and, with
    /// `thenClose`, closes the connection once they are written — an HTTP/1.0
    /// response in one call.
    public func sendRaw(_ bytes: Data, to peer: Data, thenClose: Bool = false) async throws {
        try await send([peer, bytes])
        if thenClose { try await send([peer, Data()]) }
    }
}

extension Socket {
    /// STREAM sockets: writes raw bytes to the TCP connection `peer` and, with
    /// `thenClose`, closes it afterwards (ZeroMQ closes a STREAM connection
    /// when sent an empty frame for it). Blocks like ``send(_:dontWait:)-([Data],_)``.
    ///
    /// The close completes only when this thread next calls into the socket
    /// (`receive`, `Poller.poll`): ZeroMQ finishes tearing the connection down
    /// inside the socket's own calls. A server loop does that anyway; a thread
    /// that sends and then waits on something else leaves the client hanging.
    /// ``AsyncSocket`` polls continually, so there it just works.
    public func sendRaw(_ bytes: Data, to peer: Data, thenClose: Bool = false) throws {
        try send([peer, bytes])
        if thenClose { try send([peer, Data()]) }
    }
}

// MARK: - Shared state

/// Counts messages posted from plain threads that ZeroMQ has not accepted
/// yet, and holds posters back while `window` of them are outstanding.
final class PostedSends: @unchecked Sendable {
    // `inFlight` is guarded by `condition`.
    private let condition = NSCondition()
    private var inFlight = 0
    let window: Int

    init(window: Int) { self.window = window }

    /// Takes a place in the window, waiting for one if it is full.
    func reserve() {
        condition.lock()
        while inFlight >= window { condition.wait() }
        inFlight += 1
        condition.unlock()
    }

    /// Gives a place back: the message was accepted, or failed (the socket
    /// closed; the poster's next `post` learns that from the socket).
    func accepted(_ error: (any Error)?) {
        condition.lock()
        inFlight -= 1
        condition.signal()
        condition.unlock()
    }
}

/// One queued send: its frames and who learns its outcome.
struct Outgoing: Sendable {
    /// Who is told that ZeroMQ accepted the message (or why it did not).
    enum Completion: Sendable {
        /// A suspended ``AsyncSocket/send(_:)``.
        case resume(CheckedContinuation<Void, any Error>)
        /// A plain thread (``AsyncSocket/post(_:)``): a failure is recorded
        /// for its next post, a success only counted.
        case posted(PostedSends)
        /// ``AsyncSocket/submit(_:accepted:)``: a function called on the
        /// owner thread.
        case callback(@Sendable ((any Error)?) -> Void)
    }
    let id: UInt64
    let frames: [Data]
    let completion: Completion

    func complete(_ error: (any Error)?) {
        switch completion {
        case .resume(let continuation):
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        case .posted(let posted):
            posted.accepted(error)
        case .callback(let accepted):
            accepted(error)
        }
    }
}

/// The state tasks and the owner thread share; every field is behind one mutex.
struct SharedState: Sendable {
    var nextID: UInt64 = 0
    /// Sends not yet taken by the owner thread.
    var outbound = FIFO<Outgoing>()
    /// Received messages not yet consumed.
    var inbound = FIFO<[Data]>()
    /// Iterators waiting for a message (only while `inbound` is empty).
    var consumers = FIFO<(id: UInt64, continuation: CheckedContinuation<[Data]?, Never>)>()
    /// close() was called or the socket failed: no more sends are accepted.
    var closing = false
    /// No more messages will be added to `inbound`.
    var inboundFinished = false
    var failure: ZMQError?
    /// The owner thread stopped reading because `inbound` was full and must be
    /// woken when a consumer makes room.
    var readingPaused = false
    /// A wake-up byte is (about to be) in the pipe; later wake-ups can skip
    /// the write. Cleared by the owner thread after draining the pipe.
    var wakePending = false
    var exited = false
    var exitWaiters: [CheckedContinuation<Void, Never>] = []

    /// Returns true if the caller must write a wake-up byte.
    mutating func claimWake() -> Bool {
        if wakePending { return false }
        wakePending = true
        return true
    }
}

/// The part of an ``AsyncSocket`` that its owner thread, its ``AsyncSocket/Messages``
/// and the socket object itself share. Sendable without `@unchecked`: all
/// mutable state is inside a `Mutex`, the rest is immutable.
final class Core: Sendable {
    let state = Mutex(SharedState())
    /// Messages queued by ``AsyncSocket/post(_:)`` and not yet accepted.
    let posted = PostedSends(window: 16)
    let outboundCapacity: Int
    let inboundCapacity: Int
    /// The wake-up pipe: tasks write a byte, the owner thread polls the read end.
    let wakeRead: Int32
    let wakeWrite: Int32

    init(outboundCapacity: Int, inboundCapacity: Int) throws {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { throw ZMQError(errno: errno, operation: "pipe (AsyncSocket wake-up)") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        self.wakeRead = fds[0]
        self.wakeWrite = fds[1]
        self.outboundCapacity = outboundCapacity
        self.inboundCapacity = inboundCapacity
    }

    deinit {
        // Only here: a wake-up written after the owner thread exited must
        // never hit a closed (or reused) descriptor.
        Foundation.close(wakeRead)
        Foundation.close(wakeWrite)
    }

    func makeID() -> UInt64 {
        state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
    }

    func wake() {
        var byte: UInt8 = 1
        // EAGAIN means the pipe is full, hence readable already: nothing lost.
        while write(wakeWrite, &byte, 1) < 0 && errno == EINTR {}
    }

    func drainWakeups() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(wakeRead, $0.baseAddress, $0.count) }
            if n == 64 { continue }
            if n < 0 && errno == EINTR { continue }
            return
        }
    }

    // MARK: Sending side (tasks)

    /// Queues `item`, or completes it with the reason it cannot be sent and
    /// returns that reason.
    @discardableResult
    func enqueue(_ item: Outgoing, completeOnRefusal: Bool = true) -> (any Error)? {
        enum Outcome { case queued(wake: Bool), refused(any Error) }
        let outcome: Outcome = state.withLock { state in
            if state.closing { return .refused(state.failure ?? ZMQError.closed("send")) }
            // Only a suspended `send` belongs to its task; `post` and
            // `submit` are not cancelled with whatever task calls them (an
            // actor method reached from a cancelled timer task must still
            // get its reply out).
            if case .resume = item.completion, Task.isCancelled { return .refused(CancellationError()) }
            state.outbound.append(item)
            return .queued(wake: state.claimWake())
        }
        switch outcome {
        case .queued(let wake):
            if wake { self.wake() }
            return nil
        case .refused(let error):
            if completeOnRefusal { item.complete(error) }
            return error
        }
    }

    func cancelSend(_ id: UInt64) {
        let removed = state.withLock { $0.outbound.removeFirst { $0.id == id } }
        removed?.complete(CancellationError())
    }

    // MARK: Receiving side (tasks)

    func nextInbound() async -> [Data]? {
        // Fast path: a buffered message, without a continuation.
        enum Poll { case message([Data]?, wake: Bool), wait }
        func take(_ state: inout SharedState) -> Poll {
            if let message = state.inbound.popFirst() {
                var wake = false
                if state.readingPaused && state.inbound.count < inboundCapacity {
                    state.readingPaused = false
                    wake = state.claimWake()
                }
                return .message(message, wake: wake)
            }
            if state.inboundFinished { return .message(nil, wake: false) }
            return .wait
        }
        if case .message(let message, let wake) = state.withLock({ take(&$0) }) {
            if wake { self.wake() }
            return message
        }
        let id = makeID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Data]?, Never>) in
                let poll: Poll = state.withLock { state in
                    let poll = take(&state)
                    guard case .wait = poll else { return poll }
                    if Task.isCancelled { return .message(nil, wake: false) }
                    state.consumers.append((id, continuation))
                    return .wait
                }
                if case .message(let message, let wake) = poll {
                    if wake { self.wake() }
                    continuation.resume(returning: message)
                }
            }
        } onCancel: {
            let removed = state.withLock { $0.consumers.removeFirst { $0.id == id } }
            removed?.continuation.resume(returning: nil)
        }
    }

    // MARK: Ending

    func close() {
        let (sends, consumers, wake) = state.withLock { state in
            if state.closing { return ([Outgoing](), [CheckedContinuation<[Data]?, Never>](), false) }
            state.closing = true
            state.inboundFinished = true
            return (state.outbound.removeAll(), state.consumers.removeAll().map(\.continuation),
                    state.claimWake())
        }
        for send in sends { send.complete(ZMQError.closed("send")) }
        for consumer in consumers { consumer.resume(returning: nil) }
        if wake { self.wake() }
    }

    /// Ends everything because the socket failed (`.terminated` mostly).
    func fail(_ error: ZMQError) {
        let (sends, consumers) = state.withLock { state in
            if !state.closing {
                state.closing = true
                state.failure = error
            }
            state.inboundFinished = true
            return (state.outbound.removeAll(), state.consumers.removeAll().map(\.continuation))
        }
        for send in sends { send.complete(error) }
        for consumer in consumers { consumer.resume(returning: nil) }
    }

    func markExited() {
        let waiters = state.withLock { state in
            state.exited = true
            let waiters = state.exitWaiters
            state.exitWaiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitForExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = state.withLock { state in
                if !state.exited { state.exitWaiters.append(continuation) }
                return state.exited
            }
            if exited { continuation.resume() }
        }
    }

    // MARK: Owner-thread side

    /// What the owner thread learns at the top of each turn.
    struct Turn {
        var closing: Bool
        var taken: [Outgoing]
    }

    func beginTurn(drained: Bool, room: Int) -> Turn {
        state.withLock { state in
            if drained { state.wakePending = false }
            if state.closing { return Turn(closing: true, taken: []) }
            return Turn(closing: false, taken: room > 0 ? state.outbound.popFirst(upTo: room) : [])
        }
    }

    /// Whether the owner thread may read another message; if not, it records
    /// that it paused so that the next consumer wakes it.
    func mayReceive() -> Bool {
        state.withLock { state in
            if state.inbound.count < inboundCapacity { return true }
            state.readingPaused = true
            return false
        }
    }

    /// Hands a received message to a waiting iterator or buffers it.
    func deliver(_ message: [Data]) {
        let consumer: CheckedContinuation<[Data]?, Never>? = state.withLock { state in
            if state.inboundFinished { return nil }   // closed meanwhile: discard
            if let consumer = state.consumers.popFirst() { return consumer.continuation }
            state.inbound.append(message)
            return nil
        }
        consumer?.resume(returning: message)
    }
}

// MARK: - Owner thread

/// Carries the non-escaping `configure` closure to the owner thread.
///
/// `@unchecked Sendable` is safe: `body` is set in `init` before the thread
/// starts (`Thread.start` orders that write before the thread runs), then read
/// and cleared exactly once by the owner thread, which afterwards signals the
/// `Startup` semaphore that `AsyncSocket.init` waits on before it returns. No
/// two threads ever touch `body` without that ordering between them.
final class ConfigureHandOff: @unchecked Sendable {
    private var body: ((Socket) throws -> Void)?

    init(_ body: @escaping @Sendable (Socket) throws -> Void) { self.body = body }

    /// Calls the closure once and drops the reference to it.
    func callOnce(_ socket: Socket) throws {
        guard let body else { return }
        self.body = nil
        try body(socket)
    }

    /// Drops the closure uncalled (the socket could not be created).
    func release() { body = nil }
}

/// The owner thread's report of how `configure` went.
final class Startup: Sendable {
    let result = Mutex<Result<String?, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
}

/// The loop the owner thread runs. Lives and dies on that thread.
struct Owner {
    let core: Core
    let socket: Socket
    /// Sends taken from the shared queue, in order, not yet accepted by ZeroMQ.
    var pending: [Outgoing] = []

    static func run(core: Core, context: Context, type: SocketType, startup: Startup,
                    configure: ConfigureHandOff) {
        let socket: Socket
        do {
            socket = try Socket(context: context, type: type)
        } catch {
            configure.release()
            core.fail(error as? ZMQError ?? ZMQError.closed())
            core.markExited()
            startup.result.withLock { $0 = .failure(error) }
            startup.done.signal()
            return
        }
        do {
            try configure.callOnce(socket)
            let endpoint = try? socket.lastEndpoint
            startup.result.withLock { $0 = .success(endpoint?.isEmpty == false ? endpoint : nil) }
        } catch {
            socket.close()
            core.fail(error as? ZMQError ?? ZMQError.closed())
            core.markExited()
            startup.result.withLock { $0 = .failure(error) }
            startup.done.signal()
            return
        }
        startup.done.signal()

        var owner = Owner(core: core, socket: socket)
        let error = owner.loop()
        // Sends the owner thread had taken: they were not accepted by ZeroMQ.
        for item in owner.pending {
            item.complete(error ?? ZMQError.closed("send"))
        }
        owner.pending = []
        if let error { core.fail(error) }
        socket.close()
        core.markExited()
    }

    /// How the last attempt to flush `pending` ended.
    enum SendState {
        /// Nothing left, or nothing blocked.
        case idle
        /// The socket has no room for any message: wait for POLLOUT.
        case waitWritable
        /// Some ROUTER/STREAM peers are full: retry after a back-off.
        case retryLater
    }

    /// Runs until close (returns nil) or a fatal socket error (returns it).
    mutating func loop() -> ZMQError? {
        let canReceive = ![.pub, .push].contains(socket.type)
        var drained = false
        var socketReadable = true
        var socketWritable = true
        var sendState = SendState.idle
        var retryDelay = 1   // milliseconds, doubled while ROUTER peers stay full

        while true {
            let turn = core.beginTurn(drained: drained, room: core.outboundCapacity - pending.count)
            if turn.closing { return nil }
            pending.append(contentsOf: turn.taken)

            // Send: unless the socket said it is full and has not said otherwise since.
            if !pending.isEmpty && (sendState != .waitWritable || socketWritable || !turn.taken.isEmpty) {
                do {
                    sendState = try flush()
                } catch {
                    return error
                }
            } else if pending.isEmpty {
                sendState = .idle
            }

            // Receive a batch, as long as the consumer keeps up.
            var paused = false
            var batchFull = false
            if canReceive && socketReadable {
                var received = 0
                while true {
                    guard core.mayReceive() else { paused = true; break }
                    if received == 64 { batchFull = true; break }
                    do {
                        guard let message = try socket.receive(dontWait: true) else { break }
                        core.deliver(message)
                        received += 1
                    } catch let error as ZMQError {
                        if error.code == .interrupted { continue }
                        return error
                    } catch {
                        return ZMQError.closed("receive")
                    }
                }
            }
            if batchFull {
                // More may be waiting: go round again without sleeping, so that
                // queued sends get their turn between batches.
                drained = false
                socketReadable = true
                continue
            }

            var events: PollEvents = []
            if canReceive && !paused { events.insert(.readable) }
            if sendState == .waitWritable { events.insert(.writable) }
            var items = [PollItem(socket, events: events), PollItem(fileDescriptor: core.wakeRead)]
            let timeout: Duration? = sendState == .retryLater ? .milliseconds(retryDelay) : nil
            let ready: Int
            do {
                ready = try Poller.poll(&items, timeout: timeout)
            } catch let error as ZMQError {
                if error.code == .interrupted { drained = false; continue }
                return error
            } catch {
                return ZMQError.closed("poll")
            }
            if sendState == .retryLater {
                retryDelay = ready == 0 ? min(retryDelay * 2, 64) : retryDelay
            } else {
                retryDelay = 1
            }
            socketReadable = items[0].ready.contains(.readable)
            socketWritable = items[0].ready.contains(.writable)
            drained = items[1].ready.contains(.readable)
            if drained { core.drainWakeups() }
        }
    }

    /// Offers every pending message to ZeroMQ without blocking and resumes the
    /// senders of those it accepted or rejected.
    mutating func flush() throws(ZMQError) -> SendState {
        let routed = socket.type.routesByFirstFrame
        var blockedPeers = Set<Data>()
        var blocked = false
        var kept: [Outgoing] = []
        var outcomes: [(Outgoing, ZMQError?)] = []
        var fatal: ZMQError?
        defer {
            for (item, error) in outcomes {
                item.complete(error)
            }
        }
        for (index, item) in pending.enumerated() {
            if fatal != nil || blocked {
                kept.append(contentsOf: pending[index...])
                break
            }
            let peer = routed ? item.frames.first : nil
            if let peer, blockedPeers.contains(peer) {
                kept.append(item)   // keeps per-peer order behind the blocked one
                continue
            }
            do {
                if try socket.send(item.frames, dontWait: true) {
                    outcomes.append((item, nil))
                } else {
                    kept.append(item)
                    if let peer { blockedPeers.insert(peer) } else { blocked = true }
                }
            } catch let error as ZMQError {
                if error.code == .terminated {
                    kept.append(item)
                    fatal = error
                } else {
                    outcomes.append((item, error))
                }
            } catch {
                outcomes.append((item, ZMQError.closed("send")))
            }
        }
        pending = kept
        if let fatal { throw fatal }
        if blocked { return .waitWritable }
        if !blockedPeers.isEmpty { return .retryLater }
        return .idle
    }
}
