import WireProtocol

/// One query's or search's parts on its shards: which query worker runs
/// each shard now, which were tried, how many of a shard's results reached
/// the client, and which shards failed and why.
///
/// It decides what happens to a shard when its worker answers, fails, is
/// lost or runs out of time — retried on another replica, or named in the
/// completion's `failedShards` — and the core carries it out (picks the next
/// worker from the ``WorkerRegistry``, sends, resets the merge). A value, so
/// that every rule is unit-tested without processes (`QueryTrackerTests`).
struct ShardScatter: Sendable {
    /// Shard → the worker running it now.
    private(set) var outstanding: [Int: String] = [:]
    /// Shard → the workers tried for it, the current one included.
    private(set) var tried: [Int: Set<String>] = [:]
    /// Shard → results of it released to the client.
    private(set) var delivered: [Int: Int] = [:]
    /// Shards that will not answer, with the reason.
    private(set) var failed: [ShardFailure] = []

    /// What becomes of a shard after an event.
    enum Outcome: Equatable, Sendable {
        /// Not this worker's shard (any more): a late or stray message.
        case ignored
        /// Send the shard's part to another worker (``assign(_:to:)``, or
        /// ``unassignable(_:)`` when none is left); nothing of it reached the client.
        case retry
        /// The shard is over: answered, or named in ``failed``.
        case finished
    }

    /// Every shard has answered or failed.
    var isDone: Bool { outstanding.isEmpty }

    func tried(_ shard: Int) -> Set<String> { tried[shard] ?? [] }

    /// Whether `worker` runs `shard` now: only its messages about the shard count.
    func isRunning(_ shard: Int, on worker: String) -> Bool { outstanding[shard] == worker }

    /// The shard `worker` runs, for an error that names none.
    func shard(runBy worker: String) -> Int? { outstanding.first { $0.value == worker }?.key }

    /// The workers running the shards, for the stats' queue depths.
    var workers: Dictionary<Int, String>.Values { outstanding.values }

    mutating func assign(_ shard: Int, to worker: String) {
        tried[shard, default: []].insert(worker)
        outstanding[shard] = worker
    }

    /// No worker is left to run the shard: it fails, saying whether there never was one.
    mutating func unassignable(_ shard: Int) {
        failed.append(ShardFailure(shard: shard, reason: tried(shard).isEmpty ? "no live query worker" : "every query worker for the shard failed"))
    }

    /// `count` of the shard's results reached the client: from now on its
    /// worker's loss fails the shard rather than starting it over.
    mutating func delivered(_ count: Int, of shard: Int) {
        delivered[shard, default: 0] += count
    }

    /// The shard's worker finished it. A worker too busy to run it (`busy`)
    /// before any result reached the client is retried on another replica
    /// when `another` says one is left; any other error fails the shard.
    mutating func done(_ shard: Int, by worker: String, error: WireError?, another: (Set<String>) -> Bool) -> Outcome {
        guard isRunning(shard, on: worker) else { return .ignored }
        outstanding.removeValue(forKey: shard)
        if let error, error.code == "busy", (delivered[shard] ?? 0) == 0, another(tried(shard)) { return .retry }
        if let error { failed.append(ShardFailure(shard: shard, reason: error.message)) }
        return .finished
    }

    /// A shard ended on its last batch with nothing more to wait for.
    mutating func ended(_ shard: Int) {
        outstanding.removeValue(forKey: shard)
    }

    /// The shard's worker failed it (a search's shard: nothing of it was
    /// sent yet): retried on another replica while `another` says one is
    /// left, else failed with `reason`.
    mutating func shardFailed(_ shard: Int, by worker: String, reason: String, another: (Set<String>) -> Bool) -> Outcome {
        guard isRunning(shard, on: worker) else { return .ignored }
        outstanding.removeValue(forKey: shard)
        if another(tried(shard)) { return .retry }
        failed.append(ShardFailure(shard: shard, reason: reason))
        return .finished
    }

    /// `worker` is gone: each shard it ran starts over elsewhere if nothing
    /// of it reached the client, and otherwise fails (the client has part
    /// of the shard's results, and a second run would repeat them).
    mutating func lost(_ worker: String) -> [(shard: Int, outcome: Outcome)] {
        var outcomes: [(shard: Int, outcome: Outcome)] = []
        for (shard, wid) in outstanding.sorted(by: { $0.key < $1.key }) where wid == worker {
            outstanding.removeValue(forKey: shard)
            if (delivered[shard] ?? 0) == 0 {
                outcomes.append((shard, .retry))
            } else {
                failed.append(ShardFailure(shard: shard, reason: "query worker \(worker) was lost mid-stream"))
                outcomes.append((shard, .finished))
            }
        }
        return outcomes
    }

    /// Stops every shard still running — a cancel, a deadline, a limit
    /// reached — and returns the workers to tell (`cancel`). With a
    /// `reason` (a deadline) the stopped shards fail with it; a cancel or a
    /// limit names none.
    mutating func stop(reason: String?) -> [(shard: Int, worker: String)] {
        let stopped = outstanding.sorted { $0.key < $1.key }.map { (shard: $0.key, worker: $0.value) }
        if let reason { for s in stopped { failed.append(ShardFailure(shard: s.shard, reason: reason)) } }
        outstanding.removeAll()
        return stopped
    }
}
