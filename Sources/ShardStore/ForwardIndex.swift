import Foundation
import QueryPlan
import SQLite

/// Every item's searchable text as the search matcher tokenizes it, cut once
/// when the shard's ``PostingIndex`` is read, so that ranking a several-word
/// query works out proximity, the best attribute and whole-value exactness
/// from token ids instead of reading and scanning each candidate's text.
///
/// Why: for two words, reading the text rows of every item in the best typo
/// buckets and scanning them would be ~80% of the query, where Tantivy
/// answers the same query in a tenth of that time.
///
/// What it holds, per item, its text values (`attrs` kinds 0 and 5, in
/// their (name, pos) order), each with its attribute name and its tokens in
/// order, every token as a term id with a bit saying whether it is a
/// camel-case part of the token before it (parts share its position). The
/// tokens are cut by the matcher's own functions: ASCII values by
/// ``SearchWordMatcher/forEachASCIIToken(_:lowered:_:)``, which
/// ``SearchWordMatcher/scanASCII(_:lowered:rows:_:)`` runs on, other values
/// by ``SearchTokens/tokens(_:)``, which ``SearchWordMatcher/scan(_:_:)``
/// runs on; so positions are the scan's by construction. A term is the
/// token's bytes (lowercased, or folded for values not ASCII) and which of
/// the two it came from, since the scan compares the two kinds by different
/// rules (bytes, or ``WordMatch``), except that a folded token of ASCII bytes
/// is the ASCII term (the two rules agree on it): a query decides once per
/// term it meets which words it matches, by that term's rule (see
/// ``ForwardTokenCache``).
///
/// All flat arrays (no array per item or value): ~4 bytes a token. Read in
/// the same transaction as the posting lists, it is exactly as current as
/// they are, and used only while they are.
///
/// `@unchecked Sendable`: immutable once built, but it holds a
/// ``Vocabulary``, a class that is built by appending and never changed
/// after, which the compiler cannot know.
final class ForwardIndex: @unchecked Sendable {
    /// Item `i`'s values are `itemStart[i]..<itemStart[i + 1]` (none past the end).
    private let itemStart: Flat<UInt32>
    /// Each value's attribute name id.
    let valueName: Flat<UInt32>
    /// Value `v`'s tokens are `tokens[valueStart[v]..<valueStart[v + 1]]`.
    let valueStart: Flat<UInt32>
    /// Term id << 1, | 1 for a camel-case part.
    let tokens: Flat<UInt32>
    /// Term `t` is `termBytes[termStart[t]..<termStart[t + 1]]`.
    let termBytes: Flat<UInt8>
    let termStart: Flat<UInt32>
    /// Whether term `t` was cut from a value that is not ASCII (folded, and
    /// matched by ``WordMatch``); otherwise from ASCII text, lowercased.
    let termFolded: Flat<Bool>
    /// The terms cut from ASCII text, sorted, as a ``Vocabulary`` (its term
    /// `i` is term `asciiTerms[i]` here): a query finds the terms each of its
    /// words matches by lookups in it — the word itself, the last word's
    /// prefix range, its typo forms by ``Vocabulary/fuzzy(_:maxTypos:)`` —
    /// instead of deciding every distinct term its candidates' text holds
    /// (see ``ForwardTokenCache/begin(_:_:)``).
    let asciiVocabulary: Vocabulary
    let asciiTerms: Flat<UInt32>
    /// Per term, what ``ForwardTokenCache/masks`` holds before a query has
    /// looked at it: decided and matching nothing for an ASCII term (the
    /// lookups set the bits of those that match), undecided (0) for a folded
    /// one, which a query decides when it first meets it.
    let baseMasks: Flat<UInt32>
    /// The word index's terms (``PostingIndex/terms``, read in the same
    /// transaction) this index's ASCII terms are aligned with, so that one
    /// typo lookup serves both (see ``ForwardTokenCache/typoTerms(_:maxTypos:in:store:)``):
    /// `asciiOfWordTerm[i]` is the ``asciiVocabulary`` index of word-index
    /// term `i`'s bytes (-1 when it has none: a folded term, or one FTS5's
    /// tokenizer cut that the matcher's does not), and ``extraTerms`` holds
    /// the ASCII terms the word index lacks, `extraAscii[j]` being term `j`'s
    /// ``asciiVocabulary`` index. Nil (and the others empty) when not
    /// aligned: typo forms then come from ``asciiVocabulary`` alone.
    let wordTerms: Vocabulary?
    let asciiOfWordTerm: Flat<Int32>
    let extraTerms: Vocabulary
    let extraAscii: Flat<Int32>
    /// Per term, the items and places it occurs at (see ``TermOccurrences``).
    let occurrences: TermOccurrences

