import Foundation
import LimelightConcurrency
import ShardStore
import WireProtocol

/// What became of a numbered change (see `ShardSequence`).
enum Applied<T: Sendable>: Sendable {
    case done(T)
    /// Applied before: a catch-up resent it.
    case skipped
    /// Changes before it are missing; nothing was applied.
    case gap(have: Int)
    /// It comes from a coordinator epoch below the shard's, or below that
    /// of the coordinator this worker registered with; nothing was applied.
    case staleEpoch(have: Int)
    /// A registration is unanswered (``RegistrationFence``); nothing was applied.
    case awaitingRegistration
}

extension IndexerService {
    /// Applies a change on the shard's own thread, in order (see
    /// ``sequenced(_:sequence:epoch:_:)``).
    func applySequenced<T: Sendable>(
        _ box: StoreBox, _ exec: DedicatedThread, sequence: Int?, epoch: Int? = nil,
        _ change: @escaping @Sendable (ShardStore) throws -> T
    ) async throws -> Applied<T> {
        let registrations = link.registrations
        while true {
            let applied = try await exec.run {
                try Self.sequenced(box.value, sequence: sequence, epoch: epoch, fence: registrations.fence, change)
            }
            if case .awaitingRegistration = applied {
                await registrations.settled()
                try Task.checkCancellation()
                continue
            }
            if case .staleEpoch = applied { tally.refusedStaleEpoch() }
            return applied
        }
    }

    /// Applies a change, in order: one the file has applied already is
    /// skipped, one that would jump over missing changes is refused (the
    /// coordinator sends the missing ones first), and the next one is applied
    /// with its number recorded in the same transaction (or savepoint, inside
    /// a group: ``ShardStore/group(_:)``), so the highest number the file
    /// holds is always that of the last change it holds. Changes without a
    /// number (an older coordinator) are applied as they come. `fence` is
    /// what the worker's registrations allow, read on the shard's thread.
    static func sequenced<T: Sendable>(
        _ store: ShardStore, sequence: Int?, epoch: Int?, fence: RegistrationFence = RegistrationFence(),
        _ change: (ShardStore) throws -> T
    ) throws -> Applied<T> {
        if sequence != nil {
            switch fence.verdict(changeEpoch: epoch) {
            case .wait: return .awaitingRegistration
            case .stale(let registered): return .staleEpoch(have: registered)
            case .apply: break
            }
        }
        if let sequence {
            switch try store.check(sequence: sequence, epoch: epoch) {
            case .applied: return .skipped
            case .gap(let have): return .gap(have: have)
            case .staleEpoch(let have): return .staleEpoch(have: have)
            case .next: break
            }
        }
        do {
            return .done(try store.applying(sequence: sequence, epoch: epoch) { try change(store) })
        } catch let e as StoreError where e.code == .staleEpoch {
            return .staleEpoch(have: (try? store.coordinatorEpoch()) ?? 0)
        }
    }

    /// Each shard's last applied sequence number, for the registration.
    func sequences() async -> [ShardSequence] {
        var out: [ShardSequence] = []
        for shard in configuration.shards.sorted() {
            guard let (box, exec) = stores[shard] else { continue }
            let n = (try? await exec.run { try box.value.sequence() }) ?? 0
            out.append(ShardSequence(shard: shard, sequence: n))
        }
        return out
    }

    static func staleEpoch(shard: Int, epoch: Int?, have: Int) -> WireError {
        WireError(
            code: "stale_epoch",
            message:
                "shard \(shard) follows coordinator epoch \(have); this change of epoch \(epoch ?? 0) comes from a coordinator that no longer leads",
            epoch: have)
    }

    static func outOfSequence(shard: Int, sequence: Int, have: Int) -> WireError {
        WireError(
            code: "out_of_sequence",
            message: "shard \(shard) has applied changes up to \(have); change \(sequence) must wait for \(have + 1)-\(sequence - 1)")
    }
}

/// The replica a worker serves unless told otherwise: its host and the
/// absolute path of its data folder, which an indexer and a query worker
/// started on the same folder share.
package func defaultReplicaName(data: String) -> String {
    "\(ProcessInfo.processInfo.hostName):\(URL(fileURLWithPath: data).standardizedFileURL.path)"
}
