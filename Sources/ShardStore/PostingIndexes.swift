import Foundation
import LimelightConcurrency
import Logging
import SQLite
import Synchronization

/// The process's ``PostingIndex`` of each shard file, and their builds.
///
/// A build runs on the process's build thread (one at a time, see
/// ``builds``), over a connection of its own (one read transaction),
/// started by a suggestion or a search that found no index of the current
/// data, and files are held at most ``maxFiles`` at a time.
///
/// Under writes an index is stale as soon as the next commit lands, so a
/// build of new data starts only once the data has been quiet (the same
/// word-index key asked for) for ``quietBeforeBuild`` and at least as long
/// as the last build took: one started during steady writes would read data
/// already gone, with CPU the writers and the searches need; after the last
/// commit, searches are back on an index about two builds' time later. Data
/// already read (a build that failed, a shard too large, an index let go for
/// the budget) is read again at most once per four times the last build's
/// duration after it ended, and so is any data when the key is not known or
/// `LIMELIGHT_INDEX_QUIET_MS` is `off` (then builds also run during writes,
/// a fifth of a core at most).
///
/// The indexes held are bounded by ``budget``: their heap bytes
/// (``PostingIndex/heapBytes``: what is not mapped from a derived file)
/// stay within it, the least recently used going first; an index that does
/// not fit alone is not held, and its shard is answered from FTS5 and
/// SQLite, as before any index is read.
///
/// `@unchecked Sendable`: the entries (each a ``PostingIndex``, see there)
/// are read and written only under `lock`.
final class PostingIndexes: @unchecked Sendable {
    static let shared = PostingIndexes()

    /// Shard files whose index is held at most (the least recently used goes).
    static let maxFiles = 8

    /// Where builds run: one at a time in the process, on a thread of their
    /// own (each reads SQLite for seconds). A build holds every structure of
    /// its shard on the heap until it is written; a worker serving several
    /// shards, searched at once for the first time, would otherwise hold
    /// them all together.
    static let builds = WorkThreads(name: "limelight.derived-build", count: 1)

    /// The heap bytes the held indexes may take together.
    var budget: Int {
        get { lock.withLock { limit } }
        set { lock.withLock { limit = newValue } }
    }
    /// The heap bytes of the indexes held now (at most ``budget``).
    var accountedBytes: Int { lock.withLock { entries.values.reduce(0) { $0 + ($1.index?.heapBytes ?? 0) } } }
    /// Indexes refused or dropped to stay within the budget (for tests and stats).
    private(set) var overBudget = 0

    /// How long the data must have been unchanged before a build of it
    /// starts (see above); nil: builds by the interval alone.
    /// `LIMELIGHT_INDEX_QUIET_MS` sets it (`off`: nil), for a benchmark to
    /// time both ways with one build.
    static let quietBeforeBuild: Duration? = {
        switch ProcessInfo.processInfo.environment["LIMELIGHT_INDEX_QUIET_MS"] {
        case "off": return nil
        case let ms?: return Int(ms).map { .milliseconds(max(0, $0)) } ?? .milliseconds(500)
        case nil: return .milliseconds(500)
        }
    }()

