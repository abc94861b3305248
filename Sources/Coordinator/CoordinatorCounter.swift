/// The name of one of the coordinator's counters: `stats.counters` in
/// `/stats` and, for the mirrored ones, a Prometheus counter in `/metrics`
/// (``CoordinatorMetrics/mirroredCounters``).
///
/// Typed, so a counter is named once and a typo is a compile error rather
/// than a second counter; the raw value is the name operators, dashboards
/// and tests read, and must not change.
struct CoordinatorCounter: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    var rawValue: String
    init(rawValue: String) { self.rawValue = rawValue }
    var description: String { rawValue }

    // Writes.
    static let publishBatches = Self(rawValue: "publish.batches")
    static let publishItems = Self(rawValue: "publish.items")
    static let publishStored = Self(rawValue: "publish.stored")
    static let publishRejected = Self(rawValue: "publish.rejected")
    static let publishThrottled = Self(rawValue: "publish.throttled")
    static let publishBusy = Self(rawValue: "publish.busy")
    static let deletes = Self(rawValue: "deletes")
    static let entitiesDonated = Self(rawValue: "entities.donated")

    // Queries and searches.
    static let queries = Self(rawValue: "queries")
    static let queriesBusyRetried = Self(rawValue: "queries.busyRetried")
    static let queriesPartial = Self(rawValue: "queries.partial")
    static let queriesCancelled = Self(rawValue: "queries.cancelled")
    static let queriesAbandoned = Self(rawValue: "queries.abandoned")
    static let queriesTimedOut = Self(rawValue: "queries.timedOut")
    static let searches = Self(rawValue: "searches")
    static let searchesSemantic = Self(rawValue: "searches.semantic")
    static let searchesPartial = Self(rawValue: "searches.partial")
    static let searchesTimedOut = Self(rawValue: "searches.timedOut")
    static let searchesCancelled = Self(rawValue: "searches.cancelled")
    static let suggests = Self(rawValue: "suggests")
    static let suggestsSemantic = Self(rawValue: "suggests.semantic")
    static let spotlights = Self(rawValue: "spotlights")
    static let continuations = Self(rawValue: "continuations")

    // Workers and replicas.
    static let workersLost = Self(rawValue: "workers.lost")
    /// Replicas taken for lost because they lagged (``WriteTracker/laggards(at:limit:)``); counted in `workers.lost` too.
    static let replicasLagging = Self(rawValue: "replicas.lagging")
    static let workersRefused = Self(rawValue: "workers.refused")
    static let workersChallenged = Self(rawValue: "workers.challenged")
    static let catchUpStarted = Self(rawValue: "catchup.started")
    static let catchUpMessages = Self(rawValue: "catchup.messages")
    static let catchUpDetached = Self(rawValue: "catchup.detached")
    static let copyStarted = Self(rawValue: "copy.started")
    static let copyBytes = Self(rawValue: "copy.bytes")
    static let copyFinished = Self(rawValue: "copy.finished")
    static let copyMs = Self(rawValue: "copy.ms")
    static let copyAbandoned = Self(rawValue: "copy.abandoned")
    /// Copies abandoned because no chunk moved for `--copy-stall-ms` (also counted in `copy.abandoned`).
    static let copyStalled = Self(rawValue: "copy.stalled")
    /// In-sync sets (``InSyncReplicas``): replicas taken out before a change
    /// they missed was acknowledged, replicas put back once caught up,
    /// acknowledgements that waited for the control plane, and changes
    /// refused because no in-sync member of their shard was live.
    static let inSyncRemoved = Self(rawValue: "insync.removed")
    static let inSyncRejoined = Self(rawValue: "insync.rejoined")
    static let inSyncHeld = Self(rawValue: "insync.heldAnswers")
    static let inSyncNoMember = Self(rawValue: "insync.noMember")
    /// Shard splits finished, and the last one's figures: its whole time,
    /// how long client writes were held, and how long queries went by the
    /// new map before its commit (the old map's queries finishing, then the
    /// marks). Queries are never held.
    static let splitsDone = Self(rawValue: "split.done")
    static let splitMs = Self(rawValue: "split.ms")
    static let splitWritePauseMs = Self(rawValue: "split.writePauseMs")
    static let splitSwitchMs = Self(rawValue: "split.switchMs")
    /// Replica changes finished (add-replica, retire, move), and the last one's time.
    static let replicaChangesDone = Self(rawValue: "replicaChange.done")
    static let replicaChangeMs = Self(rawValue: "replicaChange.ms")

    // Clients, keys and connections.
    static let errors = Self(rawValue: "errors")
    static let outboxDropped = Self(rawValue: "outbox.dropped")
    static let keysRefused = Self(rawValue: "keys.refused")
    static let keysForbidden = Self(rawValue: "keys.forbidden")
    static let keysRateLimited = Self(rawValue: "keys.rateLimited")
    static let keysTooManyItems = Self(rawValue: "keys.tooManyItems")
    static let connectionsRefusedClients = Self(rawValue: "connections.refused.clients")
    static let connectionsRefusedWorkers = Self(rawValue: "connections.refused.workers")
    /// Requests and registrations a standby (or deposed) coordinator answered `not_active`.
    static let notActive = Self(rawValue: "requests.notActive")
    /// Changes an indexer refused as of an older coordinator epoch (this coordinator was deposed).
    static let staleEpochAnswers = Self(rawValue: "writes.staleEpoch")
}
