import Foundation

/// A command the tests run to its end: both outputs read at once, and a time
/// limit.
///
/// Why not `Process` and `readDataToEndOfFile()` in line, as the tests did:
/// a child that fills the standard error pipe (64 KiB) while the test reads
/// standard output to its end waits for the test forever, and a child that
/// hangs held CI until its own limit with nothing said. Here each output has
/// a reader thread, and a child still running at its limit is terminated
/// (killed 2 s later) and said to have timed out, so the test fails, naming
/// the command.
enum ChildProcess {
    struct Finished {
        var status: Int32
        var stdout: Data
        var stderr: Data
        /// The child was still running at the limit, and was stopped.
        var timedOut: Bool
    }

    /// Runs `executable` with `arguments`, `input` on its standard input
    /// (closed at once when nil), `environment` replacing the test's own when
    /// given.
    static func run(
        _ executable: String, _ arguments: [String], input: Data? = nil,
        environment: [String: String]? = nil, limit: TimeInterval = 120
    ) throws -> Finished {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let environment { p.environment = environment }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inp
        try p.run()
        let stdout = Reader(out.fileHandleForReading), stderr = Reader(err.fileHandleForReading)
        let watchdog = Watchdog(p, limit: limit)
        if let input { inp.fileHandleForWriting.write(input) }
        try inp.fileHandleForWriting.close()
        let (o, e) = (stdout.wait(), stderr.wait())
        p.waitUntilExit()
        return Finished(status: p.terminationStatus, stdout: o, stderr: e, timedOut: watchdog.finish())
    }

    /// The first line `p` writes on `output` (without its newline); nil when
    /// it closes its output first, or writes no line within `limit`
    /// (`p` is then terminated).
    static func firstLine(_ output: FileHandle, of p: Process, limit: TimeInterval = 60) -> String? {
        let watchdog = Watchdog(p, limit: limit)
        defer { _ = watchdog.finish() }
        var buf = Data()
        while !buf.contains(0x0A) {
            let d = output.availableData
            if d.isEmpty { break }
            buf.append(d)
        }
        return buf.firstIndex(of: 0x0A).map { String(decoding: buf[..<$0], as: UTF8.self) }
    }

    /// Reads a pipe to its end on a thread of its own.
    private final class Reader: @unchecked Sendable {
        // `data` is written by the thread before it signals `done`, read after.
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)

        init(_ handle: FileHandle) {
            Thread { [self] in
                data = handle.readDataToEndOfFile()
                done.signal()
            }.start()
        }

        func wait() -> Data {
            done.wait()
            return data
        }
    }

    /// Terminates a process still running at its limit, and kills it 2 s
    /// later if it is still there.
    private final class Watchdog: @unchecked Sendable {
        // `finished` and `fired` are guarded by `lock`.
        private let lock = NSLock()
        private var finished = false
        private var fired = false

        init(_ p: Process, limit: TimeInterval) {
            DispatchQueue.global().asyncAfter(deadline: .now() + limit) { [self] in
                let fire = lock.withLock { () -> Bool in
                    guard !finished, p.isRunning else { return false }
                    fired = true
                    return true
                }
                guard fire else { return }
                p.terminate()
                DispatchQueue.global().asyncAfter(deadline: .now() + 2) {
                    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
                }
            }
        }

        /// Stands the watchdog down; whether it had fired.
        func finish() -> Bool {
            lock.withLock {
                finished = true
                return fired
            }
        }
    }
}
