import Foundation
import QueryPlan
import SQLite

/// The distinct terms of a shard's word index, sorted, with how many items
/// hold each: the one structure behind typo tolerance (terms within an edit
/// distance of a query word), prefix completion and suggestions (terms that
/// start with what was typed, by how many items they would find).
///
/// Read from FTS5's own vocabulary (`fts5vocab`), so it holds exactly the
/// index's tokens (folded, camel-case parts included). Terms are byte strings
/// in one buffer, sorted bytewise as FTS5 keeps them: a sorted list is an
/// implicit trie, which ``fuzzy(_:maxTypos:)`` walks with one edit-distance
/// row per depth, skipping every term below a prefix that is already too far.
///
/// A query worker keeps one per read connection and rebuilds it when the shard
/// has changed, at most every ``ShardStore/vocabularyMaxAge``: exact and
/// prefix matching never go through it, so a term written in between is found
/// at once, and only found by a misspelling after the rebuild.
final class Vocabulary {
    private(set) var bytes: [UInt8] = []
    /// Term `i` is `bytes[starts[i]..<starts[i + 1]]`.
    private(set) var starts: [Int32] = [0]
    private(set) var docs: [Int32] = []

    var count: Int { docs.count }
    /// Bytes held by the terms, their counts and ``buckets``.
    var memoryBytes: Int { bytes.count + starts.count * 4 + docs.count * 4 + buckets.count * 4 }

    init() {}

    /// The terms of a derived file (see ``encode(into:)``), copied onto the
    /// heap: lookups keep tables of their own beside them.
    init(decoding r: inout DerivedReader) throws(DerivedFile.Failure) {
        bytes = try r.array()
        starts = try r.array()
        docs = try r.array()
        try r.check(
            starts.count == docs.count + 1 && starts.first == 0 && Int(starts.last ?? -1) == bytes.count
                && zip(starts, starts.dropFirst()).allSatisfy { $0 <= $1 },
            "vocabulary offsets")
    }

    /// Puts the terms and their counts in a derived file's sections.
    func encode(into w: inout DerivedWriter) {
        w.put(bytes)
        w.put(starts)
        w.put(docs)
    }

    /// Loads every term of the `words` table.
    init(db: Database) throws {
        try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_vocab USING fts5vocab(main, 'words', 'row')")
        let s = try db.prepare("SELECT term, doc FROM temp.words_vocab")
        while try s.step() {
            s.withUTF8(at: 0) { bytes.append(contentsOf: $0) }
            starts.append(Int32(bytes.count))
            docs.append(Int32(truncatingIfNeeded: s.int64(at: 1)))
        }
        try s.reset()
    }

    /// Appends a term; terms must come in sorted order (for tests and tools).
    func append(_ term: String, docs n: Int) {
        bytes.append(contentsOf: term.utf8)
        starts.append(Int32(bytes.count))
        docs.append(Int32(n))
        suffixTables = [:]
        buckets = []
    }

    /// Appends a term's bytes; terms must come in sorted order.
    func append(bytes term: [UInt8], docs n: Int) {
        suffixTables = [:]
        buckets = []
        bytes.append(contentsOf: term)
        starts.append(Int32(bytes.count))
        docs.append(Int32(truncatingIfNeeded: n))
    }

    /// Term `i`'s bytes.
    func termBytes(_ i: Int) -> [UInt8] { Array(bytes[Int(starts[i])..<Int(starts[i + 1])]) }

    /// -1, 0, 1 comparing term `i` bytewise with `other`'s term `j`.
    func compare(_ i: Int, with other: Vocabulary, _ j: Int) -> Int {
        bytes.withUnsafeBufferPointer { a in
            other.bytes.withUnsafeBufferPointer { b in
                let x = UnsafeBufferPointer(rebasing: a[Int(starts[i])..<Int(starts[i + 1])])
                let y = UnsafeBufferPointer(rebasing: b[Int(other.starts[j])..<Int(other.starts[j + 1])])
                for (p, q) in zip(x, y) where p != q { return p < q ? -1 : 1 }
                return x.count == y.count ? 0 : x.count < y.count ? -1 : 1
            }
        }
    }