    private struct Entry {
        var index: PostingIndex?
        var building = false
        var notBefore = ContinuousClock.now
        var used = ContinuousClock.now
        /// The last build's duration.
        var took = Duration.zero
        /// The word-index key last asked for, and when it was first seen.
        var lastKey: [UInt8] = []
        var keySeen = ContinuousClock.now
        /// The key the last build was started for.
        var readKey: [UInt8]?
    }
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]
    private var limit: Int

    init(budget: Int = .max) { limit = budget }

    /// The index of `path` if it was read from the word index `key` identifies.
    func index(path: String, key: [UInt8]) -> PostingIndex? {
        lock.withLock {
            guard let index = entries[path]?.index, index.key == key else { return nil }
            entries[path]?.used = .now
            return index
        }
    }

    /// Whether any index of `path` is held or being built.
    func hasAny(path: String) -> Bool {
        lock.withLock { entries[path].map { $0.index != nil || $0.building } ?? false }
    }

    /// Marks a build of `path` started, if none is running and the data,
    /// whose word index `key` identifies (nil: not known), may be read now
    /// (see above); false otherwise.
    func claim(path: String, key: [UInt8]? = nil) -> Bool {
        lock.withLock {
            var e = entries[path] ?? Entry()
            defer { entries[path] = e }
            let now = ContinuousClock.now
            if let key, key != e.lastKey {
                e.lastKey = key
                e.keySeen = now
            }
            guard !e.building else { return false }
            let start: Bool
            if let key, let quiet = Self.quietBeforeBuild, let read = e.readKey, key != read {
                start = e.keySeen.duration(to: now) >= max(quiet, e.took)
            } else {
                start = e.notBefore <= now
            }
            if start {
                e.building = true
                if let key { e.readKey = key }
            }
            return start
        }
    }

    /// Records a build's end (`index` nil: it failed or the shard is too large).
    func finish(path: String, index: PostingIndex?, took: Duration) {
        lock.withLock {
            var e = entries[path] ?? Entry()
            e.building = false
            e.took = took
            e.notBefore = .now + took * 4
            entries[path] = e
            if let index { hold(index, path: path) }
        }
    }

    /// Publishes an index built by the caller (its own build, not claimed).
    func publish(path: String, index: PostingIndex) {
        lock.withLock { hold(index, path: path) }
    }

    /// Holds `index` as `path`'s, within ``maxFiles`` and the budget; under `lock`.
    private func hold(_ index: PostingIndex, path: String) {
        entries[path, default: Entry()].index = nil
        // Never the one just read (with many reads in flight, it could be
        // the only one finished).
        func evictOldest() -> Bool {
            guard let oldest = entries.filter({ $0.value.index != nil && $0.key != path }).min(by: { $0.value.used < $1.value.used })?.key
            else { return false }
            if entries[oldest]!.building { entries[oldest]!.index = nil } else { entries[oldest] = nil }
            return true
        }
        let bytes = index.heapBytes
        guard bytes <= limit else {
            overBudget += 1
            return
        }
        while entries.values.reduce(0, { $0 + ($1.index?.heapBytes ?? 0) }) + bytes > limit {
            overBudget += 1
            guard evictOldest() else { return }
        }
        entries[path]!.index = index
        entries[path]!.used = .now
        while entries.values.filter({ $0.index != nil }).count > Self.maxFiles, evictOldest() {}
    }

    /// Lets the pages of every held index's derived file go from the
    /// process's resident set (see ``DerivedFile/releaseResidentPages()``);
    /// returns the bytes of the files whose pages were let go.
    func releaseMappedPages() -> Int {
        let files = lock.withLock { entries.values.compactMap { $0.index?.file } }
        for f in files { f.releaseResidentPages() }
        return files.reduce(0) { $0 + $1.length }
    }

    /// Forgets `path`'s index (a test's or a tool's).
    func forget(path: String) {
        lock.withLock { entries[path] = nil }
    }
}

extension PostingIndex {
    /// The index of the data `db`'s transaction reads, for the shard file
    /// `shard`: mapped from its derived file (``DerivedFile``) when that was
    /// read from the same data and is whole; otherwise read from FTS5 and
    /// SQLite, written as the derived file and mapped. A file that cannot be
    /// written leaves the index on the heap. One process builds at a time
    /// (a lock file beside it): the others then map what it wrote.
    static func load(db: Database, shard: String, logger: Logger) throws -> PostingIndex? {
        guard ShardStore.usesDerivedFiles, shard != ":memory:", !shard.isEmpty else { return try PostingIndex(db: db) }
        let path = DerivedFile.path(forShard: shard)
        let key = try Self.key(db)
        func mapped() -> PostingIndex? {
            do {
                return try PostingIndex(file: DerivedFile(path: path, key: key))
            } catch {
                if error.code != .missing { logger.info("derived file not used", metadata: ["derived.path": "\(path)", "derived.why": "\(error)"]) }
                return nil
            }
        }
        if let index = mapped() { return index }
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        defer { if lock >= 0 { close(lock) } }
        if lock >= 0 {
            while flock(lock, LOCK_EX) != 0, errno == EINTR {}
            if let index = mapped() { return index }
        }
        // Beside the shard, where the derived file goes; on the heap where nothing can be written.
        let directory = (shard as NSString).deletingLastPathComponent.isEmpty ? "." : (shard as NSString).deletingLastPathComponent
        let space = ShardStore.buildsInFiles && access(directory, W_OK) == 0 ? BuildSpace(directory: directory) : .heap
        guard let built = try PostingIndex(db: db, space: space) else { return nil }
        do {
            return try built.written(to: path)
        } catch {
            logger.warning("cannot write the derived file; the index stays in memory", metadata: ["derived.path": "\(path)", "error": "\(error)"])
            return built
        }
    }
}

