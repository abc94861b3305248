import SQLite

/// Trigrams of a shard's word-index vocabulary, for substring patterns
/// (`title == "*acti*"c`): which distinct terms contain a run of letters and
/// digits.
///
/// Why over the vocabulary and not the text: a text's substring made of ASCII
/// letters and digits lies inside one of its word-index tokens (those are the
/// maximal runs of letters, digits and marks, folded character by character),
/// so the items holding it are the items holding one of the terms that contain
/// it. The distinct terms grow far slower than the text (64 MB of items hold
/// about 0.8 MB of distinct terms), so indexing them costs nothing
/// at write time: this is built in memory from FTS5's vocabulary when a query
/// needs it. The substring is not always a term's prefix, so FTS5's own prefix
/// queries cannot find them, and an FTS5 `trigram` table over the text (format
/// 1's `grams`) cost a sixth of indexing time while leaving long texts out.
///
/// Only trigrams of `[a-z0-9]` are kept (FTS5 folds the index's ASCII to
/// lowercase), which packs them into a dense table of 36³ posting lists:
/// a run is looked up through its rarest trigram, and each term of that list
/// is confirmed by a byte search.
///
/// A connection does not read the vocabulary again after every commit: it
/// keeps what it read, with the largest item id then (its watermark), and a
/// substring query takes the stale vocabulary's candidates among the items up
/// to the watermark plus every item above it, all checked exactly. Item ids
/// are never reused and a replaced item is stored under a new one, so the
/// items above the watermark are exactly those written since; a deleted one
/// is simply not found. The vocabulary is read again once more than
/// ``ShardStore/maxSubstringDelta`` items were written since (see
/// ``ShardStore/substringIndex()``). Reading the vocabulary takes on the
/// order of a second for a large shard, so a substring query during
/// continuous indexing would otherwise pay that after every commit.
final class TermGrams {
    let vocabulary: Vocabulary
    /// Term ids of trigram `g` are `ids[offsets[g]..<offsets[g + 1]]`, ascending.
    private var offsets: [Int32]
    private var ids: [Int32]
    /// Terms FTS5 cut at its token limit: what their tokens held past the cut
    /// is in no term, so they stand in for every run.
    let truncated: [Int]
    /// Bit `c` of term `i`'s mask: the term occurs in word-index column `c`
    /// (a title query need not expand to words only descriptions hold).
    let columns: [UInt32]

    /// FTS5's `FTS5_MAX_TOKEN_SIZE`: longer tokens are indexed as their first
    /// this many bytes.
    static let maxTokenBytes = 32_768

    static let symbols = 36
    static let slots = symbols * symbols * symbols

    /// The symbol of an ASCII letter or digit (lowercase letters only: the
    /// index holds no uppercase ASCII), or -1.
    @inline(__always)
    static func symbol(_ b: UInt8) -> Int {
        if b >= 97, b <= 122 { return Int(b) - 97 }
        if b >= 48, b <= 57 { return Int(b) - 48 + 26 }
        return -1
    }

    /// Reads the word index's terms with the columns each occurs in.
    convenience init(db: Database) throws {
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_vocab_col USING fts5vocab(main, 'words', 'col')")
        let s = try db.prepare("SELECT term, col, doc FROM temp.words_vocab_col")
        let vocabulary = Vocabulary()
        var columns: [UInt32] = []
        var term: [UInt8] = []
        var docs = 0
        var mask: UInt32 = 0
        func flush() {
            guard !term.isEmpty else { return }
            vocabulary.append(String(decoding: term, as: UTF8.self), docs: docs)
            columns.append(mask)
        }
        while try s.step() {
            let same = s.withUTF8(at: 0) { $0.elementsEqual(term) } ?? false
            if !same {
                flush()
                term = s.withUTF8(at: 0) { Array($0) } ?? []
                docs = 0
                mask = 0
            }
            docs += Int(s.int64(at: 2))
            if let col = s.string(at: 1), col.first == "c", let c = Int(col.dropFirst()), c < 32 { mask |= 1 << UInt32(c) }
        }
        flush()
        try s.reset()
        self.init(vocabulary, columns: columns)
    }

