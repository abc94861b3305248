import Foundation
import Synchronization

/// The cluster's child processes, kept running.
///
/// A child that dies is started again with the same arguments, after a
/// backoff that doubles with each failure inside the window (0.5 s, 1 s, 2 s …
/// up to 8 s), and a line on standard error names the child and why it died
/// (its exit status, or the signal that killed it). A child that fails
/// `restartLimit` times within `restartWindow` seconds is not restarted: the
/// supervisor says so and the cluster stops, since a child that cannot stay
/// up is a fault a person must look at, and restarting it forever would hide
/// it. `stopAll()` (SIGINT, SIGTERM) stops every child and restarts none.
///
/// Its children's termination handlers run on Foundation's threads, so all
/// that changes is behind one `Mutex`.
final class Supervisor: Sendable {
    /// How a child ended.
    struct Exit: Sendable, CustomStringConvertible {
        var name: String
        var pid: Int32
        var status: Int32
        var signalled: Bool
        var at: Date

        var description: String {
            signalled ? "killed by signal \(status)\(Self.signalName(status).map { " (\($0))" } ?? "")" : "exited with status \(status)"
        }

        static func signalName(_ s: Int32) -> String? {
            [
                SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT",
                SIGILL: "SIGILL", SIGBUS: "SIGBUS", SIGTRAP: "SIGTRAP", SIGHUP: "SIGHUP", SIGQUIT: "SIGQUIT",
            ][s]
        }
    }

    /// What the supervisor needs to start a child again.
    struct Spec: Sendable {
        var name: String
        var executable: String
        var arguments: [String]
        var logs: String
    }

    private struct State: Sendable {
        var running: [String: Process] = [:]
        var specs: [String: Spec] = [:]
        var exits: [Exit] = []
        var failures: [String: [Date]] = [:]
        var pending: [(name: String, due: Date)] = []
        var stopRequested = false
        var stopping = false
        /// Children stopped for good (``retire(_:)``), perhaps still exiting.
        var retired: [Process] = []
    }
    private let state = Mutex(State())

    let restartLimit: Int
    let restartWindow: TimeInterval
    let report: @Sendable (String) -> Void

    init(restartLimit: Int = 5, restartWindow: TimeInterval = 60, report: @escaping @Sendable (String) -> Void = { printError($0) }) {
        self.restartLimit = restartLimit
        self.restartWindow = restartWindow
        self.report = report
    }

    /// A started child and the lines of its standard output, when captured
    /// (by the pipe's handler, on Foundation's threads).
    final class Child: Sendable {
        let process: Process
        private struct Output: Sendable {
            var buffer = Data()
            var lines: [String] = []
        }
        private let output = Mutex(Output())
        init(process: Process) { self.process = process }

        /// Adds what the pipe read; a line is complete at its newline.
        func append(_ data: Data) {
            output.withLock { o in
                o.buffer.append(data)
                while let nl = o.buffer.firstIndex(of: 0x0A) {
                    o.lines.append(String(decoding: o.buffer[o.buffer.startIndex..<nl], as: UTF8.self))
                    o.buffer.removeSubrange(o.buffer.startIndex...nl)
                }
            }
        }

        func firstLine(timeout: Double) -> String? {
            let end = Date().addingTimeInterval(timeout)
            while Date() < end {
                if let l = output.withLock({ $0.lines.first }) { return l }
                if !process.isRunning { return nil }
                usleep(20_000)
            }
            return nil
        }
    }

