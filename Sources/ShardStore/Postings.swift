import Foundation
import QueryPlan
import SQLite

/// Posting lists of the word index's terms, held in memory: for each term
/// read, the ids of the items holding it (in any column), sorted.
///
/// Suggestions count, for each completion of the last word, the items that
/// also hold every earlier word. Asking FTS5 for each count (an `AND` query
/// per completion) costs tens of microseconds a completion; with the lists
/// in memory, a count is an intersection of two sorted arrays, and a list
/// read once serves every later text that needs it until the data changes.
///
/// Reading them is what costs: FTS5 seeks a term in every segment of the
/// index, and frequent terms' lists are long. So these per-connection
/// lists are the fallback: while the process holds a ``PostingIndex`` of
/// the shard's current data (every list, read in one pass, shared by its
/// connections), suggestions count from it and read nothing here. They are
/// read while that index is being read, and after each change of the data
/// until the next one is. Next: patch the shared index after a write (the
/// items written and deleted) instead of reading it all again.
///
/// Exact, unlike the ``Vocabulary`` (which may lag writes): the lists are
/// dropped whenever the shard's data changes — another connection's commit
/// (`PRAGMA data_version`) or this connection's own writes (its total
/// changes) — as the facet columns are.
final class TermPostings {
    /// The data the lists were read from: `PRAGMA data_version` and the
    /// connection's own total changes.
    var version: (data: Int64, changes: Int) = (-2, -1)
    var lists: [String: [Int64]] = [:]
    /// Ids held in all lists, for the budget.
    var entries = 0
    /// The items each recent filter lets through (nil: every item), expired
    /// ones included: an app's key sends the same filter at every keystroke,
    /// and resolving it (15,807 ids for four domains) cost more than the counts.
    var filterItems: [QueryPlan.Predicate: [Int64]?] = [:]
    /// The word index's ``PostingIndex/key(_:)`` when the connection's data
    /// was last at `keyVersion`, so that a request reads it once per change.
    var key: [UInt8] = []
    var keyVersion: (data: Int64, changes: Int) = (-2, -1)
    /// The shared index of the data the running suggestion reads, if any:
    /// set at its start, cleared at its end.
    var shared: PostingIndex?
    /// Suggestions that found the shared index current (for tests).
    var sharedUses = 0

    /// Filters remembered at most.
    static let maxFilters = 16
    /// A completion held by more items than this, and than ``directCountRatio``
    /// times the items it is counted against, not yet read, is counted by FTS5
    /// instead (see ``ShardStore/completionCount(_:docs:earlier:holding:)``).
    /// A variable so that tests can take that path on small data.
    var directCountMinDocs = 2000
    /// Document counts a run of terms may hold for it to be read in one
    /// scan (see ``ShardStore/readPostings(_:)``); a variable for tests too.
    var scanBudget = 1500
    static let directCountRatio = 16

    /// Ids held at most (8 bytes each); past it the lists are dropped and read again.
    static let maxEntries = 2_000_000
}

extension ShardStore {
    /// The lists, emptied first if the data has changed since they were read.
    private func currentPostings() -> TermPostings {
        let cache = searchCache.postings
        let version = (data: dataVersion, changes: db.totalChanges)
        if cache.version != version {
            cache.lists = [:]
            cache.entries = 0
            cache.filterItems = [:]
            cache.version = version
        }
        return cache
    }

    /// The items passing `filter` (a plan's, simplified), sorted, or nil for
    /// every item; expired items included. Remembered until the data changes.
    func filterItems(_ filter: QueryPlan.Predicate, _ context: QueryContext) throws -> [Int64]? {
        let cache = currentPostings()
        if let known = cache.filterItems[filter] { return known }
        let ids = try candidates(try compile(filter), exact: true, context).ids
        if cache.filterItems.count >= TermPostings.maxFilters { cache.filterItems = [:] }
        cache.filterItems[filter] = Optional(ids)
        return ids
    }

