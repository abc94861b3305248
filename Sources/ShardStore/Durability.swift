import SQLite

/// What an acknowledged write survives: chosen per indexer with
/// `--durability`, because the price differs by orders of magnitude on some
/// disks and the right answer depends on what the data is worth.
///
/// Either way the shard is in WAL mode, and a commit is what the indexer
/// acknowledges.
package enum Durability: String, Sendable, CaseIterable, Codable {
    /// `synchronous=NORMAL`: a commit is in the log when it is acknowledged,
    /// and the log is synced at checkpoints. An acknowledged write survives
    /// the process being killed (`kill -9`, a crash); the last writes before
    /// a power cut or kernel panic may be lost (the shard stays consistent).
    /// The default: no fsync per batch.
    case process
    /// `synchronous=FULL`: the log is synced before a commit returns, so an
    /// acknowledged write survives a power cut too, at the cost of one fsync
    /// per committed batch.
    case power

    var synchronous: Database.Synchronous { self == .process ? .normal : .full }
}

extension ShardStore {
    /// The durability the shard's connection is running with, read back from
    /// SQLite (`PRAGMA synchronous`), not from what was asked for.
    package func durabilityInForce() throws -> Durability? {
        let level = try db.prepare("PRAGMA synchronous").scalar()?.int64
        return Durability.allCases.first { Int64($0.synchronous.level) == level }
    }
}

extension ShardStore {
    /// Copies the whole write-ahead log into the shard file and truncates the
    /// log to nothing (`wal_checkpoint(TRUNCATE)`); false when a reader still
    /// on an older snapshot kept some of it (what was copied stays copied,
    /// nothing is lost; the caller tries again later). It waits for such a
    /// reader `wait` milliseconds at most, not the connection's busy timeout
    /// of seconds, so a write queued behind it is not held up.
    ///
    /// For a shard gone quiet after writes: the log otherwise keeps its
    /// largest size, up to the checkpoint interval, until the next write.
    /// `journal_size_limit` would shrink it at each reset instead, but during
    /// a bulk publish that gives back and allocates again the same tens of
    /// megabytes at every checkpoint.
    package func truncateLog(wait: Int = 50) throws -> Bool {
        try requireWritable("truncate the write-ahead log")
        do {
            let timeout = try db.prepare("PRAGMA busy_timeout").scalar()?.int64 ?? 5000
            try db.execute("PRAGMA busy_timeout = \(wait)")
            defer { try? db.execute("PRAGMA busy_timeout = \(timeout)") }
            return try db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").scalar()?.int64 == 0
        } catch {
            throw StoreError.wrap(error, "cannot truncate the write-ahead log")
        }
    }
}