    /// Starts a child. Its standard error (and standard output, unless
    /// `captureOutput`) is appended to `LOGS/NAME.log`, across restarts.
    @discardableResult
    func spawn(_ spec: Spec, captureOutput: Bool = false) throws -> Child {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: spec.executable)
        p.arguments = spec.arguments
        let logPath = (spec.logs as NSString).appendingPathComponent("\(spec.name).log")
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        p.standardError = log
        let child = Child(process: p)
        if captureOutput {
            let pipe = Pipe()
            p.standardOutput = pipe
            pipe.fileHandleForReading.readabilityHandler = { h in
                let d = h.availableData
                if d.isEmpty { h.readabilityHandler = nil; return }
                child.append(d)
            }
        } else {
            p.standardOutput = log
        }
        let name = spec.name
        p.terminationHandler = { [weak self] proc in
            guard let self else { return }
            let exit = Exit(
                name: name, pid: proc.processIdentifier, status: proc.terminationStatus, signalled: proc.terminationReason == .uncaughtSignal,
                at: Date())
            self.state.withLock { s in
                if !s.stopping, s.running[name] === proc { s.exits.append(exit) }
            }
        }
        state.withLock { $0.specs[spec.name] = spec }
        try p.run()
        let stoppedMeanwhile = state.withLock { s in
            s.running[spec.name] = p
            return s.stopping
        }
        if stoppedMeanwhile, p.isRunning { kill(p.processIdentifier, SIGTERM) }
        try? log.close()
        return child
    }

    /// Changes the arguments a child is restarted with (the coordinator's
    /// bound ports, so that a restarted coordinator is found where the first was).
    func setArguments(_ arguments: [String], of name: String) {
        state.withLock { $0.specs[name]?.arguments = arguments }
    }

    var stopRequested: Bool { state.withLock { $0.stopRequested } }
    func requestStop() { state.withLock { $0.stopRequested = true } }

    /// The children that died since the last call (and were not being stopped).
    func takeExits() -> [Exit] {
        state.withLock { s in
            defer { s.exits.removeAll() }
            return s.exits
        }
    }

    /// The process id of a running child, for tests and status lines.
    func pid(of name: String) -> Int32? {
        state.withLock { s in s.running[name].flatMap { $0.isRunning ? $0.processIdentifier : nil } }
    }

    /// What to do about a child that died: restart it after a backoff, or
    /// give up (nil) when it failed too often within the window.
    func schedule(_ exit: Exit) -> TimeInterval? {
        state.withLock { s in
            let recent = (s.failures[exit.name, default: []] + [exit.at]).filter { exit.at.timeIntervalSince($0) <= restartWindow }
            s.failures[exit.name] = recent
            guard recent.count < restartLimit else { return nil }
            let delay = min(8, 0.5 * pow(2, Double(recent.count - 1)))
            s.pending.append((exit.name, exit.at.addingTimeInterval(delay)))
            return delay
        }
    }

    /// How many times a child failed within the window, as of its last failure.
    func recentFailures(of name: String) -> Int {
        state.withLock { $0.failures[name]?.count ?? 0 }
    }

    /// Starts again every child whose backoff has run out; returns why the
    /// cluster must stop when a child could not be started too often.
    func restartDue(now: Date = Date()) -> String? {
        let toStart = state.withLock { s in
            let due = s.pending.filter { $0.due <= now }
            s.pending.removeAll { $0.due <= now }
            return s.stopping ? [] : due.compactMap { s.specs[$0.name] }
        }
        for spec in toStart {
            do {
                try spawn(spec)
                report("limelight: restarted \(spec.name) (pid \(pid(of: spec.name).map(String.init) ?? "?"))")
            } catch {
                // A start that fails counts as a failure of the child.
                guard schedule(Exit(name: spec.name, pid: 0, status: 127, signalled: false, at: Date())) != nil else {
                    return "\(spec.name) cannot be started (\(error)) and has failed \(restartLimit) times within \(Int(restartWindow)) s"
                }
                report("limelight: cannot restart \(spec.name): \(error); retrying")
            }
        }
        return nil
    }

    /// Stops a child for good with SIGTERM, without waiting: it is not
    /// restarted, and its exit is not reported (a retired replica's worker).
    /// ``stopAll()`` still waits for it (and kills it if it lingers).
    func retire(_ name: String) {
        let p = state.withLock { s in
            s.specs.removeValue(forKey: name)
            s.pending.removeAll { $0.name == name }
            let p = s.running.removeValue(forKey: name)
            if let p { s.retired.append(p) }
            return p
        }
        guard let p, p.isRunning else { return }
        kill(p.processIdentifier, SIGTERM)
    }

    /// The names of the children it supervises.
    var names: [String] { state.withLock { Array($0.specs.keys) } }

    /// Workers first (so nothing is mid-write when the coordinator goes), then
    /// the coordinator: SIGTERM, then SIGKILL after 5 s.
    func stopAll() {
        let (all, retired) = state.withLock { s in
            s.stopping = true
            s.pending.removeAll()
            return (s.running, s.retired)
        }
        let workers = all.filter { $0.key != "coordinator" }.map(\.value) + retired
        let coordinator = all.filter { $0.key == "coordinator" }.map(\.value)
        for group in [workers, coordinator] {
            for p in group where p.isRunning { kill(p.processIdentifier, SIGTERM) }
            let end = Date().addingTimeInterval(5)
            while Date() < end, group.contains(where: \.isRunning) { usleep(20_000) }
            for p in group where p.isRunning { kill(p.processIdentifier, SIGKILL) }
            for p in group { p.waitUntilExit() }
        }
    }
}
