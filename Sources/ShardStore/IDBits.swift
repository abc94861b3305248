/// A set of item ids as one bit per id, from 0 to a bound: what a search's
/// word lookups hold (per query word, the items holding it at each number of
/// typos, exactly, and at all; see ``SearchRun/WordPostings``).
///
/// Why bits and not sorted lists: a word's forms are many terms (the last
/// word's prefix range, its misspellings), and as lists their items would be
/// written out, merged into the word's whole list, intersected with the
/// other words', and each match looked up again in every list to find its
/// typos: about a quarter of a two-word search. As bits, the word's
/// whole set is an OR of its levels, the words' matches an AND, and a
/// match's typos one test per level; only the matches are written out.
///
/// The bound is the largest id of the shard's posting index (every id a
/// lookup can give) or of the list the set was made from: sets of
/// different bounds combine as if the shorter were padded with zeros.
struct IDBits: Sendable, Equatable {
    private(set) var words: [UInt64]

    /// The empty set.
    init() { words = [] }

    /// An empty set that can hold ids up to `maxID`.
    init(maxID: Int) { words = [UInt64](repeating: 0, count: max(0, maxID) / 64 + 1) }

    /// The ids of a list (negative ones cannot be held and are left out).
    init(_ ids: [Int64]) {
        self.init(maxID: Int(ids.max() ?? 0))
        words.withUnsafeMutableBufferPointer { w in
            for id in ids where id >= 0 { w[Int(id) >> 6] |= 1 << UInt64(id & 63) }
        }
    }

    /// Builds a set by setting bits in place (see ``PostingSearch/bits(_:columns:)``).
    init(maxID: Int, _ fill: (UnsafeMutableBufferPointer<UInt64>) -> Void) {
        self.init(maxID: maxID)
        words.withUnsafeMutableBufferPointer { fill($0) }
    }

    /// Adds `id` (negative ids cannot be held and are left out), growing the set if need be.
    mutating func insert(_ id: Int64) {
        guard id >= 0 else { return }
        let w = Int(id) >> 6
        if w >= words.count { words += repeatElement(0, count: max(w + 1 - words.count, words.count / 4)) }
        words[w] |= 1 << UInt64(id & 63)
    }

    /// Removes `id` if held.
    mutating func remove(_ id: Int64) {
        guard id >= 0 else { return }
        let w = Int(id) >> 6
        if w < words.count { words[w] &= ~(1 << UInt64(id & 63)) }
    }

    /// The ids of sorted `ids` that are in the set, in order: one test each,
    /// rather than a merge with the set's every id.
    func filter(_ ids: [Int64]) -> [Int64] {
        withWords { w in ids.filter { w.contains($0) } }
    }

    @inline(__always)
    func contains(_ id: Int64) -> Bool {
        guard id >= 0 else { return false }
        let w = Int(id) >> 6
        return w < words.count && words[w] & (1 << UInt64(id & 63)) != 0
    }

    /// The set's words in a buffer, for loops of tests (``Words/contains(_:)``)
    /// that reading through the array would slow with its checks.
    func withWords<R>(_ body: (Words) throws -> R) rethrows -> R {
        try words.withUnsafeBufferPointer { try body(Words(words: $0)) }
    }

    /// A set's words borrowed for the length of ``withWords(_:)``.
    struct Words {
        let words: UnsafeBufferPointer<UInt64>

        @inline(__always)
        func contains(_ id: Int64) -> Bool {
            guard id >= 0 else { return false }
            let w = Int(id) >> 6
            return w < words.count && words[w] & (1 << UInt64(id & 63)) != 0
        }
    }

    var isEmpty: Bool { words.allSatisfy { $0 == 0 } }

    var count: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// The ids, sorted.
    var ids: [Int64] {
        var out: [Int64] = []
        out.reserveCapacity(count)
        words.withUnsafeBufferPointer { w in
            for (i, word) in w.enumerated() where word != 0 {
                var word = word
                while word != 0 {
                    out.append(Int64(i << 6 | word.trailingZeroBitCount))
                    word &= word - 1
                }
            }
        }
        return out
    }

    func union(_ other: IDBits) -> IDBits {
        if other.words.isEmpty { return self }
        if words.isEmpty { return other }
        var (long, short) = words.count >= other.words.count ? (self, other) : (other, self)
        long.words.withUnsafeMutableBufferPointer { l in
            short.words.withUnsafeBufferPointer { s in
                for i in 0..<s.count { l[i] |= s[i] }
            }
        }
        return long
    }

    func intersection(_ other: IDBits) -> IDBits {
        var (short, long) = words.count <= other.words.count ? (self, other) : (other, self)
        short.words.withUnsafeMutableBufferPointer { s in
            long.words.withUnsafeBufferPointer { l in
                for i in 0..<s.count { s[i] &= l[i] }
            }
        }
        return short
    }

    /// The union of every set.
    static func union(_ sets: [IDBits]) -> IDBits {
        sets.reduce(IDBits()) { $0.union($1) }
    }

    var memoryBytes: Int { words.count * 8 }
}
