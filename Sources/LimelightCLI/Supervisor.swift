import Foundation

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
/// `@unchecked Sendable`: it holds Foundation `Process` handles, which are not
/// `Sendable`, and their termination handlers run on Foundation's threads;
/// every field is read and written under `lock`.
final class Supervisor: @unchecked Sendable {
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

    // All mutable state is guarded by `lock`.
    private let lock = NSLock()
    private var running: [String: Process] = [:]
    private var specs: [String: Spec] = [:]
    private var exits: [Exit] = []
    private var failures: [String: [Date]] = [:]
    private var pending: [(name: String, due: Date)] = []
    private var _stopRequested = false
    private var stopping = false

    let restartLimit: Int
    let restartWindow: TimeInterval
    let report: @Sendable (String) -> Void

    init(restartLimit: Int = 5, restartWindow: TimeInterval = 60, report: @escaping @Sendable (String) -> Void = { printError($0) }) {
        self.restartLimit = restartLimit
        self.restartWindow = restartWindow
        self.report = report
    }

    /// A started child and the lines of its standard output, when captured.
    /// `@unchecked Sendable`: it holds a Foundation `Process`; `buffer` and
    /// `lines` are guarded by `lock`, which the pipe's handler takes.
    final class Child: @unchecked Sendable {
        let process: Process
        let lock = NSLock()
        var buffer = Data()
        var lines: [String] = []
        init(process: Process) { self.process = process }

        func firstLine(timeout: Double) -> String? {
            let end = Date().addingTimeInterval(timeout)
            while Date() < end {
                lock.lock()
                let l = lines.first
                lock.unlock()
                if let l { return l }
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
                child.lock.lock()
                child.buffer.append(d)
                while let nl = child.buffer.firstIndex(of: 0x0A) {
                    child.lines.append(String(decoding: child.buffer[child.buffer.startIndex..<nl], as: UTF8.self))
                    child.buffer.removeSubrange(child.buffer.startIndex...nl)
                }
                child.lock.unlock()
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
            self.lock.lock()
            if !self.stopping, self.running[name] === proc { self.exits.append(exit) }
            self.lock.unlock()
        }
        lock.lock()
        specs[spec.name] = spec
        lock.unlock()
        try p.run()
        lock.lock()
        running[spec.name] = p
        let stoppedMeanwhile = stopping
        lock.unlock()
        if stoppedMeanwhile, p.isRunning { kill(p.processIdentifier, SIGTERM) }
        try? log.close()
        return child
    }

    /// Changes the arguments a child is restarted with (the coordinator's
    /// bound ports, so that a restarted coordinator is found where the first was).
    func setArguments(_ arguments: [String], of name: String) {
        lock.lock(); defer { lock.unlock() }
        specs[name]?.arguments = arguments
    }

    var stopRequested: Bool { lock.lock(); defer { lock.unlock() }; return _stopRequested }
    func requestStop() { lock.lock(); _stopRequested = true; lock.unlock() }

    /// The children that died since the last call (and were not being stopped).
    func takeExits() -> [Exit] {
        lock.lock(); defer { lock.unlock() }
        let e = exits
        exits.removeAll()
        return e
    }

    /// The process id of a running child, for tests and status lines.
    func pid(of name: String) -> Int32? {
        lock.lock(); defer { lock.unlock() }
        return running[name].flatMap { $0.isRunning ? $0.processIdentifier : nil }
    }

    /// What to do about a child that died: restart it after a backoff, or
    /// give up (nil) when it failed too often within the window.
    func schedule(_ exit: Exit) -> TimeInterval? {
        lock.lock(); defer { lock.unlock() }
        let recent = (failures[exit.name, default: []] + [exit.at]).filter { exit.at.timeIntervalSince($0) <= restartWindow }
        failures[exit.name] = recent
        guard recent.count < restartLimit else { return nil }
        let delay = min(8, 0.5 * pow(2, Double(recent.count - 1)))
        pending.append((exit.name, exit.at.addingTimeInterval(delay)))
        return delay
    }

    /// How many times a child failed within the window, as of its last failure.
    func recentFailures(of name: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return failures[name]?.count ?? 0
    }

    /// Starts again every child whose backoff has run out; returns why the
    /// cluster must stop when a child could not be started too often.
    func restartDue(now: Date = Date()) -> String? {
        lock.lock()
        let due = pending.filter { $0.due <= now }
        pending.removeAll { $0.due <= now }
        let toStart = stopping ? [] : due.compactMap { specs[$0.name] }
        lock.unlock()
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

    /// Workers first (so nothing is mid-write when the coordinator goes), then
    /// the coordinator: SIGTERM, then SIGKILL after 5 s.
    func stopAll() {
        lock.lock()
        stopping = true
        pending.removeAll()
        let all = running
        lock.unlock()
        let workers = all.filter { $0.key != "coordinator" }.map(\.value)
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
