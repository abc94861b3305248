import Foundation
import QueryPlan
import SQLite

extension ShardStore {
    /// The items with a text value of attribute `name` in the range, sorted.
    ///
    /// Text rows are the ones with a folded `key` (kinds 0 and 5). Ignoring
    /// case and diacritics (`cd`), the order of two texts whose folds are
    /// ASCII is the byte order of the folds, which is the order of `key` in
    /// the `attrs_key` index: a row whose key is ASCII and outside the folded
    /// bounds cannot match, and is never read. Rows with any other key are
    /// compared in full, since folding and width rules outside ASCII can
    /// reorder them. Every other range compares each text value of the
    /// attribute: the folded key does not follow an order that minds case or
    /// diacritics. Every candidate is settled by ``TextRangeTest/contains(_:)``.
    func textRangeMatches(name: Int64, _ test: TextRangeTest, _ context: QueryContext) throws -> [Int64] {
        var sql = "SELECT item, coalesce(text, key) FROM attrs WHERE name = ? AND key IS NOT NULL"
        var values: [SQLValue] = [.integer(name)]
        if let (low, high) = Self.keyWindow(test) {
            // `[^ -~]`: a character outside printable ASCII, anywhere in the key.
            var window: [String] = []
            if let low { window.append("key >= ?"); values.append(.text(low)) }
            if let high { window.append("key <= ?"); values.append(.text(high)) }
            sql += " AND ((\(window.joined(separator: " AND "))) OR key GLOB '*[^ -~]*')"
        }
        let s = try db.prepare(sql)
        try s.bind(values)
        var ids: [Int64] = []
        while try s.step() {
            try context.checkCancelled()
            if let text = s.string(at: 1), test.contains(text) { ids.append(s.int64(at: 0)) }
        }
        try s.reset()
        return IDs.sortedUnique(ids)
    }

    /// The window of `key` values an ASCII key must lie in to match, or nil
    /// when the index cannot narrow the range (options other than `cd`, a
    /// bound whose fold is not printable ASCII, no bound at all).
    ///
    /// A key is the fold of the value's first ``Fold/keyCharacters``
    /// characters: a prefix of the value's fold, so never above it (the
    /// upper bound holds as it is), and at least that long when cut, so a
    /// lower bound cut to ``Fold/prefixCharacters`` characters is never above
    /// a matching key either. Exclusive bounds are tested as inclusive here
    /// and settled by the full comparison.
    static func keyWindow(_ test: TextRangeTest) -> (low: String?, high: String?)? {
        guard test.options == [.caseInsensitive, .diacriticInsensitive], test.lower != nil || test.upper != nil else { return nil }
        func printable(_ s: String) -> Bool { s.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } }
        var low: String?, high: String?
        if let l = test.lower {
            let folded = Fold.fold(l.value)
            guard printable(folded) else { return nil }
            low = String(folded.prefix(Fold.prefixCharacters))
        }
        if let u = test.upper {
            let folded = Fold.fold(u.value)
            guard printable(folded) else { return nil }
            high = folded
        }
        return (low, high)
    }
}
