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
    private let offsets: Flat<Int>
    private let ids: Flat<UInt32>
    /// Beside each id, where the item holds the term: bit `c` when it is in
    /// word-index column `c`, bit `16 + c` when it is that column's first
    /// token (offset 0, FTS5's `^`). What a search's attribute criterion and
    /// column filters need, without a query (see ``PostingSearch``).
    private let masks: Flat<UInt32>
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
    private let denseAt: Flat<Int32>
    private let denseWords: Flat<UInt64>
    var denseStride: Int { maxID / 64 + 1 }

    /// Ids held at most by one index built on the heap (8 bytes each with
    /// its mask, 512 MiB): a larger shard keeps reading lists term by term.
    static let maxEntries = 64 << 20
    /// The same, built in files (``BuildSpace``), where the heap does not
    /// bound it: what the bitmaps' 32-bit places allow.
    static let maxEntriesInFiles = Int(Int32.max)

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
    /// bits or the index holds more than `maxEntries` ids (by default
    /// ``maxEntries`` on the heap, ``maxEntriesInFiles`` in files).
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
    init?(
        db: Database, maxEntries: Int? = nil, termsWithInstances: Bool = false, forward: Bool = true,
        space: BuildSpace = .heap
    ) throws {
        // The caps of a heap build, or of a build in files (nil: the space's).
        let inFiles = space.directory != nil
        let maxEntries = maxEntries ?? (inFiles ? Self.maxEntriesInFiles : Self.maxEntries)
        key = try Self.key(db)
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_instances USING fts5vocab(main, 'words', 'instance')")
        guard
            let read = try termsWithInstances
                ? Self.readWithTerms(db, maxEntries: maxEntries, space: space)
                : Self.readByCounts(db, maxEntries: maxEntries, space: space)
                    ?? Self.readWithTerms(db, maxEntries: maxEntries, space: space)
        else { return nil }
        terms = read.terms
        (offsets, ids, masks) = (read.offsets, read.ids, read.masks)
        // Searches look misspelt forms up in these terms from every
        // connection's thread: the tables are built before they share them.
        read.terms.prepareLookups()
        maxID = Int(read.ids.max() ?? 0)
        (denseAt, denseWords) = try Self.bitmaps(offsets: read.offsets, ids: read.ids, maxID: maxID, space: space)
        self.forward =
            forward
            ? try ForwardIndex(
                db: db, maxTokens: inFiles ? ForwardIndex.maxTokensInFiles : ForwardIndex.maxTokens, wordTerms: terms, space: space)
            : nil
        uidOrder = try ItemOrder(db: db)
        rows = try ItemRows(db: db, maxBytes: inFiles ? ItemRows.maxBytesInFiles : ItemRows.maxBytes, space: space)
        file = nil
    }

    /// The derived file the flat arrays are mapped from; nil when they are on the heap.
    let file: DerivedFile?

    /// Reads the index from a derived file (see ``encode(into:)``), mapped
    /// in place but for the vocabularies.
    init(file: DerivedFile) throws(DerivedFile.Failure) {
        var r = file.reader()
        key = file.key
        terms = try Vocabulary(decoding: &r)
        offsets = try r.flat()
        ids = try r.flat()
        masks = try r.flat()
        denseAt = try r.flat()
        denseWords = try r.flat()
        maxID = try r.int()
        uidOrder = try ItemOrder(decoding: &r)
        forward = try r.int() == 1 ? try ForwardIndex(decoding: &r, wordTerms: terms) : nil
        rows = try r.int() == 1 ? try ItemRows(decoding: &r) : nil
        self.file = file
        let (terms, offsets, ids, masks, denseAt, denseWords, maxID) = (terms, offsets, ids, masks, denseAt, denseWords, maxID)
        let stride = maxID / 64 + 1
        try r.check(
            r.isAtEnd && offsets.count == terms.count + 1 && offsets.first == 0 && offsets.last == ids.count && masks.count == ids.count
                && zip(offsets, offsets.dropFirst()).allSatisfy { $0 <= $1 } && denseAt.count == terms.count
                && denseAt.allSatisfy { $0 < 0 || Int($0) + stride <= denseWords.count } && maxID >= 0,
            "posting lists")
        terms.prepareLookups()
    }

    /// Puts the index in a derived file's sections.
    func encode(into w: inout DerivedWriter) {
        terms.encode(into: &w)
        w.put(offsets)
        w.put(ids)
        w.put(masks)
        w.put(denseAt)
        w.put(denseWords)
        w.put(maxID)
        uidOrder.encode(into: &w)
        w.put(forward == nil ? 0 : 1)
        forward?.encode(into: &w)
        w.put(rows == nil ? 0 : 1)
        rows?.encode(into: &w)
    }

    /// Writes the index as `path`'s derived file and maps it back: the same
    /// index, its flat arrays in the page cache.
    func written(to path: String) throws(DerivedFile.Failure) -> PostingIndex {
        var w = DerivedWriter()
        encode(into: &w)
        try DerivedFile.write(path: path, key: key, sections: w)
        return try PostingIndex(file: try DerivedFile(path: path, key: key))
    }

    private typealias Lists = (terms: Vocabulary, offsets: Flat<Int>, ids: Flat<UInt32>, masks: Flat<UInt32>)

    /// ``denseAt`` and ``denseWords``: the bitmap of every list longer than it.
    private static func bitmaps(
        offsets: Flat<Int>, ids: Flat<UInt32>, maxID: Int, space: BuildSpace
    ) throws(DerivedFile.Failure) -> (Flat<Int32>, Flat<UInt64>) {
        let stride = maxID / 64 + 1
        var at = [Int32](repeating: -1, count: max(0, offsets.count - 1))
        var words = try space.builder(UInt64.self)
        var bitmap = [UInt64](repeating: 0, count: stride)
        for t in at.indices where offsets[t + 1] - offsets[t] > stride {
            guard words.count + stride <= Int(Int32.max) else { break }
            at[t] = Int32(words.count)
            for w in bitmap.indices { bitmap[w] = 0 }
            for k in offsets[t]..<offsets[t + 1] { bitmap[Int(ids[k]) >> 6] |= 1 << UInt64(ids[k] & 63) }
            words.append(contentsOf: bitmap)
        }
        return (try space.flat(at), try words.finish())
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

    /// The fast read (see ``init(db:maxEntries:termsWithInstances:forward:space:)``); nil
    /// when the counts do not split the instances exactly, or past the limits.
    private static func readByCounts(_ db: Database, maxEntries: Int, space: BuildSpace) throws -> Lists?? {
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
        var offsets = try space.builder(Int.self, capacity: terms.count + 1)
        offsets.append(0)
        let total = terms.docs.reduce(0) { $0 + Int($1) }
        if total > maxEntries { return .some(nil) }
        var ids = try space.builder(UInt32.self, capacity: total)
        var masks = try space.builder(UInt32.self, capacity: total)
        for t in 0..<terms.count {
            let start = ids.count
            for _ in 0..<instances[t] {
                guard try s.step() else { return nil }
                let doc = s.int64(at: 0)
                guard doc >= 0, doc <= Int64(UInt32.max), let bit = bit(s, column: 1, offset: 2) else { return .some(nil) }
                let id = UInt32(truncatingIfNeeded: doc)
                if ids.count > start, let last = ids.last {
                    if last == id {
                        masks.updateLast { $0 |= bit }
                        continue
                    }
                    if last > id { return nil }
                }
                ids.append(id)
                masks.append(bit)
            }
            // Each list holds its count, so the lists never pass `total`, checked above.
            guard ids.count - start == Int(terms.docs[t]) else { return nil }
            offsets.append(ids.count)
        }
        guard try !s.step() else { return nil }
        return (terms, try offsets.finish(), try ids.finish(), try masks.finish())
    }

    /// The read that takes each instance's term: slower, and safe whatever
    /// the counts. A term's list is gathered on the heap (sorted there when
    /// the instances came out of order), then appended.
    private static func readWithTerms(_ db: Database, maxEntries: Int, space: BuildSpace) throws -> Lists? {
        let s = try db.prepare("SELECT term, doc, col, offset FROM temp.words_instances")
        defer { try? s.reset() }
        let terms = Vocabulary()
        var offsets = try space.builder(Int.self)
        offsets.append(0)
        var ids = try space.builder(UInt32.self)
        var masks = try space.builder(UInt32.self)
        var listIDs: [UInt32] = []
        var listMasks: [UInt32] = []
        var termBytes: [UInt8] = []
        var sorted = true
        var started = false
        func flush() throws {
            if !sorted {
                var merged: [UInt32: UInt32] = [:]
                for (id, mask) in zip(listIDs, listMasks) { merged[id, default: 0] |= mask }
                listIDs = merged.keys.sorted()
                listMasks = listIDs.map { merged[$0]! }
            }
            ids.append(contentsOf: listIDs)
            masks.append(contentsOf: listMasks)
            terms.append(bytes: termBytes, docs: listIDs.count)
            offsets.append(ids.count)
        }
        while try s.step() {
            let same = started && (s.withUTF8(at: 0) { $0.elementsEqual(termBytes) } ?? termBytes.isEmpty)
            if !same {
                if started { try flush() }
                started = true
                termBytes = s.withUTF8(at: 0) { Array($0) } ?? []
                listIDs.removeAll(keepingCapacity: true)
                listMasks.removeAll(keepingCapacity: true)
                sorted = true
            }
            let doc = s.int64(at: 1)
            guard doc >= 0, doc <= Int64(UInt32.max), let bit = bit(s, column: 2, offset: 3) else { return nil }
            let id = UInt32(doc)
            if let last = listIDs.last {
                if last == id {
                    listMasks[listMasks.count - 1] |= bit
                    continue
                }
                if last > id { sorted = false }
            }
            listIDs.append(id)
            listMasks.append(bit)
            if ids.count + listIDs.count > maxEntries { return nil }
        }
        if started { try flush() }
        return (terms, try offsets.finish(), try ids.finish(), try masks.finish())
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
        terms.memoryBytes + offsets.byteCount + ids.byteCount + masks.byteCount + uidOrder.memoryBytes
            + denseAt.byteCount + denseWords.byteCount
    }

    /// Bytes held on the heap (anonymous memory), the forward index and the
    /// rows included: the vocabularies, and every flat array unless it is
    /// mapped (from the derived file, or from the files it was built in).
    /// What a ``MemoryBudget`` accounts.
    var heapBytes: Int {
        terms.memoryBytes + (ids.isOnHeap ? memoryBytes - terms.memoryBytes : 0) + (forward?.heapBytes ?? 0) + (rows?.heapBytes ?? 0)
    }

    /// Bytes of the derived file it is mapped from (0 when on the heap).
    var fileBytes: Int { file?.length ?? 0 }

    /// Calls `body` with term `i`'s list, sorted, without copying it.
    func withList<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt32>) -> T) -> T {
        ids.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[offsets[i]..<offsets[i + 1]])) }
    }
}
