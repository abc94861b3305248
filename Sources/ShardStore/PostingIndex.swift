import Foundation
import Logging
import SQLite

/// Every posting list of a shard's word index, in memory, read in one pass:
/// the terms (sorted bytewise, as FTS5 keeps them) and, for each, the items
/// holding it in any column, sorted, as 32-bit ids in one buffer, each with
/// a mask of the columns it is in and of those it starts (see ``masks``).
///
/// Why: suggestions for text of several words count each completion's items
/// among the earlier words' ones, and reading a list from FTS5 costs a seek
/// in every segment of the index plus its decoding (over 1 ms for a common
/// term's ~30,000 ids). Read term by term as texts arrive (``TermPostings``),
/// the lists are most of a suggestion's time. One pass over `fts5vocab`
/// 'instance' reads them all.
///
/// Parameter search takes a word's exact, prefix and misspelt lists from it
/// too, and the one-word attribute criterion from the masks (see
/// ``PostingSearch``): the masks come from the same pass ('instance' gives
/// each occurrence's column and offset), 4 bytes more per posting.
///
/// The same pass reads the shard's ``ForwardIndex`` (every item's text as
/// token ids, for search proximity), exactly as current as the lists since
/// one transaction reads both.
///
/// Shared by every connection of the process to one shard file (see
/// ``PostingIndexes``), and exact: it is used only while the word index is
/// the one it was read from, which ``key(_:)`` tells from FTS5's own
/// records. A change of the data makes the next suggestions read lists term
/// by term again, and searches query FTS5, until a new index is built in
/// the background (by the first suggestion that found none, or search on a
/// shard of ``ShardStore/searchIndexMinTerms`` terms or more).
///
/// `@unchecked Sendable`: immutable once read, but it holds a
/// ``Vocabulary``, a class built by appending and never changed after, which
/// the compiler cannot know.
final class PostingIndex: @unchecked Sendable {
    /// The word index it was read from (see ``key(_:)``).
    let key: [UInt8]
    /// The terms, with their document counts (the lengths of their lists).
    let terms: Vocabulary
    /// List `i` is `ids[offsets[i]..<offsets[i + 1]]`.
    private let offsets: [Int]
    private let ids: [UInt32]
    /// Beside each id, where the item holds the term: bit `c` when it is in
    /// word-index column `c`, bit `16 + c` when it is that column's first
    /// token (offset 0, FTS5's `^`). What a search's attribute criterion and
    /// column filters need, without a query (see ``PostingSearch``).
    private let masks: [UInt32]
    /// The largest id held (0 when none), for dense per-item scratch arrays.
    let maxID: Int
    /// Every item's text as token ids, read in the same transaction (so
    /// exactly as current as the lists): proximity for search ranking. Nil
    /// when not asked for or past its limits.
    let forward: ForwardIndex?
    /// Per item id, where its unique identifier comes among the shard's in
    /// Swift's `String` order (``ItemOrder``), read in the same transaction.
    let uidOrder: ItemOrder
    /// Every item's row, read in the same transaction, for the hits of a
    /// search (see ``ItemRows``). Nil past its limits.
    let rows: ItemRows?
    /// The lists longer than their bitmap has words (``IDBits``' layout, ids
    /// `0...maxID`), also as that bitmap: term `t`'s words are
    /// `denseWords[w..<w + denseStride]` for `w = denseAt[t]`, none when
    /// `denseAt[t]` is negative.
    ///
    /// Why: a word's set of items (``PostingSearch/bits(_:columns:)``) sets
    /// a bit per posting, and most of a two-word search's postings (about
    /// 85%) come from the one or two common terms among its forms: such a
    /// list is ORed in a word at a time. Costs the bitmap of every such term
    /// (`maxID / 8` bytes each).
    private let denseAt: [Int32]
    private let denseWords: [UInt64]
    var denseStride: Int { maxID / 64 + 1 }

    /// Ids held at most by one index (8 bytes each with its mask, 512 MiB):
    /// a larger shard keeps reading lists term by term.
    static let maxEntries = 64 << 20

    var entries: Int { ids.count }

    /// What identifies the content of the word index: FTS5's structure record
    /// (its segments and a counter of the writes made to it: any insert or
    /// delete, committed, changes it) and its averages record (the number of
    /// rows and of tokens per column). Another connection's commit and a copy
    /// of another file over this one change them too. Writes not yet
    /// committed on the reading connection do not: the index is not used
    /// inside a caller's transaction.
    static func key(_ db: Database) throws -> [UInt8] {
        let s = try db.prepare("SELECT block FROM words_data WHERE id IN (1, 10) ORDER BY id")
        defer { try? s.reset() }
        var key: [UInt8] = []
        while try s.step() {
            s.withUTF8(at: 0) { key.append(contentsOf: $0) }
            key.append(contentsOf: [0xff, 0xfe])
        }
        return key
    }