    /// The items holding `term` as a token in any column of the word index,
    /// sorted: FTS5's answer to the quoted term, remembered until the data changes.
    func termPostings(_ term: String) throws -> [Int64] {
        let cache = currentPostings()
        if let shared = cache.shared { return shared.list(term) }
        if let known = cache.lists[term] { return known }
        let s = try db.prepare("SELECT rowid FROM words WHERE words MATCH ?1")
        try s.bind(Self.ftsQuote(term), at: 0)
        defer { try? s.reset() }
        var ids: [Int64] = []
        var sorted = true
        while try s.step() {
            let id = s.int64(at: 0)
            if let last = ids.last, last >= id { sorted = false }
            ids.append(id)
        }
        if !sorted { ids = IDs.sortedUnique(ids) }
        store(ids, for: term, in: cache)
        return ids
    }

    /// How many of `holding` (sorted; the items holding every earlier word
    /// that may be counted) also hold `term`. From its posting list, read
    /// if need be; but a long list not read yet, counted against few items,
    /// is left unread: FTS5 answers the conjunction of the words (seeking
    /// through the long list rather than decoding it: a tenth of the time of
    /// reading a common term's ids), and the few ids it returns are
    /// checked against `holding`.
    func completionCount(_ term: String, docs: Int, earlier: [String], holding: ItemSet) throws -> Int {
        let cache = currentPostings()
        if let shared = cache.shared {
            guard let i = shared.index(of: term) else { return 0 }
            return shared.withList(i) { holding.count(in: $0) }
        }
        if let known = cache.lists[term] { return holding.count(in: known) }
        if docs > cache.directCountMinDocs, docs > TermPostings.directCountRatio * holding.ids.count {
            let s = try db.prepare("SELECT rowid FROM words WHERE words MATCH ?1")
            try s.bind((earlier + [term]).map(Self.ftsQuote).joined(separator: " "), at: 0)
            defer { try? s.reset() }
            var ids: [Int64] = []
            while try s.step() { ids.append(s.int64(at: 0)) }
            return holding.count(in: IDs.sortedUnique(ids))
        }
        return holding.count(in: try termPostings(term))
    }

    /// The items holding every one of `words` (sorted), less `expired`.
    func itemsHoldingAll(_ words: [String], except expired: [Int64]) throws -> [Int64] {
        var lists = try words.map { try termPostings($0) }
        lists.sort { $0.count < $1.count }
        guard var out = lists.first else { return [] }
        for l in lists.dropFirst() {
            if out.isEmpty { break }
            out = IDs.intersect(out, l)
        }
        return expired.isEmpty ? out : IDs.subtract(out, expired)
    }
}

/// The items a suggestion's completions are counted against, sorted, and
/// as bits when there are many: a completion's list is then counted in one
/// pass over it, with no comparison against the set's ids (merging two lists
/// of thousands would cost ~0.1 ms a completion, 40 completions a request).
struct ItemSet {
    let ids: [Int64]
    /// The ids as bits, for sets of ``bitsFrom`` ids or more (empty otherwise).
    private var bits = IDBits()

    /// Sets smaller than this are counted against by galloping instead.
    static let bitsFrom = 512
    /// A list this many times longer than the set is galloped through.
    static let gallopRatio = 32

    init(_ ids: [Int64]) {
        self.ids = ids
        guard ids.count >= Self.bitsFrom, let first = ids.first, first >= 0 else { return }
        bits = IDBits(ids)
    }

    var isEmpty: Bool { ids.isEmpty }

    /// How many of `list` (sorted, unique; a ``PostingIndex``'s) are in the set.
    func count(in list: UnsafeBufferPointer<UInt32>) -> Int {
        var n = 0
        // Against a list much longer than the set, looking each id up costs
        // less than a pass over the list (keyed typing: a one-letter prefix's
        // frequent completions, counted against a few hundred items).
        if bits.words.isEmpty || list.count > Self.gallopRatio * ids.count {
            // Few ids: each is looked for in the list by galloping from where
            // the last was found, or the two merged when the list is short.
            if ids.isEmpty || list.isEmpty { return 0 }
            if list.count <= 4 * ids.count {
                var i = 0, j = 0
                while i < ids.count, j < list.count {
                    let a = ids[i], b = Int64(list[j])
                    if a < b { i += 1 } else if a > b { j += 1 } else { n += 1; i += 1; j += 1 }
                }
                return n
            }
            var lo = 0
            for x in ids {
                var step = 1, hi = lo
                while hi < list.count, Int64(list[hi]) < x { lo = hi + 1; hi = lo + step; step &<<= 1 }
                hi = min(hi, list.count)
                while lo < hi {
                    let mid = (lo + hi) >> 1
                    if Int64(list[mid]) < x { lo = mid + 1 } else { hi = mid }
                }
                if lo == list.count { break }
                if Int64(list[lo]) == x { n += 1; lo += 1 }
            }
            return n
        }
        bits.words.withUnsafeBufferPointer { bits in
            for id in list {
                let w = Int(id >> 6)
                if w < bits.count { n &+= Int((bits[w] >> UInt64(id & 63)) & 1) }
            }
        }
        return n
    }