    /// The thread CPU time the read took, in seconds.
    let readSeconds: Double

    /// Tokens held at most (4 bytes each, 512 MiB, as the posting lists'
    /// ``PostingIndex/maxEntries``): a larger shard keeps the text scan.
    static let maxTokens = 128 << 20
    /// The same, built in files (``BuildSpace``): what 32-bit token places allow.
    static let maxTokensInFiles = Int(UInt32.max)

    var termCount: Int { termFolded.count }
    var valueCount: Int { valueName.count }
    var tokenCount: Int { tokens.count }

    /// The flat arrays' bytes (in a mapped file or on the heap).
    private var flatBytes: Int {
        itemStart.byteCount + valueName.byteCount + valueStart.byteCount + tokens.byteCount + termBytes.byteCount
            + termStart.byteCount + termFolded.byteCount + asciiTerms.byteCount + baseMasks.byteCount
            + asciiOfWordTerm.byteCount + extraAscii.byteCount + occurrences.memoryBytes
    }

    var memoryBytes: Int { flatBytes + asciiVocabulary.memoryBytes + extraTerms.memoryBytes }

    /// The bytes held on the heap: the vocabularies, and the flat arrays
    /// unless they are mapped from a derived file.
    var heapBytes: Int { (tokens.isOnHeap ? flatBytes : 0) + asciiVocabulary.memoryBytes + extraTerms.memoryBytes }

    /// Reads the index from a derived file's sections (see ``encode(into:)``);
    /// `wordTerms`: the posting index's terms, when it was aligned with them.
    init(decoding r: inout DerivedReader, wordTerms: Vocabulary) throws(DerivedFile.Failure) {
        itemStart = try r.flat()
        valueName = try r.flat()
        valueStart = try r.flat()
        tokens = try r.flat()
        termBytes = try r.flat()
        termStart = try r.flat()
        termFolded = try r.flat()
        asciiVocabulary = try Vocabulary(decoding: &r)
        asciiTerms = try r.flat()
        baseMasks = try r.flat()
        let aligned = try r.int() == 1
        self.wordTerms = aligned ? wordTerms : nil
        asciiOfWordTerm = try r.flat()
        extraTerms = try Vocabulary(decoding: &r)
        extraAscii = try r.flat()
        occurrences = try TermOccurrences(decoding: &r, terms: termFolded.count)
        readSeconds = Double(bitPattern: UInt64(truncatingIfNeeded: try r.int()))
        let terms = termFolded.count, values = valueName.count
        try r.check(
            valueStart.count == values + 1 && Int(valueStart.last ?? 1) == tokens.count && Int(itemStart.last ?? 1) == values
                && termStart.count == terms + 1 && Int(termStart.last ?? 1) == termBytes.count && baseMasks.count == terms
                && asciiTerms.count == asciiVocabulary.count && asciiTerms.allSatisfy { Int($0) < terms }
                && (!aligned || asciiOfWordTerm.count == wordTerms.count) && extraAscii.count == extraTerms.count
                && asciiOfWordTerm.allSatisfy { Int($0) < asciiVocabulary.count }
                && extraAscii.allSatisfy { $0 >= 0 && Int($0) < asciiVocabulary.count },
            "forward index")
    }

    /// Puts the index in a derived file's sections.
    func encode(into w: inout DerivedWriter) {
        w.put(itemStart)
        w.put(valueName)
        w.put(valueStart)
        w.put(tokens)
        w.put(termBytes)
        w.put(termStart)
        w.put(termFolded)
        asciiVocabulary.encode(into: &w)
        w.put(asciiTerms)
        w.put(baseMasks)
        w.put(wordTerms == nil ? 0 : 1)
        w.put(asciiOfWordTerm)
        extraTerms.encode(into: &w)
        w.put(extraAscii)
        occurrences.encode(into: &w)
        w.put(Int(Int64(bitPattern: readSeconds.bitPattern)))
    }

