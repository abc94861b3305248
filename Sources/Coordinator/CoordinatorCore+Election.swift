import ControlPlane
import Foundation
import Items
import WireProtocol

/// Serving only while active: a coordinator of a cluster with a control
/// plane answers requests and registrations only while it holds the lease
/// (see ``CoordinatorElection``); otherwise it answers `not_active`, naming
/// the active coordinator when it knows it.
extension CoordinatorCore {
    /// Whether to handle a request or registration from `peer` now; when
    /// not, it has been answered `not_active`.
    func admitWhileActive(_ peer: Peer, _ id: String) -> Bool {
        guard let election else { return true }
        if let epoch = election.servingEpoch() {
            if activeEpoch == nil {
                activeEpoch = epoch
                logger.notice("serving as the active coordinator", metadata: ["coordinator.epoch": "\(epoch)"])
            }
            return true
        }
        count(.notActive)
        sendError(peer, id, notActive(peer, election))
        return false
    }

    /// An indexer refused a change as of an older epoch than its shard's:
    /// when the shard follows a newer epoch than this coordinator's, another
    /// coordinator has taken over, and this one stops serving at once (the
    /// election then ends the process) rather than when its lease runs out.
    func fencedOff(by worker: String, _ error: WireError) {
        count(.staleEpochAnswers)
        guard let election, election.fence("indexer \(worker) refused a change: \(error.message)", follows: error.epoch) else {
            return
        }
        logger.critical("fenced off by a newer coordinator", metadata: ["worker": "\(worker)", "error": "\(error.message)"])
    }

    /// Ends a deposed coordinator's part: every change it was carrying is
    /// answered `not_active` (``WriteTracker/abandonAll()``), then it waits
    /// until ZeroMQ has taken every answer queued for clients, or `bound`
    /// has passed, for the process ends right after and the producers must
    /// hear where to resend rather than wait out their timeouts.
    func deposedAnswerChanges(within bound: Duration) async {
        if let election {
            for pending in writes.abandonAll() {
                sendError(.client(pending.client), pending.requestID, notActive(.client(pending.client), election))
            }
            let heldForSplit = splitNotTakenUp + (splitRun?.held ?? [])
            splitNotTakenUp = []
            splitRun?.held = []
            for held in dropHeldForKeys() + heldForSplit {
                sendError(.client(held.route), held.envelope.id, notActive(.client(held.route), election))
            }
            for change in takeKeyChanges() {
                sendError(.client(change.client), change.requestID, notActive(.client(change.client), election))
            }
        }
        let deadline = ContinuousClock.now + bound
        while clientOutlet.outboxes.peersWaiting > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Steps down when this active coordinator has had no live worker for
    /// the configured time after having had some (``WorkerAbsence``): it
    /// is cut off from the workers while a standby may not be.
    func checkWorkerAbsence() {
        guard let election, var absence = workerAbsence, case .active = election.role else { return }
        let stepDown = absence.observe(live: registry.workers.count, at: .now)
        workerAbsence = absence
        guard stepDown else { return }
        let reason = "no live worker for \(absence.after) after having had some; the role is left to a coordinator the workers reach"
        logger.critical("stepping down", metadata: ["reason": "\(reason)"])
        workerAbsence = nil
        Task { await election.stepDown(reason) }
    }

    /// Whether this coordinator may still acknowledge a change: it holds its
    /// lease now (``CoordinatorElection/servingEpoch()`` reads the clock).
    func stillActive() -> Bool {
        guard let election else { return true }
        return election.servingEpoch() != nil
    }

    /// The `coordinator` object of the stats: this coordinator's role in the
    /// election, the epoch it serves with, and the active one it knows of.
    func electionJSON(_ election: CoordinatorElection) -> JSONValue {
        var o: [String: JSONValue] = ["epoch": activeEpoch.map { .number(Double($0)) } ?? .null]
        switch election.role {
        case .active: o["role"] = .string("active")
        case .standby(let active):
            o["role"] = .string("standby")
            if let active { o["active"] = .string(active.id) }
        case .deposed(_, let reason):
            o["role"] = .string("deposed")
            o["reason"] = .string(reason)
        }
        return .object(o)
    }

    func notActive(_ peer: Peer, _ election: CoordinatorElection) -> WireError {
        let role = election.role
        switch role {
        case .deposed(let epoch, let reason):
            return WireError(code: "not_active", message: "this coordinator no longer leads (epoch \(epoch): \(reason)); try another coordinator")
        case .active, .standby:
            guard let active = election.knownActive else {
                return WireError(code: "not_active", message: "this coordinator is a standby, and no coordinator is active yet; try again shortly")
            }
            let endpoint: String
            switch peer {
            case .client: endpoint = active.clients
            case .worker: endpoint = active.workers
            }
            return WireError(
                code: "not_active", message: "this coordinator is a standby; the active one is \(active.id) (epoch \(active.epoch)) at \(endpoint)",
                active: endpoint)
        }
    }
}

extension Body {
    /// An answer that reports a change stored: a coordinator that is no
    /// longer sure it leads must not send one.
    var acknowledgesAChange: Bool {
        switch self {
        case .publishAck, .deleteAck, .entityAck, .declareAck: true
        default: false
        }
    }
}
