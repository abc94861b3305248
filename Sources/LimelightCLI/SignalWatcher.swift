import Foundation
import Synchronization

/// Turns signals into a callback on an ordinary thread (never a signal
/// handler's context), for as long as the watcher is kept.
///
/// Built on a `sigaction` handler that writes the signal's number to a pipe,
/// read by a thread of its own, rather than on Dispatch's signal sources.
/// On Linux, libdispatch reads signals from a `signalfd`, which sees only a
/// signal its reading thread has pending; one that lands on a thread which
/// does not block it (OpenBLAS's pool threads, in every process that links
/// the embedder, or any C library's) is sent on by libdispatch's handler to
/// the thread that registered the first signal source, which need not be
/// the one reading it, and is then never heard: a coordinator sent SIGTERM
/// just after it started sometimes never exited. A handler runs on
/// whichever thread takes the signal, so none is lost
/// (`SignalWatcherTests` sends one each way).
///
/// Not `Sendable`: the function that makes one keeps it until it returns,
/// and its `deinit` removes its callback (the handler stays installed; a
/// signal that no watcher wants is then ignored, as the process asked).
final class SignalWatcher {
    private let id: Int

    init(signals: [Int32], _ handler: @escaping @Sendable () -> Void) {
        id = SignalRouter.shared.add(signals: signals, handler)
    }

    deinit { SignalRouter.shared.remove(id) }
}

/// The write end of the pipe the handler writes to; -1 until the router has
/// made it. A global so that the C handler, which cannot capture, reaches it.
private let signalPipeWriteEnd = Atomic<Int32>(-1)

/// The process's one reader of the signal pipe, and the callbacks by signal.
private final class SignalRouter: Sendable {
    static let shared = SignalRouter()

    private struct State {
        var next = 0
        var callbacks: [Int: (signals: Set<Int32>, run: @Sendable () -> Void)] = [:]
        var installed: Set<Int32> = []
    }
    private let state = Mutex(State())

    private init() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("pipe() for signals failed: errno \(errno)") }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // The handler must never block: a full pipe (thousands of unread
        // signals) drops the signal rather than stalling the thread it landed on.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        signalPipeWriteEnd.store(ends[1], ordering: .releasing)
        let readEnd = ends[0]
        let thread = Thread { [self] in self.readLoop(readEnd) }
        thread.name = "signals"
        thread.start()
    }

    func add(signals: [Int32], _ run: @escaping @Sendable () -> Void) -> Int {
        let wanted = Set(signals)
        let (id, toInstall) = state.withLock { s in
            let id = s.next
            s.next += 1
            s.callbacks[id] = (wanted, run)
            let fresh = wanted.subtracting(s.installed)
            s.installed.formUnion(fresh)
            return (id, fresh)
        }
        for signo in toInstall.sorted() { install(signo) }
        return id
    }

    func remove(_ id: Int) {
        _ = state.withLock { $0.callbacks.removeValue(forKey: id) }
    }

    private func install(_ signo: Int32) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signo in
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: signo)
            _ = write(signalPipeWriteEnd.load(ordering: .acquiring), &byte, 1)
            errno = saved
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(signo, &action, nil)
    }

    private func readLoop(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            for signo in Set(buffer[0..<n].map { Int32($0) }).sorted() {
                let runs = state.withLock { s in
                    s.callbacks.sorted { $0.key < $1.key }.filter { $0.value.signals.contains(signo) }.map(\.value.run)
                }
                for run in runs { run() }
            }
        }
    }
}
