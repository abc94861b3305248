import Foundation
import Synchronization
import Testing

@testable import Coordinator

/// An actor on the coordinator's executor, as ``CoordinatorCore`` is.
actor Tally {
    nonisolated let executor = CoordinatorExecutor(name: "test-executor")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    var count = 0
    /// Not atomic on purpose: a read, a pause, a write. Two runs at once lose one.
    func bump() {
        let c = count
        if c % 97 == 0 { usleep(50) }
        count = c + 1
    }
    func value() -> Int { count }
}

@Suite("The coordinator's executor (a lock that makes a thread the actor)")
struct CoordinatorExecutorTests {
    /// Plain threads running the actor in place and tasks awaiting it take
    /// turns: no increment is lost, so they never ran at once.
    @Test func threadsAndTasksNeverRunTheActorAtOnce() async throws {
        let tally = Tally()
        let perThread = 500
        let threads = 3
        let finished = Mutex(0)
        for _ in 0..<threads {
            Thread {
                for _ in 0..<perThread {
                    tally.executor.run { tally.assumeIsolated { $0.bump() } }
                }
                finished.withLock { $0 += 1 }
            }.start()
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<500 { await tally.bump() } }
            }
        }
        // Waits without blocking a thread of the cooperative pool, which the
        // rest of the suite runs on.
        while finished.withLock({ $0 }) < threads { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await tally.value() == threads * perThread + 4 * 500)
    }

    @Test func onlyTheThreadHoldingTheLockIsTheActor() async throws {
        let tally = Tally()
        #expect(!tally.executor.isHeldByCurrentThread)
        let inside = tally.executor.run { tally.executor.isHeldByCurrentThread }
        #expect(inside)
        #expect(!tally.executor.isHeldByCurrentThread)
        // A task on the actor runs on the executor's thread, under the lock.
        let held = await tally.runHeld()
        #expect(held)
    }
}

extension Tally {
    func runHeld() -> Bool { executor.isHeldByCurrentThread }
}
