import Foundation
import Synchronization
import Testing

@testable import LimelightCLI

/// The signal watcher hears a signal whichever thread the kernel hands it
/// to — a thread that a C library started with the signal unblocked, too —
/// and calls every watcher of that signal and no other.
@Suite(.serialized) struct SignalWatcherTests {
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .releasing) }
        var count: Int { value.load(ordering: .acquiring) }
    }

    /// Waits up to 5 s for `counter` to reach `atLeast`.
    func wait(_ counter: Counter, atLeast: Int) async throws -> Int {
        for _ in 0..<500 where counter.count < atLeast {
            try await Task.sleep(for: .milliseconds(10))
        }
        return counter.count
    }

    /// Starts a thread with `signo` unblocked, as OpenBLAS's pool threads
    /// have it where every thread Swift's runtime and Dispatch start block
    /// it, so that a signal sent to the process is given to this one; it
    /// lives `seconds`.
    func startUnblockedThread(_ signo: Int32, seconds: Double) async throws -> pthread_t {
        let thread = Mutex<pthread_t?>(nil)
        Thread {
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, signo)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            thread.withLock { $0 = pthread_self() }
            Thread.sleep(forTimeInterval: seconds)
        }.start()
        for _ in 0..<200 {
            if let t = thread.withLock({ $0 }) { return t }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw CancellationError()
    }

    @Test func aSignalSentToAThreadThatDoesNotBlockItIsHeard() async throws {
        let heard = Counter()
        let watcher = SignalWatcher(signals: [SIGUSR2]) { heard.add() }
        let thread = try await startUnblockedThread(SIGUSR2, seconds: 1)
        #expect(pthread_kill(thread, SIGUSR2) == 0)
        #expect(try await wait(heard, atLeast: 1) == 1)
        _ = watcher
    }

    /// A watcher made after an earlier one came and went, the signal sent to
    /// the process and landing on a thread that does not block it: Dispatch's
    /// signal sources pass it on to the thread that registered the first
    /// source, which no longer reads it, and this test fails on them.
    @Test func aSignalToTheProcessIsHeardByALaterWatcher() async throws {
        let early = Counter()
        var first: SignalWatcher? = SignalWatcher(signals: [SIGUSR1]) { early.add() }
        kill(getpid(), SIGUSR1)
        #expect(try await wait(early, atLeast: 1) == 1)
        first = nil
        _ = try await startUnblockedThread(SIGUSR1, seconds: 2)
        let late = Counter()
        let second = SignalWatcher(signals: [SIGUSR1]) { late.add() }
        kill(getpid(), SIGUSR1)
        #expect(try await wait(late, atLeast: 1) == 1)
        _ = (first, second)
    }

    @Test func everyWatcherOfTheSignalIsCalledAndARemovedOneIsNot() async throws {
        let first = Counter()
        let second = Counter()
        let other = Counter()
        let a = SignalWatcher(signals: [SIGUSR2]) { first.add() }
        var b: SignalWatcher? = SignalWatcher(signals: [SIGUSR2, SIGUSR1]) { second.add() }
        let c = SignalWatcher(signals: [SIGUSR1]) { other.add() }
        kill(getpid(), SIGUSR2)
        #expect(try await wait(first, atLeast: 1) == 1)
        #expect(try await wait(second, atLeast: 1) == 1)
        #expect(other.count == 0)
        b = nil
        kill(getpid(), SIGUSR2)
        #expect(try await wait(first, atLeast: 2) == 2)
        #expect(second.count == 1)
        _ = (a, b, c)
    }
}