    /// Reads every list; call it inside a read transaction, so that the key
    /// and the lists come from one snapshot. Nil when an id does not fit 32
    /// bits or the index holds more than ``maxEntries`` ids.
    ///
    /// The terms and their counts come from `fts5vocab` 'row', the items from
    /// 'instance' without its term column: asking for the term of each of
    /// millions of instances (copied out of FTS5 at every row) would be two
    /// thirds of the time. Each term's run of instances is then
    /// as long as its 'row' count, and its distinct items must number its
    /// document count, in ascending order: if any check fails, the terms are
    /// read with the instances after all (`termsWithInstances`).
    ///
    /// `forward`: whether to read the ``ForwardIndex`` too.
    init?(db: Database, maxEntries: Int = PostingIndex.maxEntries, termsWithInstances: Bool = false, forward: Bool = true) throws {
        key = try Self.key(db)
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_instances USING fts5vocab(main, 'words', 'instance')")
        guard
            let read = try termsWithInstances
                ? Self.readWithTerms(db, maxEntries: maxEntries)
                : Self.readByCounts(db, maxEntries: maxEntries) ?? Self.readWithTerms(db, maxEntries: maxEntries)
        else { return nil }
        (terms, offsets, ids, masks) = read
        // Searches look misspelt forms up in these terms from every
        // connection's thread: the tables are built before they share them.
        read.terms.prepareLookups()
        maxID = Int(ids.max() ?? 0)
        (denseAt, denseWords) = Self.bitmaps(offsets: offsets, ids: ids, maxID: maxID)
        self.forward = forward ? try ForwardIndex(db: db, wordTerms: terms) : nil
        uidOrder = try ItemOrder(db: db)
        rows = try ItemRows(db: db)
    }

    private typealias Lists = (terms: Vocabulary, offsets: [Int], ids: [UInt32], masks: [UInt32])

    /// ``denseAt`` and ``denseWords``: the bitmap of every list longer than it.
    private static func bitmaps(offsets: [Int], ids: [UInt32], maxID: Int) -> ([Int32], [UInt64]) {
        let stride = maxID / 64 + 1
        var at = [Int32](repeating: -1, count: max(0, offsets.count - 1))
        var words: [UInt64] = []
        for t in at.indices where offsets[t + 1] - offsets[t] > stride {
            guard words.count + stride <= Int(Int32.max) else { break }
            at[t] = Int32(words.count)
            words.append(contentsOf: repeatElement(0, count: stride))
            let base = Int(at[t])
            for k in offsets[t]..<offsets[t + 1] { words[base + Int(ids[k]) >> 6] |= 1 << UInt64(ids[k] & 63) }
        }
        return (at, words)
    }

