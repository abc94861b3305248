/// When an active coordinator gives its role up for want of workers.
///
/// A coordinator cut off from every worker host but not from the control
/// plane keeps renewing its lease, so no standby takes over, and nothing is
/// written or answered until the network heals. One that had live workers
/// and has had none for ``after`` therefore steps down (its lease revoked,
/// so a standby that the workers can reach takes over at once).
///
/// Only a coordinator that had live workers while active steps down: one
/// that took over and has yet to hear from any worker (every worker host
/// down, or the workers still moving over) keeps the role, so that losing
/// every worker hands the role over at most once instead of back and forth.
struct WorkerAbsence: Sendable, Equatable {
    let after: Duration
    private(set) var hadWorkers = false
    private(set) var noneSince: ContinuousClock.Instant?

    init(after: Duration) { self.after = after }

    /// Observes `live` workers at `now`; true when the coordinator should step down.
    mutating func observe(live: Int, at now: ContinuousClock.Instant) -> Bool {
        guard live == 0 else {
            hadWorkers = true
            noneSince = nil
            return false
        }
        guard hadWorkers else { return false }
        let since = noneSince ?? now
        noneSince = since
        return since.duration(to: now) >= after
    }
}
