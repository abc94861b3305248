import Foundation
import Synchronization
import Testing

@testable import Coordinator

@Suite("Deadlines (one timer thread for every query)")
struct DeadlinesTests {
    /// Deadlines fire in time order whatever order they were scheduled in,
    /// not before they are due, and a cancelled one never fires.
    @Test func deadlinesFireInOrderAndCancelledOnesNever() async throws {
        let deadlines = Deadlines(name: "test-deadlines")
        let fired = Mutex<[(Int, UInt64)]>([])
        let start = DispatchTime.now().uptimeNanoseconds
        var tokens: [Int: Deadlines.Token] = [:]
        for ms in [120, 30, 90, 60, 10, 150] {
            tokens[ms] = deadlines.schedule(afterMs: ms) {
                fired.withLock { $0.append((ms, DispatchTime.now().uptimeNanoseconds - start)) }
            }
        }
        deadlines.cancel(tokens[90]!)
        deadlines.cancel(tokens[10]!)
        let until = Date().addingTimeInterval(60)
        while fired.withLock({ $0.count }) < 4, Date() < until { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        let got = fired.withLock { $0 }
        #expect(got.map(\.0) == [30, 60, 120, 150])
        for (ms, elapsed) in got { #expect(elapsed >= UInt64(ms) * 1_000_000, "fired \(ms) ms early") }
        #expect(deadlines.pendingCount == 0)
    }

    /// A new earliest deadline wakes the thread sleeping until a later one.
    @Test func anEarlierDeadlineWakesTheTimer() async throws {
        let deadlines = Deadlines(name: "test-deadlines")
        let fired = Mutex<[String]>([])
        _ = deadlines.schedule(afterMs: 600_000) { fired.withLock { $0.append("late") } }
        try await Task.sleep(for: .milliseconds(50))
        _ = deadlines.schedule(afterMs: 20) { fired.withLock { $0.append("early") } }
        let until = Date().addingTimeInterval(60)
        while fired.withLock({ $0.isEmpty }), Date() < until { try await Task.sleep(for: .milliseconds(10)) }
        #expect(fired.withLock { $0 } == ["early"])
        #expect(deadlines.pendingCount == 1)
    }
}
