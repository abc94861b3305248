import Foundation
import LimelightConcurrency

/// Every query's and search's deadline, on one timer thread.
///
/// A task per query that sleeps until its deadline and is cancelled when the
/// query ends first would cost a task, a dispatch timer and a cancellation
/// for every query, which shows in the coordinator's profile. Here a
/// deadline is an entry in a heap; the
/// thread sleeps until the earliest one, and ending a query first removes
/// its action, so a deadline that is not reached costs a few dictionary and
/// heap operations.
final class Deadlines: Sendable {
    /// Names a scheduled deadline, to cancel it.
    struct Token: Sendable, Hashable { let id: UInt64 }

    private let state: TimerState

    init(name: String = "deadlines") {
        let state = TimerState()
        self.state = state
        let thread = Thread { state.loop() }
        thread.name = name
        thread.start()
    }

    deinit { state.stop() }

    /// Runs `action` on the timer thread once `milliseconds` have passed,
    /// unless it is cancelled first.
    func schedule(afterMs milliseconds: Int, _ action: @escaping @Sendable () -> Void) -> Token {
        state.schedule(at: DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, milliseconds)) &* 1_000_000, action)
    }

    /// Drops a deadline that has not fired; nothing if it has.
    func cancel(_ token: Token) {
        state.cancel(token.id)
    }

    /// Deadlines scheduled and neither fired nor cancelled.
    var pendingCount: Int { state.pendingCount }
}

/// The timer thread's state, in a ``ConditionLock``: the timer thread waits
/// on it for the next deadline (a `Mutex` has no timed wait).
private final class TimerState: Sendable {
    private struct Timers: Sendable {
        var heap = MinHeap()
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
        var stopped = false
    }
    private let timers = ConditionLock(Timers())

    func schedule(at due: UInt64, _ action: @escaping @Sendable () -> Void) -> Deadlines.Token {
        timers.withLock { t in
            t.state.nextID &+= 1
            let id = t.state.nextID
            t.state.actions[id] = action
            let earliest = t.state.heap.peek?.due
            t.state.heap.push(Entry(due: due, id: id))
            // Only a new earliest deadline changes how long the thread sleeps.
            if earliest.map({ due < $0 }) ?? true { t.signal() }
            return Deadlines.Token(id: id)
        }
    }

    func cancel(_ id: UInt64) {
        timers.withLock { _ = $0.state.actions.removeValue(forKey: id) }
    }

    var pendingCount: Int { timers.withLock { $0.state.actions.count } }

    func stop() {
        timers.withLock { t in
            t.state.stopped = true
            t.signal()
        }
    }

    func loop() {
        timers.withLock { t in
            while !t.state.stopped {
                guard let first = t.state.heap.peek else {
                    t.wait()
                    continue
                }
                if t.state.actions[first.id] == nil {
                    _ = t.state.heap.pop()  // cancelled: its entry goes when it reaches the top
                    continue
                }
                let now = DispatchTime.now().uptimeNanoseconds
                if first.due > now {
                    t.wait(until: Date(timeIntervalSinceNow: Double(first.due - now) / 1e9))
                    continue
                }
                _ = t.state.heap.pop()
                let action = t.state.actions.removeValue(forKey: first.id)
                t.unlocked { action?() }
            }
        }
    }

    struct Entry: Sendable { var due: UInt64; var id: UInt64 }

    /// A binary min-heap of entries by due time.
    struct MinHeap: Sendable {
        private var items: [Entry] = []
        var peek: Entry? { items.first }

        mutating func push(_ e: Entry) {
            items.append(e)
            var i = items.count - 1
            while i > 0 {
                let parent = (i - 1) / 2
                guard items[i].due < items[parent].due else { break }
                items.swapAt(i, parent)
                i = parent
            }
        }

        mutating func pop() -> Entry? {
            guard !items.isEmpty else { return nil }
            items.swapAt(0, items.count - 1)
            let top = items.removeLast()
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < items.count, items[l].due < items[m].due { m = l }
                if r < items.count, items[r].due < items[m].due { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
            return top
        }
    }
}
