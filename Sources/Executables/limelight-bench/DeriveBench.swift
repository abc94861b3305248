import ArgumentParser
import Foundation
import Logging
import ShardStore
import Synchronization

/// A shard's derived file built once, from its SQLite file, in a process of
/// its own: how long the build takes, what each structure weighs, and the
/// process's peak resident memory, which is the build's (the process does
/// nothing else).
///
/// Why: a query worker builds each shard's derived file the first time the
/// shard is searched; the build's peak, not the mapped file, sets what a
/// worker needs at the largest shard it serves.
struct DeriveBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "derive", abstract: "A shard's derived file built from its SQLite file: time, sizes and peak memory.")
    @Option(help: "The shard file (a SQLite file written by an indexer or by 'stages --database').") var database: String
    @Flag(help: "Keep an existing derived file (time mapping it) instead of building it again.") var keep = false
    @Flag(help: "Grow the structures on the heap while building, not in files beside the shard.") var onHeap = false

    func run() throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let derived = database + ".derived"
        if !keep { try? FileManager.default.removeItem(atPath: derived) }
        ShardStore.buildsInFiles = !onHeap
        let store = try ShardStore(path: database, mode: .readOnly, logger: logger)
        let before = ProcessMemory.read()
        let sampler = AnonymousPeak()
        let start = ContinuousClock.now
        let r = try store.buildSuggestionIndex()
        let took = start.duration(to: .now)
        let after = ProcessMemory.read()
        let anonymousPeak = sampler.stop()
        let mb = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1e6) }
        print(
            "derived file of \(database): \(mb(r.fileBytes)) in \(String(format: "%.2f", Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)) s"
        )
        print("  posting lists: \(r.terms) terms, \(r.ids) ids, \(mb(r.bytes)) (forward index \(mb(r.forwardBytes)), item rows \(mb(r.rowsBytes)))")
        print("  forward index: \(r.forwardTokens) tokens, \(r.forwardTerms) terms")
        print("  heap held after: \(mb(r.heapBytes))")
        print("  resident: \(mb(before.resident)) before, peak \(mb(after.peak)), \(mb(after.resident)) after")
        print("  anonymous (heap) resident: peak \(mb(anonymousPeak)) (sampled every 20 ms); the rest is file pages the kernel can drop")
    }
}

/// A process's `/proc/PID/status`, its fields read in kB.
struct ProcStatus {
    let text: String

    init?(pid: String = "self") {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        self.text = text
    }

    /// The field's value (`VmRSS`, `VmHWM`, `RssAnon`…) in kB; 0 when absent.
    func kb(_ field: String) -> Int {
        text.split(separator: "\n").first { $0.hasPrefix(field + ":") }?
            .split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    }
}

/// This process's resident memory now and at its peak.
struct ProcessMemory {
    var resident = 0
    var peak = 0

    static func read() -> ProcessMemory {
        guard let s = ProcStatus() else { return ProcessMemory() }
        return ProcessMemory(resident: s.kb("VmRSS") * 1024, peak: s.kb("VmHWM") * 1024)
    }
}

/// The peak of this process's anonymous resident memory (`RssAnon`: what
/// the kernel cannot drop, unlike the pages of mapped files), sampled on a
/// thread of its own until ``stop()``.
final class AnonymousPeak: Sendable {
    private let state = Mutex((peak: 0, stopped: false))

    init() {
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stopped }) {
                let anon = (ProcStatus()?.kb("RssAnon") ?? 0) * 1024
                state.withLock { $0.peak = max($0.peak, anon) }
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
    }

    /// Stops sampling; the peak seen.
    func stop() -> Int {
        let anon = (ProcStatus()?.kb("RssAnon") ?? 0) * 1024
        return state.withLock {
            $0.stopped = true
            return max($0.peak, anon)
        }
    }
}
