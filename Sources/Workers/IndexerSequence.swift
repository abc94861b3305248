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
}

extension IndexerService {
    /// Applies a change on the shard's own thread, in order: one the file has
    /// applied already is skipped, one that would jump over missing changes is
    /// refused (the coordinator sends the missing ones first), and the next
    /// one is applied with its number recorded in the same transaction.
    /// Changes without a number (an older coordinator) are applied as they come.
    func applySequenced<T: Sendable>(
        _ box: StoreBox, _ exec: DedicatedThread, sequence: Int?,
        _ change: @escaping @Sendable (ShardStore) throws -> T
    ) async throws -> Applied<T> {
        try await exec.run { () throws -> Applied<T> in
            let store = box.value
            if let sequence {
                switch try store.check(sequence: sequence) {
                case .applied: return .skipped
                case .gap(let have): return .gap(have: have)
                case .next: break
                }
            }
            return .done(try store.applying(sequence: sequence) { try change(store) })
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
