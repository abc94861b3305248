import Foundation

/// The words of free text as parameter search sees them: the same tokens the
/// store's word index holds, so that what a query matches, how it is ranked,
/// and what a highlight marks are decided by one tokenizer.
///
/// A token is a run of letters, digits and combining marks (``Words``), and a
/// token with camel-case parts also yields each part ("MyWindowClass" gives
/// the token and My, Window, Class), as the word index does. Tokens compare
/// folded: case and diacritics removed (``Fold``).
public enum SearchTokens {
    /// One token of a value: where it is, and its folded form.
    public struct Token: Sendable, Hashable {
        /// The token's range in the value.
        public var range: Range<String.Index>
        /// Folded (lowercased, diacritics removed).
        public var folded: String
        /// Position of the whole token among the value's tokens; camel-case
        /// parts share their token's position.
        public var position: Int
    }

    /// The tokens of `value` with camel-case parts, in order.
    public static func tokens(_ value: String) -> [Token] {
        var out: [Token] = []
        for (position, token) in Words.split(value, camelCase: false).enumerated() {
            out.append(Token(range: token.startIndex..<token.endIndex, folded: Fold.fold(String(token)), position: position))
            let parts = Words.split(String(token), camelCase: true)
            guard parts.count > 1 else { continue }
            // The parts are ranges of a copy; map them back by offset.
            let base = value.utf8.distance(from: value.startIndex, to: token.startIndex)
            let copy = String(token)
            for part in parts {
                let lo = copy.utf8.distance(from: copy.startIndex, to: part.startIndex)
                let hi = copy.utf8.distance(from: copy.startIndex, to: part.endIndex)
                let start = value.utf8.index(value.startIndex, offsetBy: base + lo)
                let end = value.utf8.index(value.startIndex, offsetBy: base + hi)
                out.append(Token(range: start..<end, folded: Fold.fold(String(part)), position: position))
            }
        }
        return out
    }

    /// The folded words of a typed query, in order, duplicates kept (Algolia
    /// counts a repeated word once per occurrence).
    public static func queryWords(_ query: String) -> [String] {
        Words.split(query, camelCase: false).map { Fold.fold(String($0)) }.filter { !$0.isEmpty }
    }
}

/// Typo tolerance as Algolia defines it: a word of at least
/// ``minWordSizeForOneTypo`` letters may be matched with one typo, one of at
/// least ``minWordSizeForTwoTypos`` with two; shorter words must match
/// exactly. A typo is an insertion, a deletion, a substitution or a
/// transposition of two adjacent letters (Damerau–Levenshtein, restricted:
/// no letter is edited twice).
public struct TypoPolicy: Sendable, Hashable {
    public var enabled: Bool
    public var minWordSizeForOneTypo: Int
    public var minWordSizeForTwoTypos: Int

    public init(enabled: Bool = true, minWordSizeForOneTypo: Int = 5, minWordSizeForTwoTypos: Int = 9) {
        self.enabled = enabled
        self.minWordSizeForOneTypo = minWordSizeForOneTypo
        self.minWordSizeForTwoTypos = minWordSizeForTwoTypos
    }

    /// Typos allowed for a query word, by its length in characters.
    public func allowed(for word: String) -> Int {
        guard enabled else { return 0 }
        let n = word.count
        if n >= minWordSizeForTwoTypos { return 2 }
        if n >= minWordSizeForOneTypo { return 1 }
        return 0
    }
}

/// How one query word matched one token.
public enum WordMatch: Sendable, Hashable, Comparable {
    /// The token is the word.
    case exact
    /// The token starts with the word (the last query word only: as-you-type).
    case prefix
    /// The token is within this many typos of the word.
    case typo(Int)

    public var typos: Int {
        if case .typo(let n) = self { return n }
        return 0
    }

    /// Decides whether `token` (folded) matches query word `word` (folded):
    /// exactly, as a prefix when `isLast`, or within the policy's typos.
    public static func of(word: String, token: String, isLast: Bool, policy: TypoPolicy) -> WordMatch? {
        if token == word { return .exact }
        if isLast, token.hasPrefix(word) { return .prefix }
        let allowed = policy.allowed(for: word)
        guard allowed > 0 else { return nil }
        let d = Typos.distance(Array(word.utf8), Array(token.utf8), max: allowed)
        return d.map { .typo($0) }
    }
}

/// Bounded edit distance.
public enum Typos {
    /// The optimal-string-alignment distance between `a` and `b` (insertions,
    /// deletions, substitutions, adjacent transpositions), or nil when it is
    /// above `max`. Compares bytes: folded text is nearly all ASCII, and a
    /// letter that is not counts as more than one edit, which only makes
    /// matching stricter.
    public static func distance(_ a: [UInt8], _ b: [UInt8], max k: Int) -> Int? {
        let n = a.count, m = b.count
        if abs(n - m) > k { return nil }
        if n == 0 { return m <= k ? m : nil }
        if m == 0 { return n <= k ? n : nil }
        var prev2 = [Int](repeating: 0, count: m + 1)
        var prev = Array(0...m)
        var cur = [Int](repeating: 0, count: m + 1)
        for i in 1...n {
            cur[0] = i
            var rowMin = i
            for j in 1...m {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var v = Swift.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { v = Swift.min(v, prev2[j - 2] + 1) }
                cur[j] = v
                rowMin = Swift.min(rowMin, v)
            }
            if rowMin > k { return nil }
            swap(&prev2, &prev)
            swap(&prev, &cur)
        }
        return prev[m] <= k ? prev[m] : nil
    }
}
