import Foundation
import Synchronization

// Limelight's one concurrency story, in one place:
//
// - Shared mutable state lives in a `Mutex<State>` (Synchronization), held by
//   a `let` of a final class or of a ``LockedBox``; flags and counters that
//   need no other state are `Atomic`s. Such types are `Sendable` as they are.
// - State that a thread waits on (a job queue, a timer, a window) lives in a
//   ``ConditionLock``, the `Mutex` with a condition; a value that is not
//   `Sendable` but used by one thread at a time (a SQLite connection) travels
//   in a ``ThreadConfined``. Those two boxes hold this toolkit's
//   `@unchecked Sendable`, each reasoned once, so the types built on them
//   need none.
// - Actors where a Swift-concurrency face is wanted (the coordinator's core).
// - Dedicated threads only where a C library or a socket requires one: a
//   ZeroMQ socket's owner thread, SQLite work that blocks (``WorkThreads``,
//   ``DedicatedThread``), never GCD's or the cooperative pool's threads.
// - Elsewhere, `@unchecked Sendable` only on a type that wraps a C handle the
//   compiler cannot see into, with the reason at its declaration.
//
// docs/architecture.md has the table of threads: which runs what, and why.

/// A value shared by reference and guarded by a mutex: what a `Mutex` is,
/// for places that need to hand the same lock to several owners.
package final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    package init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with the value, exclusively.
    package func withLock<Result: Sendable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try mutex.withLock { (value: inout Value) throws(E) -> Result in try body(&value) }
    }

    /// A copy of the value.
    package var value: Value { mutex.withLock { $0 } }
}

/// Threads of our own for blocking work (SQLite), outside libdispatch's pool.
///
/// On Linux, Swift's cooperative pool and GCD's global queues draw from the
/// same few threads (one per core). Blocking work queued on GCD can therefore
/// starve the async tasks that heartbeat and move messages, until libdispatch
/// notices and adds threads seconds later. Plain threads avoid that entirely.
package final class WorkThreads: Sendable {
    private struct Queue: Sendable {
        var jobs: [@Sendable () -> Void] = []
        var stopped = false
        /// Threads running a job now.
        var busy = 0
    }
    private let queue = ConditionLock(Queue())

    package init(name: String, count: Int) {
        for i in 0..<max(1, count) {
            let t = Thread { [self] in loop() }
            t.name = count == 1 ? name : "\(name)-\(i)"
            t.stackSize = 8 << 20
            t.start()
        }
    }

    package func submit(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { q in
            q.state.jobs.append(job)
            q.signal()
        }
    }

    /// Queues `job` unless `limit` jobs already wait for a thread; false when
    /// it was refused. A bound keeps a flood of work from growing the queue
    /// (and the latency of everything in it) without end: the caller answers
    /// "busy" at once instead, and the work can go elsewhere.
    package func trySubmit(limit: Int, _ job: @escaping @Sendable () -> Void) -> Bool {
        queue.withLock { q in
            guard q.state.jobs.count < limit else { return false }
            q.state.jobs.append(job)
            q.signal()
            return true
        }
    }

    /// Jobs waiting for a thread (not those running).
    package var waiting: Int { queue.withLock { $0.state.jobs.count } }

    /// No job waits and none runs.
    package var isIdle: Bool { queue.withLock { $0.state.jobs.isEmpty && $0.state.busy == 0 } }

    package func stop() {
        queue.withLock { q in
            q.state.stopped = true
            q.broadcast()
        }
    }

    private func loop() {
        while true {
            let next: (@Sendable () -> Void)? = queue.withLock { q in
                while q.state.jobs.isEmpty && !q.state.stopped { q.wait() }
                if q.state.jobs.isEmpty { return nil }  // stopped, and nothing left
                q.state.busy += 1
                return q.state.jobs.removeFirst()
            }
            guard let job = next else { return }
            job()
            queue.withLock { $0.state.busy -= 1 }
        }
    }
}

/// Runs blocking work in arrival order on one thread of its own, awaiting
/// its result: what a shard's SQLite connection needs, since a connection is
/// used by one thread at a time and its work blocks.
package final class DedicatedThread: Sendable {
    let thread: WorkThreads

    package init(label: String) { thread = WorkThreads(name: label, count: 1) }

    package func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { cont in
            thread.submit {
                do { cont.resume(returning: try work()) } catch { cont.resume(throwing: error) }
            }
        }
    }

    package func stop() { thread.stop() }
}

/// Wakes one waiting loop early: `signal()` from anywhere, `wait(upTo:)` in
/// the loop. A signal given while the loop is busy is kept (one), so the
/// loop never sleeps through work that came meanwhile; the bound makes the
/// loop look again anyway, so a place that forgets to signal costs latency,
/// never progress.
package final class Wakeup: Sendable {
    private let state = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    package init() {}

    package func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter else {
                s.pending = true
                return nil
            }
            s.waiter = nil
            return w
        }
        waiter?.resume()
    }

    /// Returns at the next signal (at once for one kept), or after `bound`.
    package func wait(upTo bound: Duration) async {
        let timer = Task {
            try? await Task.sleep(for: bound)
            if !Task.isCancelled { self.signal() }
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.pending {
                    s.pending = false
                    return true
                }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
        timer.cancel()
    }
}
