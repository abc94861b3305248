import Foundation

/// When a query worker lets its mapped derived files' pages go, so that its
/// resident memory stays within its `--memory-budget`.
///
/// The budget bounds what the worker holds on its own (SQLite's caches, the
/// indexes' heap) and SQLite's maps; the derived files are mapped whole and
/// their pages stay resident once read, so a worker that has searched every
/// shard widely holds them all. Their pages are clean and shared with the
/// page cache: letting them go from the worker (``ShardStore/releaseMappedPages()``)
/// costs no disk read, only a minor fault when a search reads a page again.
///
/// A check with the resident bytes says whether to let them go: when the
/// resident set is over the limit. When letting them go freed little (less
/// than a sixteenth of the limit: the rest of the process, not the maps, is
/// what is over), the checks that follow wait, twice as long each time up
/// to ``longestWait``, so that a worker whose heap alone is over the limit
/// does not walk its maps every second for nothing. A wait ends early when
/// the resident set has grown by a sixteenth of the limit since the release
/// that began it: the maps are filling again (an idle worker's releases
/// free little, and the searches that follow must not then grow its maps
/// unchecked for a minute).
struct ResidentBound: Sendable, Equatable {
    let limit: Int
    static let firstWait = Duration.seconds(1)
    static let longestWait = Duration.seconds(64)

    private(set) var wait = Duration.zero
    private(set) var notBefore: ContinuousClock.Instant?
    /// Times the pages were let go.
    private(set) var releases = 0
    /// The resident bytes the last release left.
    private(set) var lastAfter: Int?

    init(limit: Int) { self.limit = limit }

    /// Whether to let the mapped pages go now, with `resident` bytes resident.
    func shouldRelease(resident: Int, now: ContinuousClock.Instant) -> Bool {
        guard resident > limit else { return false }
        if let notBefore, now < notBefore {
            return resident - (lastAfter ?? resident) >= limit / 16
        }
        return true
    }

    /// Records a release that left `after` bytes resident of `before`.
    mutating func released(before: Int, after: Int, now: ContinuousClock.Instant) {
        releases += 1
        lastAfter = after
        if before - after < limit / 16 {
            wait = wait == .zero ? Self.firstWait : min(wait * 2, Self.longestWait)
            notBefore = now + wait
        } else {
            wait = .zero
            notBefore = nil
        }
    }

    /// The process's resident bytes (`/proc/self/statm`), nil where it cannot be read.
    static func resident() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .ascii) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
