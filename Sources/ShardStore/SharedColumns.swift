import Foundation
import Synchronization

/// The latest columns of each shard file a process reads (every item's id,
/// its domains' items, facet columns, custom ranking columns), shared by
/// its read-only connections.
///
/// Why: a query worker opens a connection per query running on a shard at
/// once, and each kept its own copy of these columns, read or patched on
/// its own: per shard several times what the shard needs, growing with it
/// (tens of MB a column at a million items a shard), and each connection's
/// first faceted or empty search paid for the read again.
///
/// What a connection may take: the columns of exactly its data. Data is
/// named by its ``ChangeMark``: item ids are never reused and a changed item
/// gets a new id, so two snapshots with the same counter, removal log and
/// epoch hold the same items with the same values. Only read-only
/// connections share: a writer's transaction may hold items not yet
/// committed (it has no mark then either, see ``ShardStore/changeMark()``).
///
/// Each column is a value (arrays copied on write) and a ``DomainIndex`` is
/// patched into a new one, so a connection that patches its columns for a
/// later commit copies what it changes and publishes the result; the others
/// take it once they read that commit.
final class SharedColumns: Sendable {
    static let shared = SharedColumns()
    /// Whether connections share by default; `LIMELIGHT_SHARED_COLUMNS=off`
    /// turns it off, for a benchmark to time both ways with one build.
    static let enabled = ProcessInfo.processInfo.environment["LIMELIGHT_SHARED_COLUMNS"] != "off"

    /// One shard's columns, all of the data `mark` names.
    struct Columns: Sendable {
        var mark: ChangeMark
        var universe: [Int64]?
        var facets: [Int64: FacetColumn] = [:]
        var sorts: [Int64: SortColumn] = [:]
        var domains: DomainIndex?
    }

    private let entries = Mutex<[String: Columns]>([:])

    /// `path`'s columns if they are of the data `mark` names.
    func columns(path: String, mark: ChangeMark) -> Columns? {
        entries.withLock { e in e[path].flatMap { $0.mark == mark ? $0 : nil } }
    }

    /// Shares what `update` adds to `path`'s columns of `mark`: onto the
    /// ones held when they are of the same data, else in their place unless
    /// those are of later data (the latest data is what other connections
    /// will ask for next).
    func publish(path: String, mark: ChangeMark, _ update: (inout Columns) -> Void) {
        entries.withLock { e in
            if let held = e[path]?.mark, mark.precedes(held) { return }
            var columns = e[path].flatMap { $0.mark == mark ? $0 : nil } ?? Columns(mark: mark)
            update(&columns)
            e[path] = columns
        }
    }

    /// Forgets `path`'s columns (a test's, or a shard closed for good).
    func forget(path: String) {
        _ = entries.withLock { $0.removeValue(forKey: path) }
    }
}

extension ChangeMark {
    /// Whether this is an earlier state of the same content than `other`.
    func precedes(_ other: ChangeMark) -> Bool {
        self != other && epoch == other.epoch && watermark <= other.watermark && removedSeq <= other.removedSeq
    }
}

extension ShardStore {
    /// Whether this connection takes columns from, and gives them to, the
    /// process's ``SharedColumns``.
    var sharesColumns: Bool {
        searchCache.sharesColumns && mode == .readOnly && path != ":memory:" && !path.isEmpty
    }
}