    /// Calls `body` with term `i`'s bitmap (``denseStride`` words), nil
    /// when its list is kept as ids only.
    func withBitmap<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt64>?) -> T) -> T {
        let at = Int(denseAt[i])
        guard at >= 0 else { return body(nil) }
        return denseWords.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[at..<at + denseStride])) }
    }

    /// The mask bit of an instance: its column (`c0`…`c15`, by name as
    /// fts5vocab gives it) and whether it is the column's first token. Nil
    /// for a column past 15 (no mask could hold it).
    private static func bit(_ s: Statement, column: Int, offset: Int) -> UInt32? {
        guard
            let c = s.withUTF8(
                at: column,
                { b -> Int? in
                    guard b.count >= 2, b[0] == UInt8(ascii: "c") else { return nil }
                    var n = 0
                    for d in b.dropFirst() {
                        guard d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") else { return nil }
                        n = n * 10 + Int(d - UInt8(ascii: "0"))
                    }
                    return n < 16 ? n : nil
                }), let c
        else { return nil }
        return s.int64(at: offset) == 0 ? (1 << c) | (1 << (16 + c)) : 1 << c
    }

    /// The fast read (see ``init(db:maxEntries:termsWithInstances:forward:)``); nil
    /// when the counts do not split the instances exactly, or past the limits.
    private static func readByCounts(_ db: Database, maxEntries: Int) throws -> Lists?? {
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_vocab USING fts5vocab(main, 'words', 'row')")
        let terms = Vocabulary()
        var instances: [Int] = []
        let rows = try db.prepare("SELECT term, doc, cnt FROM temp.words_vocab")
        do {
            defer { try? rows.reset() }
            while try rows.step() {
                terms.append(bytes: rows.withUTF8(at: 0) { Array($0) } ?? [], docs: rows.int(at: 1))
                instances.append(rows.int(at: 2))
            }
        }
        let s = try db.prepare("SELECT doc, col, offset FROM temp.words_instances")
        defer { try? s.reset() }
        var offsets: [Int] = [0]
        offsets.reserveCapacity(terms.count + 1)
        var ids: [UInt32] = []
        var masks: [UInt32] = []
        let total = terms.docs.reduce(0) { $0 + Int($1) }
        ids.reserveCapacity(total)
        masks.reserveCapacity(total)
        for t in 0..<terms.count {
            let start = ids.count
            for _ in 0..<instances[t] {
                guard try s.step() else { return nil }
                let doc = s.int64(at: 0)
                guard doc >= 0, doc <= Int64(UInt32.max), let bit = bit(s, column: 1, offset: 2) else { return .some(nil) }
                let id = UInt32(truncatingIfNeeded: doc)
                if ids.count > start, let last = ids.last {
                    if last == id { masks[masks.count - 1] |= bit; continue }
                    if last > id { return nil }
                }
                ids.append(id)
                masks.append(bit)
            }
            guard ids.count - start == Int(terms.docs[t]) else { return nil }
            if ids.count > maxEntries { return .some(nil) }
            offsets.append(ids.count)
        }
        guard try !s.step() else { return nil }
        return (terms, offsets, ids, masks)
    }

    /// The read that takes each instance's term: slower, and safe whatever the counts.
    private static func readWithTerms(_ db: Database, maxEntries: Int) throws -> Lists? {
        let s = try db.prepare("SELECT term, doc, col, offset FROM temp.words_instances")
        defer { try? s.reset() }
        let terms = Vocabulary()
        var offsets: [Int] = [0]
        var ids: [UInt32] = []
        var masks: [UInt32] = []
        var termBytes: [UInt8] = []
        var listStart = 0
        var sorted = true
        var started = false
        func flush() {
            if !sorted {
                var merged: [UInt32: UInt32] = [:]
                for k in listStart..<ids.count { merged[ids[k], default: 0] |= masks[k] }
                let list = merged.keys.sorted()
                ids.replaceSubrange(listStart..., with: list)
                masks.replaceSubrange(listStart..., with: list.map { merged[$0]! })
            }
            terms.append(bytes: termBytes, docs: ids.count - listStart)
            offsets.append(ids.count)
        }
        while try s.step() {
            let same = started && (s.withUTF8(at: 0) { $0.elementsEqual(termBytes) } ?? termBytes.isEmpty)
            if !same {
                if started { flush() }
                started = true
                termBytes = s.withUTF8(at: 0) { Array($0) } ?? []
                listStart = ids.count
                sorted = true
            }
            let doc = s.int64(at: 1)
            guard doc >= 0, doc <= Int64(UInt32.max), let bit = bit(s, column: 2, offset: 3) else { return nil }
            let id = UInt32(doc)
            if ids.count > listStart, let last = ids.last {
                if last == id { masks[masks.count - 1] |= bit; continue }
                if last > id { sorted = false }
            }
            ids.append(id)
            masks.append(bit)
            if ids.count > maxEntries { return nil }
        }
        if started { flush() }
        return (terms, offsets, ids, masks)
    }

    /// The index of `term`, if the word index holds it.
    func index(of term: String) -> Int? {
        let r = terms.range(prefix: term)
        guard let first = r.first, terms.length(first) == term.utf8.count else { return nil }
        return first
    }

    /// The items holding term `i`, sorted.
    func list(_ i: Int) -> [Int64] {
        ids[offsets[i]..<offsets[i + 1]].map { Int64($0) }
    }

    /// The items holding `term`, sorted (none when the index does not hold it).
    func list(_ term: String) -> [Int64] {
        index(of: term).map(list) ?? []
    }

    /// Term `i`'s masks (see ``masks``), in the order of its list.
    func masks(_ i: Int) -> [UInt32] { Array(masks[offsets[i]..<offsets[i + 1]]) }

    /// Calls `body` with term `i`'s list, sorted, and its masks, without copying them.
    func withPostings<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt32>, UnsafeBufferPointer<UInt32>) -> T) -> T {
        ids.withUnsafeBufferPointer { ids in
            masks.withUnsafeBufferPointer { masks in
                body(
                    UnsafeBufferPointer(rebasing: ids[offsets[i]..<offsets[i + 1]]),
                    UnsafeBufferPointer(rebasing: masks[offsets[i]..<offsets[i + 1]]))
            }
        }
    }

    /// Bytes held: the terms, the lists and their masks, the items' order.
    var memoryBytes: Int {
        terms.memoryBytes + offsets.count * 8 + ids.count * 4 + masks.count * 4 + uidOrder.memoryBytes
            + denseAt.count * 4 + denseWords.count * 8
    }

    /// Calls `body` with term `i`'s list, sorted, without copying it.
    func withList<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt32>) -> T) -> T {
        ids.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[offsets[i]..<offsets[i + 1]])) }
    }
}

