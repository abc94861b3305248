import CZeroMQ
import Dispatch
import Foundation
import LimelightConcurrency
import Synchronization

// The state an AsyncSocket's tasks, plain-thread posters and owner thread share
// (see AsyncSocket.swift for the design).

// MARK: - Shared state

/// Counts messages posted from plain threads that ZeroMQ has not accepted
/// yet, and holds posters back while `window` of them are outstanding.
final class PostedSends: Sendable {
    /// Posted messages not yet accepted; a poster waits on it for room.
    private let inFlight = ConditionLock(0)
    let window: Int

    init(window: Int) { self.window = window }

    /// Takes a place in the window, waiting for one if it is full.
    func reserve() {
        inFlight.withLock { n in
            while n.state >= window { n.wait() }
            n.state += 1
        }
    }

    /// Gives a place back: the message was accepted, or failed (the socket
    /// closed; the poster's next `post` learns that from the socket).
    func accepted(_ error: (any Error)?) {
        inFlight.withLock { n in
            n.state -= 1
            n.signal()
        }
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

    /// The owner thread, once its loop runs (see ``queuedByOwner``).
    var ownerThread: pthread_t?
    /// A message was queued on the owner thread itself (by `intercept`,
    /// which answers on that thread): no wake-up byte was written, and the
    /// loop goes round once more instead of polling.
    ///
    /// Why: a coordinator answers most requests from `intercept`; a byte
    /// written to its own pipe would cost a write, a poll that returns at
    /// once and a read for every reply, about a twentieth of a ping's CPU.
    var queuedByOwner = false
    /// Work an `intercept` left for the owner thread to do once nothing
    /// received waits (``AsyncSocket/deferUntilRead(_:)``).
    var deferred: [@Sendable (_ here: Bool) -> Void] = []
    /// Jobs of tasks that prefer this socket's thread (``AsyncSocket/executor``).
    var jobs: [UnownedJob] = []
    /// The owner thread runs no more jobs: they go to Dispatch's threads.
    var jobsEnded = false

    /// Whether `thread` is the owner thread.
    func isOwner(_ thread: pthread_t) -> Bool {
        ownerThread.map { pthread_equal($0, thread) != 0 } ?? false
    }

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
    /// The socket, for jobs that run on the owner thread (``AsyncSocket/reconnect(from:to:)``).
    let ownerSocket = OwnerSocket()
    let outboundCapacity: Int
    let inboundCapacity: Int
    /// The wake-up pipe: tasks write a byte, the owner thread polls the read end.
    let wakeRead: Int32
    let wakeWrite: Int32

    /// See `AsyncSocket.init(intercept:)`: runs on the owner thread.
    let intercept: (@Sendable ([Data]) -> Bool)?

    init(outboundCapacity: Int, inboundCapacity: Int, intercept: (@Sendable ([Data]) -> Bool)? = nil) throws {
        self.intercept = intercept
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

    /// Wake-up bytes written so far (for tests).
    let wakeUpsWritten = Atomic<Int>(0)

    func wake() {
        wakeUpsWritten.add(1, ordering: .relaxed)
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
            if state.isOwner(pthread_self()) {
                state.queuedByOwner = true
                return .queued(wake: false)
            }
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
            return (
                state.outbound.removeAll(), state.consumers.removeAll().map(\.continuation),
                state.claimWake()
            )
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

    /// Marks the calling thread as the owner thread (see ``SharedState/queuedByOwner``).
    func ownerStarts() {
        let me = pthread_self()
        state.withLock { $0.ownerThread = me }
    }

    /// Whether a message was queued on the owner thread since the last
    /// call; clears it.
    func takeQueuedByOwner() -> Bool {
        state.withLock { state in
            defer { state.queuedByOwner = false }
            return state.queuedByOwner
        }
    }

    /// Queues `job` for the owner thread's next pause in reading; false when
    /// called on any other thread.
    func deferOnOwner(_ job: @escaping @Sendable (_ here: Bool) -> Void) -> Bool {
        let me = pthread_self()
        return state.withLock { state in
            guard state.isOwner(me) else { return false }
            state.deferred.append(job)
            return true
        }
    }

    /// Runs the jobs of tasks that prefer this thread (owner thread), and
    /// those they enqueue in turn, until none is left.
    func runJobs() {
        while true {
            let jobs = state.withLock { state in
                defer { state.jobs = [] }
                return state.jobs
            }
            if jobs.isEmpty { return }
            for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }

    /// The owner thread is done: jobs queued now or later run elsewhere.
    func endJobs() {
        let left = state.withLock { state in
            state.jobsEnded = true
            defer { state.jobs = [] }
            return state.jobs
        }
        for job in left { runElsewhere(job) }
    }

    private func runElsewhere(_ job: UnownedJob) {
        let executor = asUnownedTaskExecutor()
        DispatchQueue.global().async { job.runSynchronously(on: executor) }
    }

    /// Whether the calling thread is the owner thread.
    var isOwnerThread: Bool {
        let me = pthread_self()
        return state.withLock { $0.isOwner(me) }
    }

    /// Takes the deferred jobs (owner thread).
    func takeDeferred() -> [@Sendable (_ here: Bool) -> Void] {
        state.withLock { state in
            defer { state.deferred = [] }
            return state.deferred
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
            if state.inboundFinished { return nil }  // closed meanwhile: discard
            if let consumer = state.consumers.popFirst() { return consumer.continuation }
            state.inbound.append(message)
            return nil
        }
        consumer?.resume(returning: message)
    }
}

// MARK: - Tasks on the owner thread

/// The owner thread as a task executor (``AsyncSocket/executor``): a job
/// queued from that thread costs nothing (the loop takes it before it polls
/// again), one queued from elsewhere a wake-up byte, as a send does.
extension Core: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let me = pthread_self()
        let (queued, wake) = state.withLock { state -> (Bool, Bool) in
            if state.jobsEnded { return (false, false) }
            state.jobs.append(job)
            if state.isOwner(me) {
                state.queuedByOwner = true
                return (true, false)
            }
            return (true, state.claimWake())
        }
        if !queued { runElsewhere(job) }
        if wake { self.wake() }
    }
}
