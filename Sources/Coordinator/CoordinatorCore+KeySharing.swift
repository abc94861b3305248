import Foundation
import Tenancy
import WireProtocol

/// The API keys of a cluster with a control plane (``KeySharing``): the
/// decisions, on the actor; `CoordinatorService.followKeys` does the I/O.
extension CoordinatorCore {
    /// Whether this coordinator shares its keys through the control plane:
    /// it has keys and a control plane.
    var sharesKeys: Bool { keyStore != nil && election != nil }

    /// Holds a client request (but `ping`) while this coordinator serves
    /// and has not read the keys for its epoch; true when held (or refused).
    func holdForKeys(route: [Data], envelope: Envelope) -> Bool {
        guard keysToRead != nil else { return false }
        if case .ping = envelope.body { return false }
        if !keySharing.hold(HeldRequest(route: route, envelope: envelope)) {
            sendError(
                .client(route), envelope.id,
                WireError(
                    code: "busy",
                    message: "the coordinator is reading the cluster's API keys and holds \(keySharing.holdLimit) requests already: retry"))
            return true
        }
        keysWork.signal()
        return true
    }

    /// The serving epoch to read the keys for; nil when they are read (or
    /// this coordinator does not serve).
    var keysToRead: Int? {
        guard sharesKeys, let epoch = election?.servingEpoch(), keySharing.mustRead(epoch: epoch) else { return nil }
        return epoch
    }

    /// Takes the keys the control plane holds into this coordinator's store
    /// (``KeyMerge``); returns those the control plane lacks, to write there.
    /// A standby calls it too, to keep a warm view (and writes nothing).
    func mergeSharedKeys(_ shared: [SharedKey]) -> [SharedKey] {
        guard let store = keyStore else { return [] }
        let (adopt, publish) = KeyMerge.merge(local: store.shared, shared: shared)
        for k in adopt {
            do throws(TenancyError) { try store.adopt(k) } catch {
                logger.error("could not store a key read from the control plane", metadata: ["key.id": "\(k.record.id)", "error": "\(error)"])
            }
        }
        if !adopt.isEmpty { logger.info("took API keys from the control plane", metadata: ["keys.adopted": "\(adopt.count)"]) }
        return publish
    }

    /// The keys agree with the control plane's for `epoch`: the requests
    /// held meanwhile are handled now, in the order they came.
    func keysRead(epoch: Int) {
        guard election?.servingEpoch() == epoch else { return }
        let held = keySharing.read(epoch: epoch)
        logger.notice("read the cluster's API keys", metadata: ["coordinator.epoch": "\(epoch)", "keys.heldRequests": "\(held.count)"])
        for h in held { handleClient(route: h.route, envelope: h.envelope) }
    }

    /// A key made or revoked: answered once the control plane holds it.
    func shareKeyChange(_ change: KeySharing.Change) {
        keySharing.queue(change)
        keysWork.signal()
    }

    /// The key changes for the key loop to write.
    func takeKeyChanges() -> [KeySharing.Change] { keySharing.takeQueued() }

    /// The control plane took the change (`failure` nil): stored here and
    /// answered; or it did not, and the maker is told the key was not made
    /// (or not revoked). A change whose answer from the control plane was
    /// lost may be there nonetheless: a made key whose value nobody was
    /// given admits nobody, and a revocation asked for is one to keep.
    func keyChanged(_ c: KeySharing.Change, failure: String?) {
        if let failure {
            let what = c.value == nil ? "revoked" : "made"
            sendError(
                .client(c.client), c.requestID,
                WireError(
                    code: TenancyError.Code.storeFailed.rawValue,
                    message: "the key was not \(what): the control plane did not take it (\(failure)); try again"))
            return
        }
        do throws(TenancyError) { try keyStore?.adopt(c.key) } catch {
            // The control plane holds it: the next read takes it.
            logger.error("could not store a key the control plane holds", metadata: ["key.id": "\(c.key.record.id)", "error": "\(error)"])
        }
        let rec = c.key.record
        if let value = c.value {
            logger.notice(
                "created an API key", metadata: ["key.id": "\(rec.id)", "key.app": "\(rec.app ?? "-")", "key.role": "\(rec.role.rawValue)"])
            send(.client(c.client), c.requestID, .keysReply(Body.KeysReply(apiKey: value, keys: [rec.json])))
        } else {
            logger.notice("revoked an API key", metadata: ["key.id": "\(rec.id)", "key.app": "\(rec.app ?? "-")"])
            send(.client(c.client), c.requestID, .keysReply(Body.KeysReply(keys: [rec.json])))
        }
    }

    /// Requests held for the keys, answered `not_active` by a coordinator
    /// that no longer serves, so that their clients move on.
    func dropHeldForKeys() -> [HeldRequest] { keySharing.dropHeld() }
}
