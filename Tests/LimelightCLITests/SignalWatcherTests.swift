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

    /// Waits up to 10 s (of the clock, however busy the machine) for
    /// `counter` to reach `atLeast`.
    func wait(_ counter: Counter, atLeast: Int) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(10)
        while counter.count < atLeast, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return counter.count
    }

    /// A thread with a signal unblocked, as OpenBLAS's pool threads have it
    /// where every thread Swift's runtime and Dispatch start block it, so
    /// that a signal sent to the process can be given to this one. It lives
    /// until ``stop()`` (a thread that has ended takes no signal).
    final class UnblockedThread: Sendable {
        let id = Mutex<pthread_t?>(nil)
        let stopped = Atomic<Bool>(false)

        init(_ signo: Int32) {
            Thread { [self] in
                var unblocked = sigset_t()
                sigemptyset(&unblocked)
                sigaddset(&unblocked, signo)
                pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
                id.withLock { $0 = pthread_self() }
                while !stopped.load(ordering: .acquiring) { usleep(5_000) }
            }.start()
        }

        func started() async throws -> pthread_t {
            while true {
                if let t = id.withLock({ $0 }) { return t }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        func stop() { stopped.store(true, ordering: .releasing) }
    }

    @Test func aSignalSentToAThreadThatDoesNotBlockItIsHeard() async throws {
        let heard = Counter()
        let watcher = SignalWatcher(signals: [SIGUSR2]) { heard.add() }
        let thread = UnblockedThread(SIGUSR2)
        defer { thread.stop() }
        #expect(pthread_kill(try await thread.started(), SIGUSR2) == 0)
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
        let thread = UnblockedThread(SIGUSR1)
        defer { thread.stop() }
        _ = try await thread.started()
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