    /// Calls `body` with term `i`'s bytes, in place.
    func withTerm<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[Int(starts[i])..<Int(starts[i + 1])])) }
    }

    /// Term `i`'s length in bytes.
    func length(_ i: Int) -> Int { Int(starts[i + 1] - starts[i]) }

    func term(_ i: Int) -> String {
        bytes.withUnsafeBufferPointer { b in
            String(decoding: UnsafeBufferPointer(rebasing: b[Int(starts[i])..<Int(starts[i + 1])]), as: UTF8.self)
        }
    }

    /// -1, 0, 1 comparing term `i`'s first `prefix.count` bytes with `prefix`
    /// (a shorter term that agrees so far is smaller).
    private func comparePrefix(_ i: Int, _ prefix: ArraySlice<UInt8>) -> Int {
        let s = Int(starts[i]), e = Int(starts[i + 1])
        var k = 0
        for p in prefix {
            if s + k >= e { return -1 }
            let b = bytes[s + k]
            if b != p { return b < p ? -1 : 1 }
            k += 1
        }
        return 0
    }

    /// Where the terms of each first two bytes begin: those whose first two
    /// bytes are `k` (a one-byte term `x` counts as `x` then 0) are
    /// `buckets[k]..<buckets[k + 1]`. A prefix lookup bisects that bucket
    /// (tens of terms) rather than the whole list, whose probes miss the
    /// cache at nearly every step, and a two-typo lookup makes hundreds of
    /// them. 256 KiB.
    private var buckets: [Int32] = []

    private func bucketStarts() -> [Int32] {
        if !buckets.isEmpty { return buckets }
        var table = [Int32](repeating: Int32(count), count: 65537)
        var k = 0
        for i in 0..<count {
            let s = Int(starts[i]), e = Int(starts[i + 1])
            let key = e - s >= 2 ? Int(bytes[s]) << 8 | Int(bytes[s + 1]) : e > s ? Int(bytes[s]) << 8 : 0
            while k <= key { table[k] = Int32(i); k += 1 }
        }
        buckets = table
        return table
    }

    /// The terms that may start with `prefix`: all of them start with its
    /// first two bytes (one byte: its first), and none outside does.
    private func bucket(of prefix: ArraySlice<UInt8>) -> Range<Int> {
        guard let first = prefix.first else { return 0..<count }
        let table = bucketStarts()
        let key = Int(first) << 8 | (prefix.count > 1 ? Int(prefix[prefix.startIndex + 1]) : 0)
        let last = prefix.count > 1 ? key + 1 : key + 256
        return Int(table[key])..<Int(table[last])
    }

    /// The first index at or after `from` whose term is greater than every
    /// term starting with `prefix`.
    private func end(ofPrefix prefix: ArraySlice<UInt8>, from: Int) -> Int {
        let b = bucket(of: prefix)
        var lo = max(from, b.lowerBound), hi = max(lo, b.upperBound)
        while lo < hi {
            let mid = (lo + hi) / 2
            if comparePrefix(mid, prefix) <= 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The first index whose term is not below `prefix`.
    private func start(ofPrefix prefix: ArraySlice<UInt8>) -> Int {
        let b = bucket(of: prefix)
        var lo = b.lowerBound, hi = b.upperBound
        while lo < hi {
            let mid = (lo + hi) / 2
            if comparePrefix(mid, prefix) < 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// Indexes of the terms that start with `prefix` (the term itself included).
    func range(prefix: String) -> Range<Int> {
        let p = ArraySlice(Array(prefix.utf8))
        let lo = start(ofPrefix: p)
        return lo..<end(ofPrefix: p, from: lo)
    }

    /// The `k` terms starting with `prefix` (or only `prefix` itself, when
    /// not `prefixLast`) held by the most items, most first, ties in String
    /// order: the first `k` of all of them sorted so. Only those `k` (and
    /// others tied with the last) are made Strings: a one-letter prefix has
    /// thousands of completions, and making and sorting them all was most of
    /// a suggestion's time once its lists were in memory.
    func mostFrequent(prefix: String, prefixLast: Bool = true, _ k: Int) -> [(term: String, docs: Int, i: Int)] {
        var range = self.range(prefix: prefix)
        if !prefixLast {
            guard let first = range.first, length(first) == prefix.utf8.count else { return [] }
            range = first..<(first + 1)
        }
        guard k > 0, !range.isEmpty else { return [] }
        var kept = Array(range)
        if kept.count > k {
            // The k-th largest count: every term above it is kept, and those equal to it.
            var counts = kept.map { docs[$0] }
            let cut = Self.select(&counts, k - 1)
            kept.removeAll { docs[$0] < cut }
        }
        var terms = kept.map { (term: term($0), docs: Int(docs[$0]), i: $0) }
        terms.sort { $0.docs != $1.docs ? $0.docs > $1.docs : $0.term < $1.term }
        if terms.count > k { terms.removeLast(terms.count - k) }
        return terms
    }

    /// The value that would be at `n` if `values` were sorted in descending
    /// order (Hoare's selection; `values` is reordered).
    static func select(_ values: inout [Int32], _ n: Int) -> Int32 {
        var lo = 0, hi = values.count - 1
        while lo < hi {
            let pivot = values[(lo + hi) / 2]
            var i = lo, j = hi
            while i <= j {
                while values[i] > pivot { i += 1 }
                while values[j] < pivot { j -= 1 }
                if i <= j { values.swapAt(i, j); i += 1; j -= 1 }
            }
            if n <= j { hi = j } else if n >= i { lo = i } else { return values[n] }
        }
        return values[n]
    }

    /// Terms within `maxTypos` edits of `word` (``Typos/distance(_:_:max:)``'s
    /// measure), with their distance.
    ///
    /// One typo (the common case: words of 4 to 7 letters) does not walk the
    /// whole trie: a term one edit from the word keeps the word's first half
    /// as its prefix or its second half as its suffix, unless the edit swaps
    /// the two letters either side of the cut. So the walk covers the terms
    /// under the first half, a suffix table (``suffixBuckets``) gives those
    /// ending with the second, and the swapped term is looked up: a few
    /// hundred microseconds where a full walk takes about a millisecond.
    /// Two typos (words of 8 bytes and more) cut the word in three the same
    /// way (see ``fuzzyTwo(_:)``).
    func fuzzy(_ word: String, maxTypos k: Int) -> [(term: Int, typos: Int)] {
        let w = Array(word.utf8)
        let m = w.count
        guard count > 0, m > 0 else { return [] }
        if k == 1, m >= 4 { return fuzzyOne(w) }
        if k == 2, m >= 8 { return fuzzyTwo(w) }
        var out: [(term: Int, typos: Int)] = []
        walk(w, maxTypos: k, in: 0..<count, into: &out)
        return out
    }

    /// Terms by their last three bytes, and by their last two (for the
    /// 2-byte second half of a 4-letter word), see ``fuzzyOne(_:)``.
    private var suffixTables: [Int: [UInt32: [Int32]]] = [:]

    /// Builds the suffix tables and ``buckets`` now rather than at the first
    /// lookup: after it, lookups only read, so threads may share the vocabulary
    /// (``ForwardIndex``'s is shared by every connection of a process).
    func prepareLookups() {
        _ = suffixBuckets(length: 2)
        _ = suffixBuckets(length: 3)
        _ = bucketStarts()
    }

    private static func suffixKey(_ b: UnsafeBufferPointer<UInt8>, end: Int, length: Int) -> UInt32 {
        var key: UInt32 = 0
        for i in (end - length)..<end { key = key << 8 | UInt32(b[i]) }
        return key
    }

    /// Terms ending with `length` (2 or 3) given bytes, built on first use,
    /// each bucket sorted by the terms' lengths: a term within `k` of a word
    /// is at most `k` bytes longer or shorter, so a lookup reads only that
    /// slice (a common ending such as "ing" holds thousands of terms, and
    /// each was an edit distance computed in full).
    private func suffixBuckets(length: Int) -> [UInt32: [Int32]] {
        if let t = suffixTables[length] { return t }
        var table: [UInt32: [Int32]] = [:]
        bytes.withUnsafeBufferPointer { b in
            for i in 0..<count {
                let s = Int(starts[i]), e = Int(starts[i + 1])
                guard e - s >= length else { continue }
                table[Self.suffixKey(b, end: e, length: length), default: []].append(Int32(i))
            }
        }
        table = table.mapValues { $0.sorted { (self.length(Int($0)), $0) < (self.length(Int($1)), $1) } }
        suffixTables[length] = table
        return table
    }

    /// ``fuzzy(_:maxTypos:)`` for one typo and a word of at least 4 bytes:
    /// cut at `h` (at least 2 bytes before, 2 after), a term within one edit
    /// starts with `w[..<h]` (the edit is after the cut, or an insertion at
    /// it), or ends with `w[h...]` (the edit is before), or is `w` with
    /// `w[h-1]` and `w[h]` swapped.
    func fuzzyOne(_ w: [UInt8]) -> [(term: Int, typos: Int)] {
        let h = max(2, w.count / 2)
        var found: [Int: Int] = [:]
        // Bytes, not text: the cut may fall inside a character.
        walk(w, maxTypos: 1, under: w[..<h], into: &found)
        suffixMatches(w, maxTypos: 1, suffix: w[h...], into: &found)
        if w[h - 1] != w[h] {
            var swapped = w
            swapped.swapAt(h - 1, h)
            term(w, maxTypos: 1, equalTo: swapped, into: &found)
        }
        return found.map { (term: $0.key, typos: $0.value) }.sorted { $0.term < $1.term }
    }

    /// ``fuzzy(_:maxTypos:)`` for two typos and a word of at least 8 bytes,
    /// without walking the whole trie (a walk that would be ~40% of a
    /// one-word faceted search).
    ///
    /// Cut the word in three, `A B C` (`C` at least 3 bytes). The two edits
    /// of a term within two (restricted Damerau: substitutions, deletions,
    /// insertions, swaps of neighbours) leave either `A` a prefix of the term
    /// (no edit in `A`: an insertion just after it does not count), or `C` a
    /// suffix, or else one edit spoils each, and then: a swap across the
    /// first cut and an edit in `C` leave the term starting with `w` so
    /// swapped up to `C`; an edit in `A` and a swap across the second cut
    /// leave it ending with `w` so swapped from `B` on; both swaps make one
    /// term; and an edit inside `A` and one inside `C` leave `B` whole, right
    /// after `A` with one edit — whose forms are enumerated from the trie
    /// (the bytes that do follow each prefix of `A`, not every byte). Each
    /// case names terms by a prefix or a suffix, and the distance to each is
    /// computed exactly, so the cases may overlap; a randomized test holds
    /// the result to checking every term.
    func fuzzyTwo(_ w: [UInt8]) -> [(term: Int, typos: Int)] {
        let m = w.count
        let h1 = m / 3, h2 = m - max(3, m / 3)
        var found: [Int: Int] = [:]
        walk(w, maxTypos: 2, under: w[..<h1], into: &found)
        suffixMatches(w, maxTypos: 2, suffix: w[h2...], into: &found)
        if w[h1 - 1] != w[h1] {
            var swapped = w
            swapped.swapAt(h1 - 1, h1)
            walk(w, maxTypos: 2, under: swapped[..<h2], into: &found)
            if w[h2 - 1] != w[h2] {
                swapped.swapAt(h2 - 1, h2)
                term(w, maxTypos: 2, equalTo: swapped, into: &found)
            }
        }
        if w[h2 - 1] != w[h2] {
            var swapped = w
            swapped.swapAt(h2 - 1, h2)
            suffixMatches(w, maxTypos: 2, suffix: swapped[h1...], into: &found)
        }
        let a = Array(w[..<h1]), b = w[h1..<h2]
        // Each edited first third, and the second after it, is made in one
        // buffer kept for the whole lookup (a new array for each of the
        // ~70 probes of a 9-letter word was most of its allocations).
        var probe: [UInt8] = []
        probe.reserveCapacity(h2 + 1)
        func walkProbe(_ edit: (inout [UInt8]) -> Void) {
            probe.removeAll(keepingCapacity: true)
            edit(&probe)
            probe.append(contentsOf: b)
            walk(w, maxTypos: 2, under: probe[...], into: &found)
        }
        var siblings: [UInt8] = []
        for p in 0..<h1 {
            walkProbe {
                $0.append(contentsOf: a[..<p]); $0.append(contentsOf: a[(p + 1)...])
            }  // deleted
            if p + 1 < h1, a[p] != a[p + 1] {
                walkProbe {
                    $0.append(contentsOf: a); $0.swapAt(p, p + 1)
                }  // swapped
            }
            children(of: a[..<p], into: &siblings)
            for x in siblings {
                if x != a[p] {
                    walkProbe {
                        $0.append(contentsOf: a); $0[p] = x
                    }  // substituted
                }
                walkProbe {
                    $0.append(contentsOf: a[..<p]); $0.append(x); $0.append(contentsOf: a[p...])
                }  // inserted
            }
        }
        return found.map { (term: $0.key, typos: $0.value) }.sorted { $0.term < $1.term }
    }

    /// The bytes that follow `prefix` in some term, each once, in order, into
    /// `out` (emptied first); one key buffer for the prefix and each child.
    private func children(of prefix: ArraySlice<UInt8>, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        var i = start(ofPrefix: prefix)
        let hi = end(ofPrefix: prefix, from: i)
        let depth = prefix.count
        var key = Array(prefix)
        key.append(0)
        while i < hi {
            guard length(i) > depth else { i += 1; continue }
            let x = bytes[Int(starts[i]) + depth]
            out.append(x)
            key[depth] = x
            i = end(ofPrefix: key[...], from: i)
        }
    }

    /// The walk over the terms starting with `prefix`.
    private func walk(_ w: [UInt8], maxTypos k: Int, under prefix: ArraySlice<UInt8>, into found: inout [Int: Int]) {
        let lo = start(ofPrefix: prefix)
        let hi = end(ofPrefix: prefix, from: lo)
        guard lo < hi else { return }
        var out: [(term: Int, typos: Int)] = []
        walk(w, maxTypos: k, in: lo..<hi, into: &out)
        for (t, d) in out { found[t] = d }
    }

    /// The term whose bytes are `candidate`, if any, when within `k` of `w`.
    private func term(_ w: [UInt8], maxTypos k: Int, equalTo candidate: [UInt8], into found: inout [Int: Int]) {
        let t = start(ofPrefix: candidate[...])
        guard t < count, found[t] == nil, length(t) == candidate.count, comparePrefix(t, candidate[...]) == 0,
            let d = Typos.distance(w, candidate, max: k)
        else { return }
        found[t] = d
    }

    /// Terms ending with `suffix` (2 bytes or more), found by their last
    /// three (or two) bytes in ``suffixBuckets(length:)``, within `k` of `w`.
    private func suffixMatches(_ w: [UInt8], maxTypos k: Int, suffix: ArraySlice<UInt8>, into found: inout [Int: Int]) {
        let length = min(3, suffix.count)
        let key = Array(suffix).withUnsafeBufferPointer { Self.suffixKey($0, end: $0.count, length: length) }
        var rows: [Int] = []
        let bucket = suffixBuckets(length: length)[key] ?? []
        // The slice of terms k bytes shorter than `w` to k longer.
        var lo = 0, hi = bucket.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self.length(Int(bucket[mid])) < w.count - k { lo = mid + 1 } else { hi = mid }
        }
        bytes.withUnsafeBufferPointer { b in
            for t32 in bucket[lo...] {
                let t = Int(t32)
                let s = Int(starts[t]), e = Int(starts[t + 1])
                if e - s > w.count + k { break }
                guard e - s >= suffix.count, found[t] == nil,
                    UnsafeBufferPointer(rebasing: b[(e - suffix.count)..<e]).elementsEqual(suffix),
                    let d = Typos.distance(w, UnsafeBufferPointer(rebasing: b[s..<e]), max: k, rows: &rows)
                else { continue }
                found[t] = d
            }
        }
    }

    /// The trie walk of ``fuzzy(_:maxTypos:)`` over the terms of `range`
    /// (every term, or those under a prefix), appending matches in index order.
    private func walk(_ w: [UInt8], maxTypos k: Int, in range: Range<Int>, into out: inout [(term: Int, typos: Int)]) {
        let m = w.count
        let end = range.upperBound
        let width = m + 1
        // Rows for depths up to m + k: deeper prefixes are always pruned.
        let maxDepth = m + k + 1
        var rows = [Int](repeating: 0, count: (maxDepth + 1) * width)
        for j in 0...m { rows[j] = j }
        var path = [UInt8](repeating: 0, count: maxDepth + 1)
        var pathCount = 0  // the bytes the valid rows were computed for
        bytes.withUnsafeBufferPointer { bytes in
            rows.withUnsafeMutableBufferPointer { rows in
                path.withUnsafeMutableBufferPointer { path in
                    w.withUnsafeBufferPointer { w in
                        starts.withUnsafeBufferPointer { starts in
                            var i = range.lowerBound
                            while i < end {
                                let s = Int(starts[i]), e = Int(starts[i + 1])
                                let len = e - s
                                // Rows 0...lcp are still valid for this term.
                                var lcp = 0
                                while lcp < pathCount, lcp < len, path[lcp] == bytes[s + lcp] { lcp += 1 }
                                pathCount = lcp
                                var pruned = false
                                var d = lcp
                                while d < len {
                                    let c = bytes[s + d]
                                    path[d] = c
                                    pathCount = d + 1
                                    let prev = d * width, cur = (d + 1) * width
                                    var rowMin = d + 1
                                    if d + 1 <= maxDepth - 1 {
                                        // Only cells within k of the diagonal can be within k;
                                        // the others hold k + 1, written where neighbours read them.
                                        let r = d + 1
                                        let lo = max(1, r - k), hi = min(m, r + k)
                                        rows[cur] = min(r, k + 1)
                                        if lo > 1 { rows[cur + lo - 1] = k + 1 }
                                        if lo <= hi {
                                            for j in lo...hi {
                                                let cost = w[j - 1] == c ? 0 : 1
                                                var v = min(min(rows[prev + j], rows[cur + j - 1]) + 1, rows[prev + j - 1] + cost)
                                                if d > 0, j > 1, w[j - 1] == path[d - 1], w[j - 2] == c {
                                                    v = min(v, rows[(d - 1) * width + j - 2] + 1)
                                                }
                                                if v > k { v = k + 1 }
                                                rows[cur + j] = v
                                                if v < rowMin { rowMin = v }
                                            }
                                        }
                                        if hi < m { rows[cur + hi + 1] = k + 1 }
                                    }
                                    if rowMin > k {
                                        // No term below this prefix can come within k: skip to
                                        // the first term past it. Galloping from here, then
                                        // halving: the next subtree is usually near, and a
                                        // binary search over the whole list missed the cache
                                        // at every step (it was most of a walk's time).
                                        let plen = d + 1
                                        // Whether term `x` sorts at or before the last term with this prefix.
                                        func within(_ x: Int) -> Bool {
                                            let ms = Int(starts[x]), me = Int(starts[x + 1])
                                            var q = 0
                                            while q < plen {
                                                if ms + q >= me { return true }
                                                let b = bytes[ms + q], p = path[q]
                                                if b != p { return b < p }
                                                q += 1
                                            }
                                            return true
                                        }
                                        var lo = i + 1, hi = i + 1, step = 1
                                        while hi < end, within(hi) { lo = hi + 1; hi = lo + step; step &<<= 1 }
                                        hi = min(hi, end)
                                        while lo < hi {
                                            let mid = (lo + hi) &>> 1
                                            if within(mid) { lo = mid + 1 } else { hi = mid }
                                        }
                                        i = lo
                                        pruned = true
                                        break
                                    }
                                    d += 1
                                }
                                if pruned { continue }
                                // Cells off the band are not kept: a length more than k away is no match.
                                let dist = abs(len - m) <= k ? rows[len * width + m] : k + 1
                                if dist <= k { out.append((i, dist)) }
                                i += 1
                            }
                        }
                    }
                }
            }
        }
    }
}