    /// Reads and tokenizes every text value; call it inside the read
    /// transaction the posting lists are read in. Nil when an id does not
    /// fit 32 bits or past ``maxTokens``. `wordTerms`: the posting lists'
    /// terms, to align the ASCII vocabulary with (see ``wordTerms``).
    init?(db: Database, maxTokens: Int = ForwardIndex.maxTokens, wordTerms: Vocabulary? = nil, space: BuildSpace = .heap) throws {
        let cpu0 = Self.threadCPUSeconds()
        let s = try db.prepare("SELECT item, name, coalesce(text, key) FROM attrs WHERE kind IN (0, 5) ORDER BY item, name, pos")
        defer { try? s.reset() }
        var itemStart = try space.builder(UInt32.self)
        itemStart.append(0)
        var valueName = try space.builder(UInt32.self)
        var valueStart = try space.builder(UInt32.self)
        valueStart.append(0)
        var tokens = try space.builder(UInt32.self)
        var terms = TermInterner()
        var lowered: [UInt8] = []
        var lastItem: Int64 = -1
        while try s.step() {
            let item = s.int64(at: 0), name = s.int64(at: 1)
            guard item >= 0, item < Int64(UInt32.max), name >= 0, name <= Int64(UInt32.max), item >= lastItem else { return nil }
            // Items without text values before this one get empty ranges.
            while itemStart.count <= Int(item) { itemStart.append(UInt32(valueName.count)) }
            lastItem = item
            valueName.append(UInt32(name))
            let ascii =
                s.withUTF8(at: 2) { bytes -> Bool in
                    guard !bytes.contains(where: { $0 >= 128 }) else { return false }
                    _ = SearchWordMatcher.forEachASCIIToken(bytes, lowered: &lowered) { token, _, _, isPart in
                        tokens.append(terms.intern(token, folded: false) << 1 | (isPart ? 1 : 0))
                    }
                    return true
                } ?? true  // NULL: no tokens, as the scan reads it ("").
            if !ascii {
                let text = s.string(at: 2) ?? ""
                var previous: Int?
                for token in SearchTokens.tokens(text) {
                    // Parts follow their token at its position.
                    let isPart = previous == token.position
                    previous = token.position
                    var folded = token.folded
                    // A folded token of ASCII bytes ("cafe" from "café", and
                    // every plain word of such a value) is the ASCII term:
                    // ``SearchWordMatcher/matchesFolded(_:rows:)`` and
                    // ``SearchWordMatcher/matchesASCII(_:rows:)`` agree on
                    // it (equal, a prefix, within the typos, all on bytes),
                    // so the query's lookups decide it and it is not decided
                    // again term by term (which would be 8% of a two-word search).
                    let id = folded.withUTF8 { b in terms.intern(b, folded: b.isEmpty || b.contains { $0 >= 128 }) }
                    tokens.append(id << 1 | (isPart ? 1 : 0))
                }
            }
            guard tokens.count <= maxTokens else { return nil }
            valueStart.append(UInt32(tokens.count))
        }
        itemStart.append(UInt32(valueName.count))
        let (itemStarts, valueNames, valueStarts, allTokens) = (
            try itemStart.finish(), try valueName.finish(), try valueStart.finish(), try tokens.finish()
        )
        self.itemStart = itemStarts
        self.valueName = valueNames
        self.valueStart = valueStarts
        self.tokens = allTokens
        termBytes = Flat(terms.bytes)
        termStart = Flat(terms.starts)
        termFolded = Flat(terms.folded)
        let (vocabulary, ids) = Self.asciiVocabulary(terms)
        (asciiVocabulary, asciiTerms) = (vocabulary, Flat(ids))
        baseMasks = Flat(terms.folded.map { $0 ? 0 : ForwardTokenCache.known })
        self.wordTerms = wordTerms
        let aligned = wordTerms.map { Self.align(vocabulary, with: $0) } ?? ([], Vocabulary(), [])
        (asciiOfWordTerm, extraTerms, extraAscii) = (Flat(aligned.0), aligned.1, Flat(aligned.2))
        occurrences = try TermOccurrences(
            itemStart: itemStarts, valueName: valueNames, valueStart: valueStarts, tokens: allTokens, termFolded: terms.folded, space: space)
        readSeconds = Self.threadCPUSeconds() - cpu0
    }

