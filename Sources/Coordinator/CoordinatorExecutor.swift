import Foundation
import LimelightConcurrency
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
/// The runtime hands it jobs from any thread; its state is the `Exclusion`
/// and the `JobQueue`, each a ``ConditionLock`` (a thread waits on it for
/// its turn), so it is `Sendable` as it is.
final class CoordinatorExecutor: SerialExecutor, Sendable {
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
/// served, and so is this.
private final class Exclusion: Sendable {
    private struct Tickets: Sendable {
        var nextTicket: UInt64 = 0
        var serving: UInt64 = 0
        /// Threads waiting for their ticket: only then does a release wake them.
        var waiting = 0
    }
    private let tickets = ConditionLock(Tickets())
    /// Written only by the thread whose ticket is being served.
    private let holder = Atomic<UInt>(0)

    private static var currentThread: UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }

    func run<T>(_ body: () -> T) -> T {
        tickets.withLock { t in
            let ticket = t.state.nextTicket
            t.state.nextTicket &+= 1
            if t.state.serving != ticket {
                t.state.waiting += 1
                while t.state.serving != ticket { t.wait() }
                t.state.waiting -= 1
            }
        }
        holder.store(Self.currentThread, ordering: .relaxed)
        defer {
            holder.store(0, ordering: .relaxed)
            tickets.withLock { t in
                t.state.serving &+= 1
                if t.state.waiting > 0 { t.broadcast() }
            }
        }
        return body()
    }

    var isHeldByCurrentThread: Bool { holder.load(ordering: .relaxed) == Self.currentThread }
}

/// Jobs waiting for the executor's thread, in order.
private final class JobQueue: Sendable {
    private struct Jobs: Sendable {
        var queue: [Job] = []
        var head = 0
        var stopped = false
    }
    private let jobs = ConditionLock(Jobs())

    func add(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { j in
            j.state.queue.append(Job(run: job))
            j.signal()
        }
    }

    /// The next job, waiting for one; nil once stopped and empty.
    func next() -> Job? {
        jobs.withLock { j in
            while j.state.head == j.state.queue.count {
                if j.state.stopped { return nil }
                j.wait()
            }
            let job = j.state.queue[j.state.head]
            j.state.head += 1
            if j.state.head == j.state.queue.count {
                j.state.queue.removeAll(keepingCapacity: true)
                j.state.head = 0
            }
            return job
        }
    }

    func stop() {
        jobs.withLock { j in
            j.state.stopped = true
            j.broadcast()
        }
    }

    struct Job: Sendable { let run: @Sendable () -> Void }
}
