import Foundation
import LimelightConcurrency
import Logging
import Synchronization

/// Runs a coordinator's side of the election against the control plane:
/// holds a lease, campaigns when no coordinator is active, keeps the lease
/// alive while active, and tells the coordinator when its role changes.
/// The decisions are ``Leadership``'s; this only does the I/O and the timing.
///
/// ``servingEpoch()`` is asked on every client message and every numbered
/// change: it reads the clock against the last renewal, so a coordinator
/// whose loop is stuck (cut off from the store, or its process stopped and
/// resumed) stops serving by itself once its lease may have lapsed.
package final class CoordinatorElection: Sendable {
    package let store: any ControlPlaneStore
    package let leaseSeconds: Int
    let state: Mutex<Leadership>
    let logger: Logger
    /// Set by ``resign()``: the loop ends without reporting the revoked
    /// lease as a deposition (a clean stop is not a lost lease).
    let resigning = Mutex(false)
    /// Wakes the loop from its pause between renewals, so that a deposition
    /// by ``fence(_:follows:)`` is reported (and the process ends) at once rather
    /// than up to a third of the lease later.
    let turn = Wakeup()

    package init(store: any ControlPlaneStore, leadership: Leadership, leaseSeconds: Int, logger: Logger) {
        self.store = store
        self.state = Mutex(leadership)
        self.leaseSeconds = max(2, leaseSeconds)
        self.logger = logger
    }

    /// The epoch to serve with now; nil when this coordinator must not serve.
    package func servingEpoch() -> Int? {
        state.withLock { $0.servingEpoch(at: .now) }
    }

    package var role: Leadership.Role { state.withLock { $0.role } }

    /// Deposes this coordinator now when a successor leads
    /// (``Leadership/fenced(_:follows:)``); the loop reports it at its next
    /// turn. False when it was not deposed.
    @discardableResult
    package func fence(_ reason: String, follows: Int?) -> Bool {
        let fenced = state.withLock { $0.fenced(reason, follows: follows) }
        if fenced { turn.signal() }
        return fenced
    }

    /// The active coordinator a standby knows of.
    package var knownActive: ActiveCoordinator? { state.withLock { $0.knownActive } }

    /// Campaigns and serves until cancelled or deposed; `changed` is called
    /// with each new role (a deposed coordinator's loop then ends).
    package func run(changed: @escaping @Sendable (Leadership.Role) -> Void) async {
        let clock = ContinuousClock()
        let keys = state.withLock { $0.keys }
        var lease: Lease?
        var last = role
        var pause = Duration.zero
        while !Task.isCancelled, !resigning.withLock({ $0 }) {
            if pause > .zero { await turn.wait(upTo: pause) }
            pause = .milliseconds(leaseSeconds * 1000 / 3)
            // A fenced coordinator neither renews nor reads: it only reports.
            if case .deposed = role {
                if role != last { changed(role) }
                return
            }
            do throws(ControlPlaneError) {
                let held: Lease
                if let lease {
                    held = lease
                } else {
                    held = try await store.grantLease(ttlSeconds: leaseSeconds)
                    lease = held
                }
                // The lease is renewed first, so that a campaign never puts
                // the active record under a lease about to lapse.
                let sent = clock.now
                let left = try await store.keepAlive(held.id)
                state.withLock { $0.renewed(ttlSeconds: left, sentAt: sent) }
                if left == 0, case .standby = role {
                    lease = nil
                    pause = .zero
                    continue
                }
                let read = try await store.range(keys.coordinatorPrefix, prefix: true)
                let step = state.withLock { $0.observe(read, lease: held, isGone: Self.isGone) }
                switch step {
                case .campaign(let t, let epoch):
                    let sentAt = clock.now
                    let result = try await store.commit(t)
                    state.withLock { $0.campaigned(result, epoch: epoch, lease: held, sentAt: sentAt) }
                    if result.succeeded {
                        logger.notice("coordinator active", metadata: ["coordinator.epoch": "\(epoch)", "store": "\(store.name)"])
                    } else {
                        pause = .milliseconds(100)
                    }
                case .serve, .standBy: break
                case .stepDown: break
                }
            } catch {
                logger.warning("control plane unreachable", metadata: ["error": "\(error)", "store": "\(store.name)"])
                if error.message.contains("lease not found") { lease = nil }
                pause = .milliseconds(250)
            }
            // Checked against the clock too: an active coordinator that could
            // not renew in time is deposed here even while the store is silent.
            _ = servingEpoch()
            let now = role
            if resigning.withLock({ $0 }) { return }
            if now != last {
                last = now
                changed(now)
                if case .deposed = now { return }
            }
        }
    }

    /// Gives the role up at once (a clean stop): the lease is revoked, so a
    /// standby takes over without waiting for it to lapse.
    package func resign() async {
        resigning.withLock { $0 = true }
        guard case .active = role else { return }
        await revokeActiveLease()
    }

    /// Gives the role up because this coordinator cannot do its work
    /// (`reason`): deposed now, as by ``fence(_:follows:)``, and its lease revoked,
    /// so that a standby takes over without waiting for it to lapse.
    package func stepDown(_ reason: String) async {
        guard fence(reason, follows: nil) else { return }
        await revokeActiveLease()
    }

    /// Revokes the lease of the active record when it is this coordinator's.
    private func revokeActiveLease() async {
        let id = state.withLock { $0.id }
        let record = (try? await store.range(state.withLock { $0.keys.active }, prefix: false).values.first).flatMap {
            ActiveCoordinator.decode($0.value)
        }
        if let record, record.id == id { try? await store.revoke(record.lease) }
    }
}

extension CoordinatorElection {
    /// Reads the cluster's shard map, creating it from `shards` when the
    /// control plane has none; throws ``ShardMap/Invalid`` when the cluster
    /// has another shard count (a coordinator started with the wrong
    /// `--shards` must not serve).
    package func ensureShardMap(shards: Int) async throws -> ShardMap {
        let key = state.withLock { $0.keys.shardMap }
        while true {
            let existing = try await store.get(key)
            switch ShardMap.bootstrap(existing: existing, shards: shards, key: key) {
            case .agrees(let map): return map
            case .conflict(let message): throw ShardMap.Invalid(code: .badShardCount, message: message)
            case .create(let map, let t):
                if try await store.commit(t).succeeded {
                    logger.notice("created the cluster's shard map", metadata: ["shards": "\(map.shards)", "slots": "\(map.slots)"])
                    return map
                }
            }
        }
    }
}

extension CoordinatorElection {
    /// Whether the process an active record names has ended: it ran on this
    /// host and no process has its pid. Only then is the answer sure (a pid
    /// means nothing on another host), so a record of another host is never gone.
    static func isGone(_ record: ActiveCoordinator) -> Bool {
        guard let host = record.host, let pid = record.pid, host == ProcessInfo.processInfo.hostName, pid > 0 else { return false }
        return kill(pid_t(pid), 0) != 0 && errno == ESRCH
    }
}
