import Foundation
import Synchronization

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

/// The timer thread's state. `@unchecked Sendable`: every field is guarded by
/// a Foundation `NSCondition`, on which the timer thread waits for the next
/// deadline (a `Mutex` has no timed wait).
private final class TimerState: @unchecked Sendable {
    private let condition = NSCondition()
    private var heap = MinHeap()
    private var actions: [UInt64: @Sendable () -> Void] = [:]
    private var nextID: UInt64 = 0
    private var stopped = false

    func schedule(at due: UInt64, _ action: @escaping @Sendable () -> Void) -> Deadlines.Token {
        condition.lock()
        defer { condition.unlock() }
        nextID &+= 1
        actions[nextID] = action
        let earliest = heap.peek?.due
        heap.push(Entry(due: due, id: nextID))
        // Only a new earliest deadline changes how long the thread sleeps.
        if earliest.map({ due < $0 }) ?? true { condition.signal() }
        return Deadlines.Token(id: nextID)
    }

    func cancel(_ id: UInt64) {
        condition.lock()
        actions.removeValue(forKey: id)
        condition.unlock()
    }

    var pendingCount: Int { condition.lock(); defer { condition.unlock() }; return actions.count }

    func stop() {
        condition.lock(); stopped = true; condition.signal(); condition.unlock()
    }

    func loop() {
        condition.lock()
        while !stopped {
            guard let first = heap.peek else {
                condition.wait()
                continue
            }
            if actions[first.id] == nil {
                _ = heap.pop()  // cancelled: its entry goes when it reaches the top
                continue
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if first.due > now {
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(first.due - now) / 1e9))
                continue
            }
            _ = heap.pop()
            let action = actions.removeValue(forKey: first.id)
            condition.unlock()
            action?()
            condition.lock()
        }
        condition.unlock()
    }

    struct Entry { var due: UInt64; var id: UInt64 }

    /// A binary min-heap of entries by due time.
    struct MinHeap {
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
