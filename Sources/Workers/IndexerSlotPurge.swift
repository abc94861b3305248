import Foundation
import ShardStore

extension IndexerService {
    /// Items deleted per transaction by the background purge of a split's
    /// moved slots: small enough that a write waiting behind one waits tens
    /// of milliseconds, not the whole purge.
    static let slotPurgeBatch = 200

    /// Deletes, in the background, the rows of the slots each shard no
    /// longer owns after a split (``ShardStore/markMoved(keeping:)`` marked
    /// them; reads leave them out meanwhile), a batch at a time on the
    /// shard's own thread, so writes queued there run between batches. It
    /// looks at every shard's mark, so a purge a predecessor or a copied
    /// file left under way is finished too.
    func purgeMovedSlots() async {
        while !Task.isCancelled {
            var busy = false
            for (shard, (box, exec)) in stores {
                do {
                    let (deleted, remaining) = try await exec.run { try box.value.purgeMovedBatch(limit: Self.slotPurgeBatch) }
                    if deleted > 0 { tally.changed(shard: shard, wrote: false) }
                    busy = busy || remaining
                } catch {
                    logger.error("purging moved slots failed", metadata: ["shard": "\(shard)", "error": "\(error)"])
                }
            }
            try? await Task.sleep(for: .milliseconds(busy ? 5 : 200))
        }
    }
}
