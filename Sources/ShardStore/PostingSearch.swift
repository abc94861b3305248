import Foundation

/// A parameter search's word lookups answered from the process's
/// ``PostingIndex`` instead of FTS5 queries: the items holding a word
/// exactly, as a prefix (a range of terms) or misspelt, in the searched
/// columns, and for one word the attribute criterion (the best column group
/// holding it, at the start or not) from each posting's column masks.
///
/// Why: through FTS5 these lookups (the word's forms, then the attribute's
/// per-group `^`/column queries) are most of a one-word query, each a seek
/// in every FTS5 segment and a decoding of its doclist; in memory they are
/// merges of arrays.
///
/// Exact: used only while the index is the word index's current content
/// (``ShardStore/currentPostingIndex(outside:startsBuild:)``: never inside a caller's
/// transaction, never once another connection has committed), and only for
/// terms FTS5 would look up as they are: a quoted word of lowercase ASCII
/// letters and digits is one token of itself for `unicode61` (anything else
/// could be split, folded or refused, so it keeps the FTS5 query).
struct PostingSearch {
    let index: PostingIndex

    /// Whether FTS5's tokenizer makes `term`, quoted in a query, exactly the
    /// one token `term`.
    static func isPlain(_ term: String) -> Bool {
        !term.isEmpty && term.utf8.allSatisfy(isPlainByte)
    }

    static func isPlain(_ term: UnsafeBufferPointer<UInt8>) -> Bool {
        !term.isEmpty && term.allSatisfy(isPlainByte)
    }

    @inline(__always)
    static func isPlainByte(_ b: UInt8) -> Bool { (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) }

    /// The mask bits of word-index columns `columns`.
    static func mask(_ columns: some Sequence<Int>) -> UInt32 {
        columns.reduce(0) { $0 | (1 << UInt32($1)) }
    }

    /// The term's index as a one-element list, or none when the index does not hold it.
    func exact(_ term: String) -> [Int] {
        index.index(of: term).map { [$0] } ?? []
    }

    /// Every term that starts with `prefix`, `prefix` itself included.
    func prefixed(_ prefix: String) -> [Int] {
        Array(index.terms.range(prefix: prefix))
    }

    /// The items holding any of `terms` in a column of `columns` (a mask; nil:
    /// any column), as FTS5's `{columns} : (t1 OR t2 …)` finds them: one
    /// pass over the postings, whatever the number of terms (a short prefix
    /// has thousands).
    /// A common term's list (without a column filter) is ORed in from its
    /// bitmap, a word at a time (``PostingIndex/withBitmap(_:_:)``).
    func bits(_ terms: [Int], columns: UInt32?) -> IDBits {
        if terms.isEmpty { return IDBits() }
        return IDBits(maxID: index.maxID) { bits in
            for t in terms {
                if columns == nil,
                    index.withBitmap(
                        t,
                        { dense in
                            guard let dense else { return false }
                            for w in 0..<min(dense.count, bits.count) { bits[w] |= dense[w] }
                            return true
                        })
                {
                    continue
                }
                index.withPostings(t) { ids, masks in
                    if let columns {
                        for k in 0..<ids.count where masks[k] & columns != 0 {
                            bits[Int(ids[k]) >> 6] |= 1 << UInt64(ids[k] & 63)
                        }
                    } else {
                        for id in ids { bits[Int(id) >> 6] |= 1 << UInt64(id & 63) }
                    }
                }
            }
        }
    }

    /// For each of `items` (ids), the union of the masks of `terms` it holds:
    /// bit `c` when one of them is in column `c`, bit `16 + c` when one
    /// starts it. What the attribute criterion's per-group queries asked.
    ///
    /// Two ways, the same masks: through a table by id (``index``'s every
    /// id zeroed, then each list ORed in), or, when the lists and the items
    /// are few beside the shard's ids, a merge of each list with the items
    /// (a rare word on a shard of a million items zeroed 4 MB to look up a
    /// few dozen). `sparse` picks one (tests); nil weighs them.
    func masks(of items: [Int64], _ terms: [Int], sparse: Bool? = nil) -> [UInt32] {
        let listed = terms.reduce(0) { n, t in n + index.withPostings(t) { ids, _ in ids.count } }
        if sparse ?? (terms.count * items.count + listed < index.maxID / 8) {
            var out = [UInt32](repeating: 0, count: items.count)
            items.withUnsafeBufferPointer { items in
                out.withUnsafeMutableBufferPointer { out in
                    for t in terms {
                        index.withPostings(t) { ids, masks in
                            var i = 0, k = 0
                            while i < ids.count, k < items.count {
                                let id = Int64(ids[i])
                                if id < items[k] {
                                    i += 1
                                } else if id > items[k] {
                                    k += 1
                                } else {
                                    out[k] |= masks[i]
                                    i += 1
                                    k += 1
                                }
                            }
                        }
                    }
                }
            }
            return out
        }
        var dense = [UInt32](repeating: 0, count: index.maxID + 1)
        dense.withUnsafeMutableBufferPointer { dense in
            for t in terms {
                index.withPostings(t) { ids, masks in
                    for k in 0..<ids.count { dense[Int(ids[k])] |= masks[k] }
                }
            }
        }
        return items.map { $0 >= 0 && $0 < dense.count ? dense[Int($0)] : 0 }
    }
}