extension ShardStore {
    /// Reads this shard's every posting list now, on this connection, for
    /// every connection of the process (see ``PostingIndex``); suggestions
    /// and searches otherwise start that in the background.
    /// Returns the lists and ids read, and the bytes the index holds; and
    /// the ``ForwardIndex``'s figures: its tokens, distinct terms, bytes and
    /// the CPU seconds its read took (zeros when there is none); the
    /// bytes of its ``ItemRows``; and of all of it, the bytes on the heap and
    /// the length of the derived file mapped (see ``PostingIndex/load(db:shard:logger:)``).
    @discardableResult
    package func buildSuggestionIndex() throws -> (
        terms: Int, ids: Int, bytes: Int,
        forwardTokens: Int, forwardTerms: Int, forwardBytes: Int, forwardSeconds: Double,
        rowsBytes: Int, heapBytes: Int, fileBytes: Int
    ) {
        do {
            guard let index = try db.transaction(.deferred, { try PostingIndex.load(db: db, shard: path, logger: logger) }) else {
                return (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            }
            PostingIndexes.shared.publish(path: path, index: index)
            let f = index.forward
            return (
                index.terms.count, index.entries, index.memoryBytes,
                f?.tokenCount ?? 0, f?.termCount ?? 0, f?.memoryBytes ?? 0, f?.readSeconds ?? 0,
                index.rows?.memoryBytes ?? 0, index.heapBytes, index.fileBytes
            )
        } catch {
            throw StoreError.wrap(error, "cannot read the suggestion index")
        }
    }

    /// Forgets the process's ``PostingIndex`` of this shard (a benchmark's
    /// way to time what runs before one is read).
    package func forgetSuggestionIndex() {
        PostingIndexes.shared.forget(path: path)
    }

    /// Whether a ``PostingIndex`` is kept in a derived file beside the shard
    /// and mapped (tests turn it off to compare with the heap's).
    package static var usesDerivedFiles: Bool {
        get { switches.usesDerivedFiles.load(ordering: .relaxed) }
        set { switches.usesDerivedFiles.store(newValue, ordering: .relaxed) }
    }

    /// Whether a derived file's structures grow in files beside the shard
    /// while they are built (``BuildSpace``) rather than on the heap (tests
    /// and benchmarks compare the two).
    package static var buildsInFiles: Bool {
        get { switches.buildsInFiles.load(ordering: .relaxed) }
        set { switches.buildsInFiles.store(newValue, ordering: .relaxed) }
    }

    /// The process-wide switches above and below, set at start or by tests.
    private static let switches = Switches()
    private final class Switches: Sendable {
        let usesDerivedFiles = Atomic<Bool>(true)
        let buildsInFiles = Atomic<Bool>(true)
        let buildsSuggestionIndex = Atomic<Bool>(true)
    }

    /// The heap bytes the process's posting indexes may hold together (see
    /// ``PostingIndexes``); a query worker's `--memory-budget`.
    package static var memoryBudget: Int {
        get { PostingIndexes.shared.budget }
        set { PostingIndexes.shared.budget = newValue }
    }

    /// Lets the pages of the process's mapped derived files go from its
    /// resident set; they stay in the page cache and are mapped again as
    /// searches read them. Returns the bytes of the files concerned.
    @discardableResult
    package static func releaseMappedPages() -> Int { PostingIndexes.shared.releaseMappedPages() }

    /// The heap bytes the process's posting indexes hold now.
    package static var memoryAccounted: Int { PostingIndexes.shared.accountedBytes }

    /// Whether suggestions start a ``PostingIndex`` build when the shard has
    /// none of its current data (tests turn it off to take the other path).
    package static var buildsSuggestionIndex: Bool {
        get { switches.buildsSuggestionIndex.load(ordering: .relaxed) }
        set { switches.buildsSuggestionIndex.store(newValue, ordering: .relaxed) }
    }

    /// The shared index of exactly the data this transaction reads, if there
    /// is one; otherwise a build is started. `outside`: whether the request
    /// began outside any transaction of the caller's (within one, writes not
    /// yet committed are in the word index but not in its key).
    /// `startsBuild` says whether a build is worth starting when there is none.
    func currentPostingIndex(outside: Bool, startsBuild: () throws -> Bool = { true }) throws -> PostingIndex? {
        guard outside, path != ":memory:", !path.isEmpty else { return nil }
        let cache = searchCache.postings
        let version = (data: dataVersion, changes: db.totalChanges)
        if cache.keyVersion != version {
            cache.key = try PostingIndex.key(db)
            cache.keyVersion = version
        }
        if let index = PostingIndexes.shared.index(path: path, key: cache.key) {
            cache.sharedUses += 1
            return index
        }
        if try startsBuild() { startPostingIndexBuild(key: cache.key) }
        return nil
    }

    /// Starts a build of the shard's ``PostingIndex`` on a thread and
    /// connection of its own, unless one is running or ran too recently
    /// while the data, whose word index `key` identifies, keeps changing.
    func startPostingIndexBuild(key: [UInt8]? = nil) {
        guard Self.buildsSuggestionIndex, PostingIndexes.shared.claim(path: path, key: key) else { return }
        let path = self.path
        let logger = self.logger
        PostingIndexes.builds.submit {
            let start = ContinuousClock.now
            var index: PostingIndex?
            do {
                var configuration = Database.Configuration()
                configuration.cacheSizeKiB = 16 * 1024
                let db = try Database(path: path, mode: .readOnly, configuration: configuration)
                index = try db.transaction(.deferred) { try PostingIndex.load(db: db, shard: path, logger: logger) }
            } catch {
                logger.warning("cannot read the suggestion index", metadata: ["error": "\(error)"])
            }
            let took = start.duration(to: .now)
            logger.debug(
                "suggestion index read",
                metadata: [
                    "index.terms": "\(index?.terms.count ?? 0)", "index.ids": "\(index?.entries ?? 0)",
                    "index.forward.tokens": "\(index?.forward?.tokenCount ?? 0)",
                    "index.ms": "\(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000)",
                ])
            PostingIndexes.shared.finish(path: path, index: index, took: took)
        }
    }
}
