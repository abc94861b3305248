import Foundation
import Synchronization
import WireProtocol

/// A worker's own counts for its heartbeats' `WorkerStatus`: requests handled
/// and failed, and per shard when it was last written and whether its item
/// count must be taken again.
///
/// Shared by the message loop and the heartbeat loop, hence the mutex; every
/// operation is a few arithmetic steps, so contention is not a concern.
final class WorkerTally: Sendable {
    private struct State {
        var handled = 0
        var errors = 0
        var staleEpochRefusals = 0
        var lastWrite: [Int: Date] = [:]
        var counted: [Int: Int] = [:]
        /// Bumped by every change of a shard, so a count taken across a change is not kept.
        var generation: [Int: Int] = [:]
        /// The last count taken, current or not: what a heartbeat reports while a new one is taken.
        var lastCounted: [Int: Int] = [:]
        /// Shards whose count is being taken now.
        var counting: Set<Int> = []
        /// Shards written since their write-ahead log was last truncated.
        var logged: Set<Int> = []
    }
    private let state = Mutex(State())
    private let started = ContinuousClock.now

    func finished(failed: Bool = false) {
        state.withLock {
            $0.handled += 1
            if failed { $0.errors += 1 }
        }
    }

    /// A change from a deposed coordinator was refused (``EpochFence``).
    func refusedStaleEpoch() {
        state.withLock {
            $0.handled += 1
            $0.staleEpochRefusals += 1
        }
    }

    var staleEpochRefusals: Int { state.withLock { $0.staleEpochRefusals } }

    /// A write, delete or purge changed the shard: its count is taken again at the next heartbeat.
    func changed(shard: Int, wrote: Bool) {
        state.withLock {
            $0.counted.removeValue(forKey: shard)
            $0.generation[shard, default: 0] += 1
            if wrote {
                $0.lastWrite[shard] = Date()
                $0.logged.insert(shard)
            }
        }
    }

    /// Shards written since their log was last truncated and not written for
    /// `quiet` seconds: the caller truncates their write-ahead logs. Each is
    /// handed out once per run of writes (a later write hands it out again),
    /// or again after ``logLeft(shard:)``.
    func quietLogs(quiet: TimeInterval, now: Date = Date()) -> [Int] {
        state.withLock { s in
            let due = s.logged.filter { now.timeIntervalSince(s.lastWrite[$0] ?? .distantPast) >= quiet }.sorted()
            s.logged.subtract(due)
            return due
        }
    }

    /// The shard's log could not be truncated (a reader held an older
    /// snapshot): it is handed out again at the next ``quietLogs(quiet:now:)``.
    func logLeft(shard: Int) {
        _ = state.withLock { $0.logged.insert(shard) }
    }

    /// The shard's item count when nothing changed it since it was last taken;
    /// otherwise nil and the generation to hand back to `setCount`.
    func knownCount(shard: Int) -> (count: Int?, generation: Int, last: Int?) {
        state.withLock { ($0.counted[shard], $0.generation[shard, default: 0], $0.lastCounted[shard]) }
    }

    /// True when nobody is taking the shard's count yet: the caller takes it
    /// and hands it to `setCount`.
    func beginCounting(shard: Int) -> Bool {
        state.withLock { $0.counting.insert(shard).inserted }
    }

    /// Keeps a count taken at `generation`, unless the shard changed meanwhile
    /// (it is still the last one taken); nil when taking it failed.
    func setCount(_ n: Int?, shard: Int, generation g: Int) {
        state.withLock {
            $0.counting.remove(shard)
            if let n {
                $0.lastCounted[shard] = n
                if $0.generation[shard, default: 0] == g { $0.counted[shard] = n }
            }
        }
    }

    func status(shards: [ShardStatus]?, dataFolder: String) -> WorkerStatus {
        let (h, e, writes, stale) = state.withLock { ($0.handled, $0.errors, $0.lastWrite, $0.staleEpochRefusals) }
        let disk = DiskSpace(path: dataFolder)
        let withWrites = shards?.map { s -> ShardStatus in
            var s = s
            s.lastWriteSeconds = writes[s.shard].map { ($0.timeIntervalSince1970 * 1000).rounded() / 1000 }
            return s
        }
        let up = started.duration(to: .now)
        var status = WorkerStatus(
            uptimeSeconds: Double(up.components.seconds) + Double(up.components.attoseconds) / 1e18,
            handled: h, errors: e, diskFreeBytes: disk?.free, diskSizeBytes: disk?.size, shards: withWrites)
        if stale > 0 { status.staleEpochRefusals = stale }
        return status
    }
}

/// Free and total bytes of the file system holding a path (statvfs).
struct DiskSpace {
    var free: Int64
    var size: Int64

    init?(path: String) {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        // f_bavail: what an unprivileged process (the worker) may still use.
        free = Int64(s.f_bavail) * Int64(s.f_frsize)
        size = Int64(s.f_blocks) * Int64(s.f_frsize)
    }
}

/// Bytes of a shard's SQLite file and its write-ahead log.
func databaseBytes(path: String) -> Int64 {
    let fm = FileManager.default
    return [path, path + "-wal"].reduce(Int64(0)) { total, p in
        total + (((try? fm.attributesOfItem(atPath: p))?[.size] as? NSNumber)?.int64Value ?? 0)
    }
}
