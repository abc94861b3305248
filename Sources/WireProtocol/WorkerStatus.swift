/// What a worker says about itself with each heartbeat, for the coordinator's
/// `GET /stats`, `GET /metrics` and status page.
///
/// Carried by heartbeats rather than asked for, so the coordinator's figures
/// cost no extra round trip and are never older than one heartbeat (a second
/// by default). Every field but the counters is optional: an older worker
/// that sends none is still a worker, with its figures shown as unknown.
public struct WorkerStatus: Sendable, Hashable, Codable {
    /// Seconds since the worker process started.
    public var uptimeSeconds: Double
    /// Requests the worker has finished: writes, deletes and declarations for
    /// an indexer, shard queries for a query worker. Counts since the process
    /// started, so a restart starts them again from zero.
    public var handled: Int
    /// Requests among those that failed (a write the store refused as a whole,
    /// a shard query that could not run). Rejected items are not errors.
    public var errors: Int
    /// Free and total bytes of the file system holding the data folder.
    public var diskFreeBytes: Int64?
    public var diskSizeBytes: Int64?
    /// An indexer's shards (a query worker reports none: the indexer beside it does).
    public var shards: [ShardStatus]?
    /// Changes an indexer refused because they came from a coordinator epoch
    /// below its shard's (`stale_epoch`): a deposed coordinator was fenced off.
    public var staleEpochRefusals: Int?

    public init(
        uptimeSeconds: Double, handled: Int, errors: Int, diskFreeBytes: Int64? = nil,
        diskSizeBytes: Int64? = nil, shards: [ShardStatus]? = nil
    ) {
        self.uptimeSeconds = uptimeSeconds
        self.handled = handled
        self.errors = errors
        self.diskFreeBytes = diskFreeBytes
        self.diskSizeBytes = diskSizeBytes
        self.shards = shards
    }
}

/// One shard as its indexer sees it.
public struct ShardStatus: Sendable, Hashable, Codable {
    public var shard: Int
    /// Items stored, expired ones included until they are purged.
    public var items: Int
    /// The SQLite file and its write-ahead log, in bytes.
    public var databaseBytes: Int64
    /// When this indexer last committed a write to the shard, in seconds since
    /// 1970-01-01 UTC; absent when it has not since it started.
    public var lastWriteSeconds: Double?

    public init(shard: Int, items: Int, databaseBytes: Int64, lastWriteSeconds: Double? = nil) {
        self.shard = shard
        self.items = items
        self.databaseBytes = databaseBytes
        self.lastWriteSeconds = lastWriteSeconds
    }
}
