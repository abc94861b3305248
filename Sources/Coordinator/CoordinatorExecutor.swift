import Foundation
import Synchronization

/// The executor of the ``CoordinatorCore`` actor: a lock, rather than a
/// queue, so that a message is handled on the thread that read it.
///
/// Every decision of the coordinator is a synchronous method of its actor.
/// With the default executor each message would cross threads twice before
/// it was even looked at: the socket's thread would hand it to a task
/// through a stream (waking a thread of the cooperative pool), and the task
/// would hop onto the actor. Such wake-ups would then be most of a query's
/// CPU in the coordinator (`limelight-bench path` shows the path), not
/// deciding. Here a socket's thread
/// takes the lock and calls the actor's method in place (``run(_:)``, inside
/// `assumeIsolated`); the lock gives exactly the mutual exclusion an actor
/// promises, whichever thread holds it.
///
/// Work that arrives as Swift concurrency jobs (timers, the HTTP endpoint's
/// `await core.stats()`, the sweep) is run by a thread of the executor's own,
/// under the same lock. ``checkIsolated()`` lets the runtime confirm that
/// code running under the lock is on the actor, which `assumeIsolated`
/// asks.
///
/// `@unchecked Sendable`: an executor the runtime hands jobs to from any
/// thread; its state is the `Exclusion` and the `JobQueue`, each guarded by
/// its own Foundation `NSCondition` (a thread waits on it for its turn).
final class CoordinatorExecutor: SerialExecutor, @unchecked Sendable {
    private let exclusion = Exclusion()
    private let jobs = JobQueue()

    init(name: String = "coordinator") {
        let (jobs, exclusion) = (self.jobs, self.exclusion)
        // The thread holds the queue and the lock, not the executor, so the
        // executor's deinit can stop it.
        let thread = Thread {
            while let job = jobs.next() {
                exclusion.run { job.run() }
            }
        }
        thread.name = name
        thread.start()
    }

    deinit { jobs.stop() }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        jobs.add { unowned.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Runs `body` as the actor, on the calling thread: waits while another
    /// thread is the actor. Never call it from code already running as the
    /// actor (the lock is not re-entrant).
    func run<T>(_ body: () -> T) -> T { exclusion.run(body) }

    /// Whether the calling thread holds the lock, i.e. runs as the actor.
    var isHeldByCurrentThread: Bool { exclusion.isHeldByCurrentThread }

    func checkIsolated() {
        precondition(isHeldByCurrentThread, "not running as the coordinator's actor")
    }
}

/// The lock that makes a thread the actor, and which thread holds it.
///
/// A ticket lock: threads get the actor in the order they asked for it. A
/// plain mutex let the worker socket's thread, handling a flood of batches,
/// take the lock back again and again before the client socket's thread
/// woke, so another client's query waited for the whole flood (the
/// head-of-line test caught it); an actor's queue is first come, first
/// served, and so is this. `@unchecked Sendable`: its state is guarded by a
/// Foundation `NSCondition`, which waiting threads need (a `Mutex` has none).
private final class Exclusion: @unchecked Sendable {
    // `nextTicket` and `serving` are guarded by `condition`; `holder` is
    // written only by the thread whose ticket is being served.
    private let condition = NSCondition()
    private var nextTicket: UInt64 = 0
    private var serving: UInt64 = 0
    private var waiting = 0
    private let holder = Atomic<UInt>(0)

    private static var currentThread: UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }

    func run<T>(_ body: () -> T) -> T {
        condition.lock()
        let ticket = nextTicket
        nextTicket &+= 1
        if serving != ticket {
            waiting += 1
            while serving != ticket { condition.wait() }
            waiting -= 1
        }
        condition.unlock()
        holder.store(Self.currentThread, ordering: .relaxed)
        defer {
            holder.store(0, ordering: .relaxed)
            condition.lock()
            serving &+= 1
            if waiting > 0 { condition.broadcast() }
            condition.unlock()
        }
        return body()
    }

    var isHeldByCurrentThread: Bool { holder.load(ordering: .relaxed) == Self.currentThread }
}

/// Jobs waiting for the executor's thread, in order. `@unchecked Sendable`:
/// guarded by a Foundation `NSCondition`, on which the thread waits for work.
private final class JobQueue: @unchecked Sendable {
    // `queue` and `stopped` are guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [() -> Void] = []
    private var head = 0
    private var stopped = false

    func add(_ job: @escaping () -> Void) {
        condition.lock()
        queue.append(job)
        condition.signal()
        condition.unlock()
    }

    /// The next job, waiting for one; nil once stopped and empty.
    func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == queue.count {
            if stopped { return nil }
            condition.wait()
        }
        let job = queue[head]
        head += 1
        if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
        return Job(run: job)
    }

    func stop() {
        condition.lock(); stopped = true; condition.broadcast(); condition.unlock()
    }

    struct Job { let run: () -> Void }
}