    init(_ vocabulary: Vocabulary, columns: [UInt32]) {
        precondition(columns.count == vocabulary.count)
        self.vocabulary = vocabulary
        self.columns = columns
        let slots = Self.slots
        var counts = [Int32](repeating: 0, count: slots + 1)
        var last = [Int32](repeating: -1, count: slots)
        let n = vocabulary.count
        // Two passes over every term's trigrams: count, then fill. A term
        // with a trigram twice is listed once (`last` remembers the term a
        // slot last took).
        func forEachGram(_ body: (Int, Int32) -> Void) {
            vocabulary.bytes.withUnsafeBufferPointer { bytes in
                vocabulary.starts.withUnsafeBufferPointer { starts in
                    for t in 0..<n {
                        let s = Int(starts[t]), e = Int(starts[t + 1])
                        guard e - s >= 3 else { continue }
                        var a = Self.symbol(bytes[s]), b = Self.symbol(bytes[s + 1])
                        for i in (s + 2)..<e {
                            let c = Self.symbol(bytes[i])
                            if a >= 0, b >= 0, c >= 0 { body((a * Self.symbols + b) * Self.symbols + c, Int32(t)) }
                            a = b
                            b = c
                        }
                    }
                }
            }
        }
        forEachGram { g, t in
            if last[g] != t { last[g] = t; counts[g + 1] += 1 }
        }
        for g in 0..<slots { counts[g + 1] += counts[g] }
        var fill = counts
        var ids = [Int32](repeating: 0, count: Int(counts[slots]))
        last = [Int32](repeating: -1, count: slots)
        ids.withUnsafeMutableBufferPointer { ids in
            forEachGram { g, t in
                if last[g] != t {
                    last[g] = t
                    ids[Int(fill[g])] = t
                    fill[g] += 1
                }
            }
        }
        offsets = counts
        self.ids = ids
        truncated = (0..<n).filter { Int(vocabulary.starts[$0 + 1] - vocabulary.starts[$0]) >= Self.maxTokenBytes - 3 }
    }

    /// The terms containing `run` (lowercase ASCII letters and digits), in
    /// vocabulary order.
    func terms(containing run: [UInt8]) -> [Int] {
        precondition(!run.isEmpty && run.allSatisfy { Self.symbol($0) >= 0 }, "a run of [a-z0-9]")
        let v = vocabulary
        var candidates: Range<Int>?
        var list: ArraySlice<Int32> = []
        if run.count >= 3 {
            // The rarest trigram of the run.
            for i in 0...(run.count - 3) {
                let g = (Self.symbol(run[i]) * Self.symbols + Self.symbol(run[i + 1])) * Self.symbols + Self.symbol(run[i + 2])
                let r = Int(offsets[g])..<Int(offsets[g + 1])
                if candidates == nil || r.count < candidates!.count { candidates = r }
            }
            list = ids[candidates!]
            if list.isEmpty { return [] }
        }
        var out: [Int] = []
        v.bytes.withUnsafeBufferPointer { bytes in
            v.starts.withUnsafeBufferPointer { starts in
                run.withUnsafeBufferPointer { run in
                    func contains(_ t: Int) -> Bool {
                        let s = Int(starts[t]), e = Int(starts[t + 1])
                        let m = run.count
                        guard e - s >= m else { return false }
                        let first = run[0]
                        var i = s
                        while i + m <= e {
                            if bytes[i] == first {
                                var k = 1
                                while k < m, bytes[i + k] == run[k] { k += 1 }
                                if k == m { return true }
                            }
                            i += 1
                        }
                        return false
                    }
                    if candidates != nil {
                        for t in list where contains(Int(t)) { out.append(Int(t)) }
                    } else {
                        for t in 0..<v.count where contains(t) { out.append(t) }
                    }
                }
            }
        }
        return out
    }

    /// The byte offset just past the first occurrence of `run` in term `t`
    /// (every term starting with the bytes up to there contains the run
    /// too), or nil when the term does not contain it.
    func endOfFirstOccurrence(_ run: [UInt8], in t: Int) -> Int? {
        let v = vocabulary
        let s = Int(v.starts[t]), e = Int(v.starts[t + 1])
        var i = s
        while i + run.count <= e {
            if v.bytes[i..<(i + run.count)].elementsEqual(run) { return i - s + run.count }
            i += 1
        }
        return nil
    }

