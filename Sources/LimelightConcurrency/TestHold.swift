import Foundation

/// Pauses at named phases of a split, for tests only: a test that must kill
/// a process at a phase (tests/python/test_split_kills.py) makes the
/// processes stop there rather than hope to catch them in time.
///
/// Off unless the environment names a folder in `LIMELIGHT_TEST_HOLD_DIR`
/// (`limelight up` passes its environment to the processes it starts). Then
/// phase P holds while the file `hold-P` exists in that folder, and the
/// first process to reach it writes `at-P` there (its pid). Without the
/// variable, every check is one comparison with nil: no file is looked at.
///
/// The phases (docs/reliability.md, "Shards that split online"):
/// `copy` (a target indexer, at each copy chunk it receives), `catch-up` (a
/// target indexer, right after installing a copy, before it takes the
/// changes the log sends), `mark` (an indexer, sent the split's mark of a
/// shard, before it applies it), `before-switch` (the coordinator, every new
/// shard drained and every shard marked, before it commits the new map),
/// `after-switch` (the coordinator, once the map is committed: a marker
/// only), `purge` (an indexer, before the first batch of a background purge)
/// and `purge-batch` (an indexer, after a batch with more to purge); and
/// `query-register` (a query worker, started and not yet registered: a new
/// shard's query worker late to a split).
package enum TestHold {
    static let folder: String? = ProcessInfo.processInfo.environment["LIMELIGHT_TEST_HOLD_DIR"].flatMap { $0.isEmpty ? nil : $0 }

    /// Whether `phase` holds now; the first time it does, writes `at-<phase>`.
    package static func holds(_ phase: String) -> Bool {
        guard let folder else { return false }
        guard FileManager.default.fileExists(atPath: folder + "/hold-" + phase) else { return false }
        let at = folder + "/at-" + phase
        if !FileManager.default.fileExists(atPath: at) {
            FileManager.default.createFile(atPath: at, contents: Data("\(getpid())\n".utf8))
        }
        return true
    }

    /// Returns once `phase` does not hold (at once when it does not).
    package static func wait(_ phase: String) async {
        while holds(phase) { try? await Task.sleep(for: .milliseconds(20)) }
    }
}