/// The process's ``PostingIndex`` of each shard file, and their builds.
///
/// A build runs on a thread of its own, over a connection of its own (one
/// read transaction), started by a suggestion that found no index of the
/// current data. Under steady writes every index is soon stale, so a build
/// starts at most once per four times the last one's duration after it ended
/// (a fifth of a core at most), and files are held at most ``maxFiles`` at a time.
///
/// `@unchecked Sendable`: the entries (each a ``PostingIndex``, see there)
/// are read and written only under `lock`.
final class PostingIndexes: @unchecked Sendable {
    static let shared = PostingIndexes()

    /// Shard files whose index is held at most (the least recently used goes).
    static let maxFiles = 8

    private struct Entry {
        var index: PostingIndex?
        var building = false
        var notBefore = ContinuousClock.now
        var used = ContinuousClock.now
    }
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]

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

    /// Marks a build of `path` started, if none is running and the last one
    /// ended long enough ago; false otherwise.
    func claim(path: String) -> Bool {
        lock.withLock {
            let e = entries[path] ?? Entry()
            guard !e.building, e.notBefore <= .now else { return false }
            entries[path, default: Entry()].building = true
            return true
        }
    }

    /// Records a build's end (`index` nil: it failed or the shard is too large).
    func finish(path: String, index: PostingIndex?, took: Duration) {
        lock.withLock {
            var e = entries[path] ?? Entry()
            e.building = false
            e.notBefore = .now + took * 4
            if let index { e.index = index; e.used = .now }
            entries[path] = e
            // Never the one just read (with many reads in flight, it could be
            // the only one finished).
            while entries.count > Self.maxFiles,
                let oldest = entries.filter({ !$0.value.building && $0.key != path }).min(by: { $0.value.used < $1.value.used })?.key
            {
                entries[oldest] = nil
            }
        }
    }

    /// Publishes an index built by the caller (its own build, not claimed).
    func publish(path: String, index: PostingIndex) {
        lock.withLock {
            entries[path, default: Entry()].index = index
            entries[path]?.used = .now
            while entries.count > Self.maxFiles,
                let oldest = entries.filter({ !$0.value.building && $0.key != path }).min(by: { $0.value.used < $1.value.used })?.key
            {
                entries[oldest] = nil
            }
        }
    }

    /// Forgets `path`'s index (a test's or a tool's).
    func forget(path: String) {
        lock.withLock { entries[path] = nil }
    }
}

extension ShardStore {
    /// Reads this shard's every posting list now, on this connection, for
    /// every connection of the process (see ``PostingIndex``); suggestions
    /// and searches otherwise start that in the background.
    /// Returns the lists and ids read, and the bytes the index holds; and
    /// the ``ForwardIndex``'s figures: its tokens, distinct terms, bytes and
    /// the CPU seconds its read took (zeros when there is none); and the
    /// bytes of its ``ItemRows``.
    @discardableResult
    package func buildSuggestionIndex() throws -> (
        terms: Int, ids: Int, bytes: Int,
        forwardTokens: Int, forwardTerms: Int, forwardBytes: Int, forwardSeconds: Double,
        rowsBytes: Int
    ) {
        do {
            guard let index = try db.transaction(.deferred, { try PostingIndex(db: db) }) else { return (0, 0, 0, 0, 0, 0, 0, 0) }
            PostingIndexes.shared.publish(path: path, index: index)
            let f = index.forward
            return (
                index.terms.count, index.entries, index.memoryBytes,
                f?.tokenCount ?? 0, f?.termCount ?? 0, f?.memoryBytes ?? 0, f?.readSeconds ?? 0,
                index.rows?.memoryBytes ?? 0
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

    /// Whether suggestions start a ``PostingIndex`` build when the shard has
    /// none of its current data (tests turn it off to take the other path).
    nonisolated(unsafe) package static var buildsSuggestionIndex = true

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
        if try startsBuild() { startPostingIndexBuild() }
        return nil
    }

    /// Starts a build of the shard's ``PostingIndex`` on a thread and
    /// connection of its own, unless one is running or ran too recently.
    func startPostingIndexBuild() {
        guard Self.buildsSuggestionIndex, PostingIndexes.shared.claim(path: path) else { return }
        let path = self.path
        let logger = self.logger
        Thread.detachNewThread {
            let start = ContinuousClock.now
            var index: PostingIndex?
            do {
                var configuration = Database.Configuration()
                configuration.cacheSizeKiB = 16 * 1024
                let db = try Database(path: path, mode: .readOnly, configuration: configuration)
                index = try db.transaction(.deferred) { try PostingIndex(db: db) }
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