    /// How many of `list` (sorted, unique) are in the set.
    func count(in list: [Int64]) -> Int {
        if bits.words.isEmpty { return IDs.intersectionCount(ids, list) }
        var n = 0
        bits.words.withUnsafeBufferPointer { bits in
            for id in list where id >= 0 {
                let w = Int(id >> 6)
                if w < bits.count { n &+= Int((bits[w] >> UInt64(id & 63)) & 1) }
            }
        }
        return n
    }
}

extension IDs {
    /// How many ids two sorted lists share (``common(_:_:_:)``: a short list
    /// costs little against a long one).
    static func intersectionCount(_ a: [Int64], _ b: [Int64]) -> Int {
        var n = 0
        common(a, b) { _, _ in n += 1 }
        return n
    }
}

extension ShardStore {

    /// Reads, ahead of ``termPostings(_:)``, the lists of the `wanted` terms
    /// of `span` not held yet. Each lookup of one term costs FTS5 a seek in
    /// every segment of the index (tens of microseconds), whatever the term's length, and most completions of a prefix are rare:
    /// so runs of neighbouring terms (in index order) whose lists are short
    /// together are read in one pass over the word index's instances
    /// (`fts5vocab` 'instance', by term, then item), and the long lists one by one.
    ///
    /// `span` is every term of a range of the index in its order, bytewise
    /// (a scan reads them all, wanted or not), with a document count that
    /// only bounds the scan's cost (the ``Vocabulary``'s may lag). Lists are
    /// read from the live index, so they are exact whatever the counts.
    func readPostings(_ span: [(term: String, docs: Int, wanted: Bool)]) throws {
        let cache = currentPostings()
        if cache.shared != nil { return }
        var runs: [Range<Int>] = []
        var i = 0
        while i < span.count {
            guard span[i].wanted, cache.lists[span[i].term] == nil, span[i].docs <= cache.scanBudget else { i += 1; continue }
            var docs = span[i].docs, end = i + 1, last = i, missing = 1
            while end < span.count, docs + span[end].docs <= cache.scanBudget {
                docs += span[end].docs
                if span[end].wanted, cache.lists[span[end].term] == nil { last = end; missing += 1 }
                end += 1
            }
            if missing > 1 { runs.append(i..<(last + 1)) }
            i = last + 1
        }
        guard !runs.isEmpty else { return }
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_instances USING fts5vocab(main, 'words', 'instance')")
        let s = try db.prepare("SELECT term, doc FROM temp.words_instances WHERE term >= ?1 AND term <= ?2")
        for run in runs {
            var found: [String: [Int64]] = [:]
            for k in run where span[k].wanted { found[span[k].term] = [] }
            try s.bind(span[run.lowerBound].term, at: 0)
            try s.bind(span[run.upperBound - 1].term, at: 1)
            do {
                defer { try? s.reset() }
                var term = "", termBytes: [UInt8] = [], keep = false
                var ids: [Int64] = []
                func flush() { if keep { found[term] = ids } }
                while try s.step() {
                    let same = s.withUTF8(at: 0) { $0.elementsEqual(termBytes) } ?? false
                    if !same {
                        flush()
                        term = s.string(at: 0) ?? ""
                        termBytes = Array(term.utf8)
                        keep = found[term] != nil
                        ids = []
                    }
                    if keep {
                        let doc = s.int64(at: 1)
                        if ids.last != doc { ids.append(doc) }
                    }
                }
                flush()
            }
            for (term, ids) in found {
                let sorted = zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 } ? ids : IDs.sortedUnique(ids)
                store(sorted, for: term, in: cache)
            }
        }
    }

    private func store(_ ids: [Int64], for term: String, in cache: TermPostings) {
        if cache.entries + ids.count > TermPostings.maxEntries {
            cache.lists = [:]
            cache.entries = 0
        }
        cache.lists[term] = ids
        cache.entries += ids.count
    }
}
