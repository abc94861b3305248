import Foundation
import LimelightConcurrency
import ShardStore

extension IndexerService {
    /// Items deleted per transaction by the background purge of a split's
    /// moved slots: small enough that a write waiting behind one waits tens
    /// of milliseconds, not the whole purge.
    static let slotPurgeBatch = 200

    /// How long the purge loop sleeps when nothing woke it: a mark is applied
    /// by this process, which wakes it, so this only bounds a missed wakeup.
    static let slotPurgeFallback = Duration.seconds(5)

    /// Deletes, in the background, the rows of the slots each shard no
    /// longer owns after a split (``ShardStore/markMoved(keeping:)`` marked
    /// them; reads leave them out meanwhile), a batch at a time on the
    /// shard's own thread, so writes queued there run between batches. It
    /// looks at every shard's mark, so a purge a predecessor or a copied
    /// file left under way is finished too. It runs when woken
    /// (``slotPurgeWork``: a mark applied, a copy installed), batch after
    /// batch while rows remain, and looks again every
    /// ``slotPurgeFallback`` whatever happens.
    func purgeMovedSlots() async {
        while !Task.isCancelled {
            var busy = false
            for (shard, (box, exec)) in stores {
                await TestHold.wait("purge")
                do {
                    let (deleted, remaining) = try await exec.run { try box.value.purgeMovedBatch(limit: Self.slotPurgeBatch) }
                    if deleted > 0 { tally.changed(shard: shard, wrote: false) }
                    busy = busy || remaining
                    if deleted > 0, remaining { await TestHold.wait("purge-batch") }
                } catch {
                    logger.error("purging moved slots failed", metadata: ["shard": "\(shard)", "error": "\(error)"])
                }
            }
            if busy {
                try? await Task.sleep(for: .milliseconds(5))
            } else {
                await slotPurgeWork.wait(upTo: Self.slotPurgeFallback)
            }
        }
    }
}
