import Foundation
import WireProtocol

/// A worker's own counts for its heartbeats' `WorkerStatus`: requests handled
/// and failed, and per shard when it was last written and whether its item
/// count must be taken again.
///
/// Shared by the message loop and the heartbeat loop, hence the lock; every
/// operation is a few arithmetic steps, so contention is not a concern.
final class WorkerTally: @unchecked Sendable {
    // Every field is read and written only while holding `lock`.
    private let lock = NSLock()
    private let started = ContinuousClock.now
    private var handled = 0
    private var errors = 0
    private var lastWrite: [Int: Date] = [:]
    private var counted: [Int: Int] = [:]
    /// Bumped by every change of a shard, so a count taken across a change is not kept.
    private var generation: [Int: Int] = [:]
    /// The last count taken, current or not: what a heartbeat reports while a new one is taken.
    private var lastCounted: [Int: Int] = [:]
    /// Shards whose count is being taken now.
    private var counting: Set<Int> = []

    func finished(failed: Bool = false) {
        lock.lock()
        handled += 1
        if failed { errors += 1 }
        lock.unlock()
    }

    /// A write, delete or purge changed the shard: its count is taken again at the next heartbeat.
    func changed(shard: Int, wrote: Bool) {
        lock.lock()
        counted.removeValue(forKey: shard)
        generation[shard, default: 0] += 1
        if wrote { lastWrite[shard] = Date() }
        lock.unlock()
    }

    /// The shard's item count when nothing changed it since it was last taken;
    /// otherwise nil and the generation to hand back to `setCount`.
    func knownCount(shard: Int) -> (count: Int?, generation: Int, last: Int?) {
        lock.lock(); defer { lock.unlock() }
        return (counted[shard], generation[shard, default: 0], lastCounted[shard])
    }

    /// True when nobody is taking the shard's count yet: the caller takes it
    /// and hands it to `setCount`.
    func beginCounting(shard: Int) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return counting.insert(shard).inserted
    }

    /// Keeps a count taken at `generation`, unless the shard changed meanwhile
    /// (it is still the last one taken); nil when taking it failed.
    func setCount(_ n: Int?, shard: Int, generation g: Int) {
        lock.lock()
        counting.remove(shard)
        if let n {
            lastCounted[shard] = n
            if generation[shard, default: 0] == g { counted[shard] = n }
        }
        lock.unlock()
    }

    func status(shards: [ShardStatus]?, dataFolder: String) -> WorkerStatus {
        lock.lock()
        let (h, e) = (handled, errors)
        let writes = lastWrite
        lock.unlock()
        let disk = DiskSpace(path: dataFolder)
        let withWrites = shards?.map { s -> ShardStatus in
            var s = s
            s.lastWriteSeconds = writes[s.shard].map { ($0.timeIntervalSince1970 * 1000).rounded() / 1000 }
            return s
        }
        let up = started.duration(to: .now)
        return WorkerStatus(uptimeSeconds: Double(up.components.seconds) + Double(up.components.attoseconds) / 1e18,
                            handled: h, errors: e, diskFreeBytes: disk?.free, diskSizeBytes: disk?.size, shards: withWrites)
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
