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
/// and never polls on a short timeout to notice work. A message queued on the
/// owner thread itself (an `intercept` answering) needs no wake-up: the loop
/// takes it before it polls again.
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
    ///   - intercept: called on the owner thread with each received message
    ///     before it is buffered for ``messages``; a message it returns true
    ///     for is taken as handled and never reaches ``messages``. For
    ///     messages whose handling is short and never blocks (hand a job to a
    ///     thread, set a flag): they then cost no hop into Swift concurrency.
    ///     It must not call ``post(_:)`` (which can wait for this very thread)
    ///     nor wait on anything; ``submit(_:accepted:)`` is safe.
    ///   - configure: options, `bind` and `connect`; runs on the owner thread.
    /// - Throws: whatever `configure` throws, or a ``ZMQError`` if the socket
    ///   cannot be created; no thread is left behind then.
    public init(
        context: Context, type: SocketType, name: String = "zmq",
        outboundCapacity: Int = 1024, inboundCapacity: Int = 1024,
        intercept: (@Sendable ([Data]) -> Bool)? = nil,
        configure: @Sendable (Socket) throws -> Void
    ) throws {
        precondition(outboundCapacity > 0 && inboundCapacity > 0, "capacities must be positive")
        let core = try Core(outboundCapacity: outboundCapacity, inboundCapacity: inboundCapacity, intercept: intercept)
        let startup = Startup()
        withoutActuallyEscaping(configure) { configure in
            // The owner thread calls and releases `configure` before it
            // signals `startup.done`, and this init waits for that signal, so
            // the closure does not outlive this call (which
            // `withoutActuallyEscaping` checks).
            let handOff = ConfigureHandOff(configure)
            let thread = Thread {
                limelight_name_thread(name)
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
    /// ZeroMQ accepts a message only for a peer: a DEALER whose one
    /// connection failed its CURVE handshake has none left, and `send` then
    /// waits until a peer connects, which may be never. A sender that must
    /// not wait so uses ``submit(_:accepted:)`` and a time limit of its own.
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
    /// Never call it from a task: it may block its thread. On the owner
    /// thread itself (work it runs, ``deferUntilRead(_:)``) it never blocks,
    /// since only that thread could make room: the message is queued as
    /// ``submit(_:accepted:)`` queues one, outside the window.
    /// - Throws: ``ZMQError/Code/closed`` after ``close()``, `.terminated`
    ///   after ``Context/shutdown()``.
    public func post(_ frames: [Data]) throws {
        if core.isOwnerThread {
            if let error = core.enqueue(Outgoing(id: core.makeID(), frames: frames, completion: .callback { _ in })) { throw error }
            return
        }
        core.posted.reserve()
        if let error = core.enqueue(Outgoing(id: core.makeID(), frames: frames, completion: .posted(core.posted))) {
            throw error
        }
    }

    /// The socket's own thread as a task executor, for
    /// `withTaskExecutorPreference(socket.executor) { … }`: a task that
    /// sends a request and awaits its answer over and over (one client's
    /// requests in a row) then runs between the thread's socket calls. The
    /// answer, read and handed to the task's continuation on this thread,
    /// resumes the task right there, and what it sends next is taken before
    /// the thread polls again: no wake-up of a pool thread to resume it and
    /// none of this thread to send. Keep such a task's work short: while it
    /// runs, the socket reads and sends nothing else. Jobs queued after the
    /// socket has closed run on Dispatch's threads.
    public var executor: any TaskExecutor { core }

    /// Drops the connection to `old` and connects to `new` instead, on the
    /// owner thread (the only one that may call into the socket): how a
    /// worker moves to another coordinator. Messages queued towards `old`
    /// and not yet sent are dropped with its connection.
    public func reconnect(from old: String, to new: String) async throws {
        let core = self.core
        try await withTaskExecutorPreference(core) { () async throws -> Void in
            guard let socket = core.ownerSocket.onOwnerThread(core) else { throw ZMQError.closed("reconnect") }
            try? socket.disconnect(old)
            try socket.connect(new)
        }
    }

    /// Leaves work for the owner thread to do once the messages it has read
    /// are handled and no other waits: for an `intercept` that would hand a
    /// long job (a search) to another thread, when doing it on this one
    /// saves two thread wake-ups (the hand-over and the answer's way back to
    /// this socket), which on a quiet server are a good part of a short
    /// request's time.
    ///
    /// `job` is called on the owner thread, after `intercept` returns and
    /// after every message read with it. Its argument says whether to run
    /// there: true for the last job deferred while handling a lone message
    /// (the read found no other waiting), and reading pauses while it runs;
    /// false for the others, which should go to other threads as they would
    /// have without deferring (they are called first, so they start before
    /// the one that runs here). Requests that come together thus still run
    /// in parallel rather than one after another on the socket's thread.
    /// - Returns: false, and `job` is never called, when called on any
    ///   thread but the owner's.
    public func deferUntilRead(_ job: @escaping @Sendable (_ here: Bool) -> Void) -> Bool {
        core.deferOnOwner(job)
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

    /// Wake-up bytes written to the owner thread's pipe so far (for tests).
    var wakeUpsWritten: Int { core.wakeUpsWritten.load(ordering: .relaxed) }

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