    /// The ASCII terms in bytewise order (what ``Vocabulary`` expects: a term
    /// before every longer one it begins), with their ids.
    private static func asciiVocabulary(_ terms: TermInterner) -> (Vocabulary, [UInt32]) {
        var ids = (0..<UInt32(terms.folded.count)).filter { !terms.folded[Int($0)] }
        terms.bytes.withUnsafeBufferPointer { all in
            func bytes(_ t: UInt32) -> UnsafeBufferPointer<UInt8> {
                UnsafeBufferPointer(rebasing: all[Int(terms.starts[Int(t)])..<Int(terms.starts[Int(t) + 1])])
            }
            ids.sort { a, b in bytes(a).lexicographicallyPrecedes(bytes(b)) }
        }
        let vocabulary = Vocabulary()
        for t in ids { vocabulary.append(bytes: Array(terms.bytes[Int(terms.starts[Int(t)])..<Int(terms.starts[Int(t) + 1])]), docs: 0) }
        vocabulary.prepareLookups()
        return (vocabulary, ids)
    }

    /// Matches two sorted vocabularies term by term (one merge): for each of
    /// `word`'s terms the index of the same bytes in `ascii` or -1, and the
    /// terms of `ascii` that `word` lacks, as a vocabulary, with their
    /// indexes in `ascii`.
    static func align(_ ascii: Vocabulary, with word: Vocabulary) -> ([Int32], Vocabulary, [Int32]) {
        var asciiOf = [Int32](repeating: -1, count: word.count)
        let extra = Vocabulary()
        var extraAscii: [Int32] = []
        var i = 0, j = 0
        while i < ascii.count {
            let order = j < word.count ? ascii.compare(i, with: word, j) : -1
            if order == 0 {
                asciiOf[j] = Int32(i)
                i += 1; j += 1
            } else if order < 0 {
                extra.append(bytes: ascii.termBytes(i), docs: 0)
                extraAscii.append(Int32(i))
                i += 1
            } else {
                j += 1
            }
        }
        extra.prepareLookups()
        return (asciiOf, extra, extraAscii)
    }

    static func threadCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The values of item `id` (an empty range when it has none).
    @inline(__always) func values(of id: Int64) -> Range<Int> {
        guard id >= 0, id < Int64(itemStart.count - 1) else { return 0..<0 }
        return Int(itemStart[Int(id)])..<Int(itemStart[Int(id) + 1])
    }

    /// Calls `body` with term `t`'s bytes.
    func withTerm<T>(_ t: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        termBytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[Int(termStart[t])..<Int(termStart[t + 1])])) }
    }
}

/// Distinct terms, interned in one flat byte buffer by an open-addressing
/// hash table (a `Dictionary` keyed by arrays cost an allocation a token).
struct TermInterner {
    private var table = [UInt32](repeating: 0, count: 1 << 16)  // term id + 1, 0 empty
    private(set) var bytes: [UInt8] = []
    private(set) var starts: [UInt32] = [0]
    private(set) var folded: [Bool] = []

    private static func hash(_ token: UnsafeBufferPointer<UInt8>, folded: Bool) -> Int {
        var h: UInt64 = folded ? 0x84222325_cbf29ce4 : 0xcbf29ce4_84222325
        for b in token { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return Int(truncatingIfNeeded: h ^ (h >> 31))
    }

    /// The id of the term `token` of this kind, added if new.
    mutating func intern(_ token: UnsafeBufferPointer<UInt8>, folded isFolded: Bool) -> UInt32 {
        let mask = table.count - 1
        var i = Self.hash(token, folded: isFolded) & mask
        while table[i] != 0 {
            let id = Int(table[i] - 1)
            if folded[id] == isFolded, bytes[Int(starts[id])..<Int(starts[id + 1])].elementsEqual(token) { return UInt32(id) }
            i = (i + 1) & mask
        }
        let id = folded.count
        bytes.append(contentsOf: token)
        starts.append(UInt32(bytes.count))
        folded.append(isFolded)
        table[i] = UInt32(id + 1)
        if folded.count * 2 > table.count { grow() }
        return UInt32(id)
    }

    private mutating func grow() {
        var bigger = [UInt32](repeating: 0, count: table.count * 2)
        let mask = bigger.count - 1
        bytes.withUnsafeBufferPointer { all in
            for id in 0..<folded.count {
                let term = UnsafeBufferPointer(rebasing: all[Int(starts[id])..<Int(starts[id + 1])])
                var i = Self.hash(term, folded: folded[id]) & mask
                while bigger[i] != 0 { i = (i + 1) & mask }
                bigger[i] = UInt32(id + 1)
            }
        }
        table = bigger
    }
}
