import Foundation

/// Which coordinator serves: the decisions of the election, as a value
/// (the I/O is ``CoordinatorElection``'s), unit-tested without a store.
///
/// A coordinator campaigns with one transaction: if no coordinator is
/// active and the epoch is unchanged since it was read, it becomes the
/// active one, under its lease, with the epoch raised by one. It serves
/// while its lease is surely alive: until the lease's time to live has
/// passed since the last renewal it *sent* (so, by its own clock, never
/// after etcd may have let the lease lapse). Once that passes without a
/// renewal, or the store says the lease lapsed, it has lost: it does not
/// serve again under that epoch.
package struct Leadership: Sendable {
    /// What this coordinator is.
    package enum Role: Sendable, Equatable {
        /// Not active; `active` is the one that is, when there is one.
        case standby(active: ActiveCoordinator?)
        /// Active with this epoch.
        case active(epoch: Int)
        /// Was active, and its lease lapsed (or might have): it serves no
        /// more, and its process should end (a new one campaigns afresh).
        case deposed(epoch: Int, reason: String)
    }

    /// What the election loop must do after reading the store.
    package enum Step: Sendable, Equatable {
        /// Try to become active with this transaction, at this epoch.
        case campaign(Transaction, epoch: Int)
        /// Another coordinator is active (or none can be yet).
        case standBy
        /// This coordinator is active: keep the lease alive.
        case serve
        /// Stop serving (see ``Role/deposed(epoch:reason:)``).
        case stepDown(String)
    }

    package let id: String
    package let clients: String
    package let workers: String
    package let keys: ClusterKeys
    /// This process, named in its active record (``ActiveCoordinator/host``).
    package var host: String?
    package var pid: Int?
    package private(set) var role: Role = .standby(active: nil)
    /// When the last successful renewal (or the campaign) was sent.
    package private(set) var renewedAt: ContinuousClock.Instant?
    package private(set) var ttl: Duration = .zero

    package init(id: String, clients: String, workers: String, keys: ClusterKeys) {
        self.id = id
        self.clients = clients
        self.workers = workers
        self.keys = keys
    }

    /// Decides from what the store holds under ``ClusterKeys/coordinatorPrefix``
    /// and this coordinator's lease. `isGone` says whether the process an
    /// active record names is known to have ended (on this host, no process
    /// has its pid): its lease need not run out before another takes over.
    package mutating func observe(_ state: RangeResult, lease: Lease, isGone: (ActiveCoordinator) -> Bool = { _ in false }) -> Step {
        let activeKV = state.first(keys.active)
        let active = activeKV.flatMap { ActiveCoordinator.decode($0.value) }
        switch role {
        case .deposed(_, let reason):
            return .stepDown(reason)
        case .active(let epoch):
            if let active, active.id == id, active.epoch == epoch, active.lease == lease.id { return .serve }
            let why =
                active.map { "the control plane names \($0.id) (epoch \($0.epoch)) as active" } ?? "the active record is gone (the lease lapsed)"
            role = .deposed(epoch: epoch, reason: why)
            return .stepDown(why)
        case .standby:
            if let active {
                // A campaign resent after a timeout may have won the first time.
                if active.id == id, active.lease == lease.id {
                    role = .active(epoch: active.epoch)
                    return .serve
                }
                guard isGone(active), let activeKV else {
                    role = .standby(active: active)
                    return .standBy
                }
                // Its process is gone: take over now, if the record is still
                // the one read (a put under this lease replaces it).
                role = .standby(active: nil)
                return campaign(state, lease: lease, replacing: activeKV)
            }
            role = .standby(active: nil)
            return campaign(state, lease: lease, replacing: nil)
        }
    }

    /// The campaign: if the active record is absent (or still `replacing`, a
    /// gone process's) and the epoch unchanged, become active with the next epoch.
    func campaign(_ state: RangeResult, lease: Lease, replacing old: KeyValue?) -> Step {
        let epochKV = state.first(keys.epoch)
        let next = (Int(epochKV?.string ?? "") ?? 0) + 1
        let record = ActiveCoordinator(id: id, epoch: next, clients: clients, workers: workers, lease: lease.id, host: host, pid: pid)
        let activeIs: Compare = old.map { .unchanged(keys.active, since: $0.modRevision) } ?? .absent(keys.active)
        let t = Transaction(
            if: [activeIs, .unchanged(keys.epoch, since: epochKV?.modRevision ?? 0)],
            then: [.put(keys.active, record.encoded(), lease: lease.id), .put(keys.epoch, Data(String(next).utf8))])
        return .campaign(t, epoch: next)
    }

    /// The campaign's transaction answered; `sentAt` is when it was sent.
    package mutating func campaigned(_ result: TransactionResult, epoch: Int, lease: Lease, sentAt: ContinuousClock.Instant) {
        guard result.succeeded, case .standby = role else { return }
        role = .active(epoch: epoch)
        renewedAt = sentAt
        ttl = .seconds(lease.ttlSeconds)
    }

    /// A keep-alive sent at `sentAt` answered that the lease has `ttlSeconds`
    /// left (0: it lapsed).
    package mutating func renewed(ttlSeconds: Int, sentAt: ContinuousClock.Instant) {
        guard case .active(let epoch) = role else { return }
        guard ttlSeconds > 0 else {
            role = .deposed(epoch: epoch, reason: "the control plane let the lease lapse")
            return
        }
        renewedAt = max(renewedAt ?? sentAt, sentAt)
        ttl = .seconds(ttlSeconds)
    }

    /// The epoch to serve with at `now`, or nil: this coordinator must not
    /// serve (a standby, or an active one whose lease may have lapsed —
    /// which deposes it).
    package mutating func servingEpoch(at now: ContinuousClock.Instant) -> Int? {
        guard case .active(let epoch) = role else { return nil }
        guard let renewedAt, now < renewedAt.advanced(by: ttl) else {
            role = .deposed(epoch: epoch, reason: "no renewal of the lease for its whole time to live")
            return nil
        }
        return epoch
    }

    /// A worker refused a change as of an older epoch than the one its shard
    /// follows (`follows`): when that is above this coordinator's epoch, a
    /// successor leads, and it is deposed. False when it was not active, or
    /// when the shard follows this coordinator's epoch (or an older one):
    /// the refused change was a predecessor's, reaching this coordinator
    /// because the worker had moved on while it was queued. A refusal that
    /// names no epoch is taken as a successor's.
    package mutating func fenced(_ reason: String, follows: Int?) -> Bool {
        guard case .active(let epoch) = role else { return false }
        if let follows, follows <= epoch { return false }
        role = .deposed(epoch: epoch, reason: reason)
        return true
    }

    /// The active coordinator a standby names, if known.
    package var knownActive: ActiveCoordinator? {
        if case .standby(let a) = role { return a }
        return nil
    }
}