    /// The maximal runs of ASCII letters and digits of folded text, lowercase.
    static func runs(_ folded: String) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var current: [UInt8] = []
        for b in folded.utf8 {
            var c = b
            if c >= 65, c <= 90 { c += 32 }
            if symbol(c) >= 0 {
                current.append(c)
            } else if !current.isEmpty {
                out.append(current)
                current = []
            }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }
}

/// The ``TermGrams`` a connection holds, with the state of the shard they
/// were read at.
final class SubstringCache {
    var grams: TermGrams?
    /// The largest item id when the vocabulary was read: items above it were
    /// written (stored or replaced) since, and may hold terms it lacks.
    var watermark: Int64 = 0
    /// The shard's `items.epoch` then: a content replaced from a copy
    /// (``ShardStore/replaceContent(withCopyAt:)``) gets a new one, since its
    /// ids say nothing about what was written after the watermark here.
    var epoch = ""
    var dataVersion: Int64 = -2
    var totalChanges = -1
    /// How many times this connection has read the vocabulary.
    var reads = 0
}

/// The vocabulary's trigrams a substring query answers with, and the items
/// they may not cover.
struct SubstringIndex {
    let grams: TermGrams
    /// Items with a larger id were written after ``grams`` was read: each is
    /// a candidate of every substring pattern (deleted ones are simply not
    /// found). Items at or below it hold only terms ``grams`` knows.
    let watermark: Int64
}

extension ShardStore {
    /// Items written since the vocabulary was read past which a query reads
    /// it again rather than checking each of them. The delta is paid by
    /// every query, the read once: each item written since costs a query a
    /// row read and a match (microseconds), where reading the vocabulary
    /// costs over a second for a large shard. At 2,000 a query pays at most
    /// some milliseconds for the delta, and a connection reads the
    /// vocabulary once per 2,000 items written.
    static let maxSubstringDelta: Int64 = 2_000

    /// The vocabulary's trigrams for a substring query in the current
    /// transaction.
    ///
    /// Substring answers depend on every term, but reading the vocabulary
    /// again after every commit (another connection's, seen through `PRAGMA
    /// data_version` by ``reloadIfChanged()``, or this one's, seen through
    /// its total changes) would cost every substring query during continuous
    /// indexing a vocabulary read. Item ids are never reused and a
    /// replaced item gets a new one (``nextItemID()``), so the items written
    /// since the vocabulary was read are those above its watermark: the
    /// query takes them as candidates beside the stale vocabulary's, and the
    /// vocabulary is read again only when they number more than
    /// ``maxSubstringDelta``, or the shard's content was replaced whole.
    func substringIndex() throws -> SubstringIndex {
        let cache = substringCache
        let changes = db.totalChanges
        if let grams = cache.grams {
            if cache.dataVersion == dataVersion, cache.totalChanges == changes {
                return SubstringIndex(grams: grams, watermark: cache.watermark)
            }
            let epoch = try itemsEpoch()
            let delta = try db.prepare("SELECT count(*) FROM items WHERE id > ?")
            try delta.bind(cache.watermark, at: 0)
            if epoch == cache.epoch, (try delta.scalar()?.int64 ?? 0) <= Self.maxSubstringDelta {
                cache.dataVersion = dataVersion
                cache.totalChanges = changes
                return SubstringIndex(grams: grams, watermark: cache.watermark)
            }
        }
        let started = ContinuousClock.now
        // The watermark and epoch are read before the vocabulary: an item
        // written in between is then both in the vocabulary and in the delta,
        // never in neither.
        let epoch = try itemsEpoch()
        let watermark = try db.prepare("SELECT max(id) FROM items").scalar()?.int64 ?? 0
        let grams = try TermGrams(db: db)
        logger.debug(
            "read the vocabulary's trigrams",
            metadata: [
                "store.terms": "\(grams.vocabulary.count)", "store.ms": "\((ContinuousClock.now - started) / .milliseconds(1))",
            ])
        cache.grams = grams
        cache.reads += 1
        cache.watermark = watermark
        cache.epoch = epoch
        cache.dataVersion = dataVersion
        cache.totalChanges = changes
        return SubstringIndex(grams: grams, watermark: watermark)
    }

    /// The shard's `items.epoch` (empty when never set).
    func itemsEpoch() throws -> String {
        try db.prepare("SELECT value FROM meta WHERE key = 'items.epoch'").scalar()?.string ?? ""
    }
}
