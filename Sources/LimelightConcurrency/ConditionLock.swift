import Foundation

/// State that threads wait on: what a `Mutex` is, plus a condition variable.
///
/// Synchronization's `Mutex` has no condition, and a thread that waits for a
/// change (a worker thread for a job, the timer thread for the next deadline,
/// a poster for room in a window of sends, a thread for its turn as the
/// coordinator's actor) needs one. This box is the one place that pairs state
/// with a Foundation `NSCondition`, so every type built on it is `Sendable`
/// as the compiler checks it, with no reason of its own to give.
///
/// `@unchecked Sendable`: `state` is read and written only through the
/// ``Locked`` handle that ``withLock(_:)`` lends its body while the
/// `NSCondition` is held (a waiting thread gives the lock up only inside
/// ``Locked/wait()``, and a body reaches the state only between waits);
/// `State` is `Sendable`, so nothing that is not crosses threads through it.
package final class ConditionLock<State: Sendable>: @unchecked Sendable {
    @usableFromInline let condition = NSCondition()
    @usableFromInline var state: State

    package init(_ state: State) { self.state = state }

    /// Runs `body` holding the lock; `body` reads and changes the state, waits
    /// and wakes waiters through the handle it is given.
    @inlinable
    package func withLock<Result, E: Error>(_ body: (Locked) throws(E) -> Result) throws(E) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return try body(Locked(owner: self))
    }

    /// The lock, held: the guarded state and the condition's operations.
    /// Valid only inside the ``ConditionLock/withLock(_:)`` that lent it:
    /// never keep it past that body. (Not `~Copyable`, which would say so to
    /// the compiler: the release optimizer fails to inline such a handle.)
    package struct Locked {
        @usableFromInline let owner: ConditionLock

        @inlinable init(owner: ConditionLock) { self.owner = owner }

        /// The guarded state. Each access is its own; none may span a wait.
        @inlinable
        package var state: State {
            get { owner.state }
            nonmutating _modify { yield &owner.state }
        }

        /// Gives the lock up until woken, then takes it again. Wake-ups can
        /// be spurious: wait in a loop that tests the state.
        @inlinable package func wait() { owner.condition.wait() }

        /// ``wait()``, but for no later than `deadline`; false when it passed.
        @inlinable @discardableResult
        package func wait(until deadline: Date) -> Bool { owner.condition.wait(until: deadline) }

        /// Wakes one waiting thread.
        @inlinable package func signal() { owner.condition.signal() }

        /// Wakes every waiting thread.
        @inlinable package func broadcast() { owner.condition.broadcast() }

        /// Runs `body` with the lock given up (work that must not hold it,
        /// such as a job or a timer's action), then takes it again.
        @inlinable
        package func unlocked<Result, E: Error>(_ body: () throws(E) -> Result) throws(E) -> Result {
            owner.condition.unlock()
            defer { owner.condition.lock() }
            return try body()
        }
    }
}

/// A value that is not `Sendable`, handed between threads and used by one at
/// a time: a SQLite connection (a C handle with its statement caches) that a
/// pool lends to one query's thread, or that only its shard's
/// ``DedicatedThread`` touches.
///
/// `@unchecked Sendable`: the discipline that makes this safe is the
/// owner's, and the compiler cannot see it: a holder uses ``value`` only on
/// the one thread that owns it at the time (a pool's checkout, or the
/// dedicated thread), and hands it on only through a synchronising step (a
/// `Mutex`, a job queue) that orders its uses.
package final class ThreadConfined<Value>: @unchecked Sendable {
    package let value: Value

    package init(_ value: Value) { self.value = value }
}
