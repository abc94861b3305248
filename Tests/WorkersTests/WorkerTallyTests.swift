import Foundation
import Testing

@testable import Workers

/// Which shards' write-ahead logs the indexer truncates: those written and
/// then quiet, each once per run of writes.
@Suite struct WorkerTallyTests {
    @Test func aShardsLogIsDueOnceItHasBeenQuietAfterAWrite() {
        let tally = WorkerTally()
        #expect(tally.quietLogs(quiet: 2).isEmpty)
        tally.changed(shard: 3, wrote: true)
        tally.changed(shard: 5, wrote: true)
        // A purge or delete (not a write) leaves the log alone.
        tally.changed(shard: 7, wrote: false)
        // Still being written.
        #expect(tally.quietLogs(quiet: 2).isEmpty)
        let later = Date().addingTimeInterval(3)
        #expect(tally.quietLogs(quiet: 2, now: later) == [3, 5])
        // Handed out once...
        #expect(tally.quietLogs(quiet: 2, now: later.addingTimeInterval(10)).isEmpty)
        // ...and again after the next write, once that one is quiet.
        tally.changed(shard: 5, wrote: true)
        #expect(tally.quietLogs(quiet: 2).isEmpty)
        #expect(tally.quietLogs(quiet: 2, now: Date().addingTimeInterval(3)) == [5])
        // A log a reader kept is due again at the next look.
        tally.logLeft(shard: 5)
        #expect(tally.quietLogs(quiet: 2, now: Date().addingTimeInterval(3)) == [5])
    }
}
