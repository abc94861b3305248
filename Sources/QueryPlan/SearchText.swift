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
///
/// The defaults are Algolia's documented ones (`minWordSizefor1Typo` 4,
/// `minWordSizefor2Typos` 8: "One typo is allowed for words with 4 or more
/// characters … Two typos are allowed for words with 8 or more characters").
/// Earlier builds used 5 and 9.
public struct TypoPolicy: Sendable, Hashable {
    public var enabled: Bool
    public var minWordSizeForOneTypo: Int
    public var minWordSizeForTwoTypos: Int

    /// Algolia's defaults.
    public static let algolia = TypoPolicy()

    public init(enabled: Bool = true, minWordSizeForOneTypo: Int = 4, minWordSizeForTwoTypos: Int = 8) {
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
        var rows: [Int] = []
        return distance(a, b[...], max: k, rows: &rows)
    }

    /// ``distance(_:_:max:)`` with rows the caller keeps between calls, so a
    /// scan over many tokens allocates once.
    public static func distance(_ a: [UInt8], _ b: ArraySlice<UInt8>, max k: Int, rows: inout [Int]) -> Int? {
        b.withUnsafeBufferPointer { distance(a, $0, max: k, rows: &rows) }
    }

    /// ``distance(_:_:max:)`` of bytes in place, with caller-owned rows.
    public static func distance(_ a: [UInt8], _ b: UnsafeBufferPointer<UInt8>, max k: Int, rows: inout [Int]) -> Int? {
        let n = a.count, m = b.count
        if abs(n - m) > k { return nil }
        if n == 0 { return m <= k ? m : nil }
        if m == 0 { return n <= k ? n : nil }
        let w = m + 1
        if rows.count < 3 * w { rows = [Int](repeating: 0, count: 3 * w) }
        let base = 0
        return rows.withUnsafeMutableBufferPointer { r -> Int? in
            var p2 = 0, p1 = w, c = 2 * w
            for j in 0...m { r[p1 + j] = j }
            for i in 1...n {
                r[c] = i
                var rowMin = i
                for j in 1...m {
                    let cost = a[i - 1] == b[base + j - 1] ? 0 : 1
                    var v = Swift.min(Swift.min(r[p1 + j], r[c + j - 1]) + 1, r[p1 + j - 1] + cost)
                    if i > 1, j > 1, a[i - 1] == b[base + j - 2], a[i - 2] == b[base + j - 1] { v = Swift.min(v, r[p2 + j - 2] + 1) }
                    r[c + j] = v
                    if v < rowMin { rowMin = v }
                }
                if rowMin > k { return nil }
                (p2, p1, c) = (p1, c, p2)
            }
            return r[p1 + m] <= k ? r[p1 + m] : nil
        }
    }
}

/// Finds where a query's words occur in text, by ``WordMatch``'s rule, fast:
/// what ranking needs for proximity, over every candidate's text.
///
/// ASCII text (most text) is scanned byte by byte with no allocation per
/// token; other text goes through ``SearchTokens`` and ``WordMatch``, the
/// definition, which a randomized test compares this with.
public struct SearchWordMatcher: Sendable {
    /// The query words' bytes, the typos each allows, whether the last is
    /// also a prefix, and the words as given: what a caller that finds
    /// matching terms in a vocabulary instead of comparing each one needs
    /// (``matchesASCII(_:rows:)``'s rule: equal, a prefix of the last word,
    /// or within the word's typos by ``Typos/distance(_:_:max:)``).
    public let words: [[UInt8]]
    public let allowed: [Int]
    public let prefixLast: Bool
    public let original: [String]
    let policy: TypoPolicy
    /// Each word's ``letterMask(_:)``.
    let masks: [UInt64]
    /// Per word, the other whole tokens it matches (``WordAlternative``):
    /// empty when no word has any, so that a plain search tests nothing more.
    public let alternatives: [[WordAlternative]]
    /// ``alternatives``' words as bytes.
    let alternativeBytes: [[[UInt8]]]
    /// The phrase alternatives (``WordAlternative/phrase``) of every word,
    /// in one list: empty when there are none, so that a search without
    /// them tests nothing more.
    public let phrases: [Phrase]

    public init(words: [String], prefixLast: Bool, policy: TypoPolicy, alternatives: [[WordAlternative]] = []) {
        original = words
        self.words = words.map { Array($0.utf8) }
        masks = self.words.map { Self.letterMask($0) }
        allowed = words.map { policy.allowed(for: $0) }
        self.prefixLast = prefixLast
        self.policy = policy
        let given = alternatives.count == words.count && alternatives.contains { !$0.isEmpty }
        self.alternatives = given ? alternatives : []
        alternativeBytes = given ? alternatives.map { $0.map { Array($0.word.utf8) } } : []
        var phrases: [Phrase] = []
        if given {
            for (w, list) in alternatives.enumerated() {
                for a in list where a.isPhrase && a.phrase.count <= WordAlternative.maxPhraseWords {
                    phrases.append(Phrase(word: w, tokens: a.phrase.map { Array($0.utf8) }, exact: a.exact))
                }
            }
        }
        self.phrases = phrases
    }

    /// Calls `found(word, position)` for every token of `value` (camel-case
    /// parts included, at their token's position) that matches query word
    /// `word`. Returns whether the value's words are exactly the query's
    /// words (the whole value is the query).
    @discardableResult
    public func scan(_ value: String, _ found: (Int, Int) -> Void) -> Bool {
        var copy = value
        if let whole = copy.withUTF8({ scanASCII($0, found) }) { return whole }
        var progress = PhraseProgress(self)
        for token in SearchTokens.tokens(value) {
            for (w, word) in original.enumerated() {
                let isLast = prefixLast && w == original.count - 1
                if WordMatch.of(word: word, token: token.folded, isLast: isLast, policy: policy) != nil || isAlternative(w, token.folded) {
                    found(w, token.position)
                }
            }
            if !phrases.isEmpty { followPhrases(token.folded.utf8, at: token.position, &progress, found) }
        }
        let valueWords = SearchTokens.queryWords(value)
        if !phrases.isEmpty { return isWholeQuery(valueWords.map { Array($0.utf8) }) }
        guard !alternatives.isEmpty else { return valueWords == original }
        return valueWords.count == original.count
            && valueWords.indices.allSatisfy { valueWords[$0] == original[$0] || isAlternative($0, valueWords[$0], exactOnly: true) }
    }

    /// ``scan(_:_:)`` over UTF-8 bytes that are all ASCII, with no allocation
    /// per token; nil (and no call of `found`) when some byte is not ASCII.
    ///
    /// Ranking scans the text of every item in the best typo bucket of a
    /// several-word query (most of such a query's time): so the value is
    /// lowercased once, tokens are compared where they lie, and a token is
    /// only run through the edit-distance rows when its letters allow it
    /// (see ``letterMask(_:)``).
    public func scanASCII(_ bytes: UnsafeBufferPointer<UInt8>, _ found: (Int, Int) -> Void) -> Bool? {
        var lowered: [UInt8] = [], rows: [Int] = []
        return scanASCII(bytes, lowered: &lowered, rows: &rows, found)
    }

    /// ``scanASCII(_:_:)`` with buffers the caller keeps from one value to
    /// the next (ranking scans thousands of values a query).
    public func scanASCII(
        _ bytes: UnsafeBufferPointer<UInt8>, lowered: inout [UInt8], rows: inout [Int],
        _ found: (Int, Int) -> Void
    ) -> Bool? {
        for b in bytes where b >= 128 { return nil }
        if rows.count < 3 * 64 { rows = [Int](repeating: 0, count: 3 * 64) }
        if !phrases.isEmpty { return scanASCIIWithPhrases(bytes, lowered: &lowered, rows: &rows, found) }
        var whole = true
        let count = Self.forEachASCIIToken(bytes, lowered: &lowered) { token, mask, position, isPart in
            if !isPart, whole {
                whole =
                    position < words.count
                    && (token.elementsEqual(words[position]) || (!alternatives.isEmpty && isAlternative(position, token, exactOnly: true)))
            }
            check(token, mask, position, &rows, found)
        }
        return whole && count == words.count
    }

    /// The tokens ``scanASCII(_:lowered:rows:_:)`` cuts ASCII text into, in
    /// order: `body(token, mask, position, isPart)` gets each token lowercased
    /// (in `lowered`), its ``letterMask(_:)``, its position among the whole
    /// tokens, and whether it is a camel-case part of the token before it
    /// (which comes first, parts following at its position). Returns the
    /// number of whole tokens. The shard's forward index cuts text with this
    /// same function, so its positions are the scan's by construction.
    /// `bytes` must be ASCII.
    @inline(__always)
    public static func forEachASCIIToken(
        _ bytes: UnsafeBufferPointer<UInt8>, lowered: inout [UInt8],
        _ body: (UnsafeBufferPointer<UInt8>, UInt64, Int, Bool) -> Void
    ) -> Int {
        forEachASCIIToken(bytes, lowered: &lowered) { token, mask, position, isPart, _ in body(token, mask, position, isPart) }
    }

    /// ``forEachASCIIToken(_:lowered:_:)`` that also gives each token's
    /// offset in `bytes` (its last argument), for callers that mark tokens
    /// where they lie (highlights).
    @inline(__always)
    public static func forEachASCIIToken(
        _ bytes: UnsafeBufferPointer<UInt8>, lowered: inout [UInt8],
        _ body: (UnsafeBufferPointer<UInt8>, UInt64, Int, Bool, Int) -> Void
    ) -> Int {
        let n = bytes.count
        var position = 0
        if lowered.count < n { lowered = [UInt8](repeating: 0, count: max(n, 2 * lowered.count)) }
        lowered.withUnsafeMutableBufferPointer { low in
            for k in 0..<n {
                let b = bytes[k]
                low[k] = b >= 65 && b <= 90 ? b + 32 : b
            }
            let low = UnsafeBufferPointer(low)
            var i = 0
            while i < n {
                while i < n, !Self.isWordByte(bytes[i]) { i += 1 }
                guard i < n else { break }
                let start = i
                var camel = false
                var prevLower = false
                var mask: UInt64 = 0
                while i < n, Self.isWordByte(bytes[i]) {
                    let b = bytes[i]
                    let upper = b >= 65 && b <= 90
                    if prevLower && upper { camel = true }
                    prevLower = b >= 97 && b <= 122
                    mask |= Self.bit(low[i])
                    i += 1
                }
                body(UnsafeBufferPointer(rebasing: low[start..<i]), mask, position, false, start)
                if camel {
                    // Camel-case parts: split where a lowercase letter meets an uppercase one.
                    var partStart = start
                    var pl = false
                    for k in start..<i {
                        let b = bytes[k]
                        let upper = b >= 65 && b <= 90
                        if pl && upper {
                            let part = UnsafeBufferPointer(rebasing: low[partStart..<k])
                            body(part, Self.letterMask(part), position, true, partStart)
                            partStart = k
                        }
                        pl = b >= 97 && b <= 122
                    }
                    let part = UnsafeBufferPointer(rebasing: low[partStart..<i])
                    body(part, Self.letterMask(part), position, true, partStart)
                }
                position += 1
            }
        }
        return position
    }

    /// The query words (as bits, word `w` bit `w`) that a token of ASCII text
    /// matches, lowercased as ``forEachASCIIToken(_:lowered:_:)`` gives it:
    /// what ``scanASCII(_:lowered:rows:_:)`` reports for it, by the same
    /// comparison. At most 64 words.
    public func matchesASCII(_ token: UnsafeBufferPointer<UInt8>, rows: inout [Int]) -> UInt64 {
        matchesASCII(token, mask: Self.letterMask(token), rows: &rows)
    }

    /// ``matchesASCII(_:rows:)`` of a token whose ``letterMask(_:)`` is known
    /// (``forEachASCIIToken(_:lowered:_:)`` gives it with the token).
    public func matchesASCII(_ token: UnsafeBufferPointer<UInt8>, mask: UInt64, rows: inout [Int]) -> UInt64 {
        if rows.count < 3 * 64 { rows = [Int](repeating: 0, count: 3 * 64) }
        var bits: UInt64 = 0
        check(token, mask, 0, &rows) { w, _ in bits |= 1 << UInt64(w) }
        return bits
    }

    /// The query words a whole token of ASCII text is (bits), for the
    /// whole-value test of ``scanASCII(_:lowered:rows:_:)``.
    public func equalsASCII(_ token: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var bits: UInt64 = 0
        for (w, word) in words.enumerated() where token.elementsEqual(word) || isAlternative(w, token, exactOnly: true) {
            bits |= 1 << UInt64(w)
        }
        return bits
    }

    /// The query words a folded token of text that is not ASCII matches
    /// (bits): what ``scan(_:_:)`` reports for it, by ``WordMatch``'s rule,
    /// step by step (equal, a prefix of the last word, within the allowed
    /// typos by ``Typos/distance(_:_:max:)`` on bytes), with the distance
    /// only worked out when the lengths and ``letterMask(_:)``s allow it.
    public func matchesFolded(_ token: String, rows: inout [Int]) -> UInt64 {
        var bits: UInt64 = 0
        var bytes: [UInt8]?
        var mask: UInt64 = 0
        for (w, word) in original.enumerated() {
            let isLast = prefixLast && w == original.count - 1
            if token == word || (isLast && token.hasPrefix(word)) || isAlternative(w, token) { bits |= 1 << UInt64(w); continue }
            let k = allowed[w]
            guard k > 0 else { continue }
            if bytes == nil {
                bytes = Array(token.utf8)
                mask = Self.letterMask(bytes!)
            }
            let b = bytes!
            guard abs(b.count - words[w].count) <= k, (masks[w] & ~mask).nonzeroBitCount <= k,
                (mask & ~masks[w]).nonzeroBitCount <= k
            else { continue }
            if Typos.distance(words[w], b[...], max: k, rows: &rows) != nil { bits |= 1 << UInt64(w) }
        }
        return bits
    }

    /// The query words a folded token of text that is not ASCII is (bits),
    /// as ``scan(_:_:)``'s whole-value test compares them.
    public func equalsFolded(_ token: String) -> UInt64 {
        var bits: UInt64 = 0
        for (w, word) in original.enumerated() where word == token || isAlternative(w, token, exactOnly: true) { bits |= 1 << UInt64(w) }
        return bits
    }

    /// The number of query words.
    public var wordCount: Int { words.count }

    @inline(__always) static func isWordByte(_ b: UInt8) -> Bool {
        (b >= 97 && b <= 122) || (b >= 65 && b <= 90) || (b >= 48 && b <= 57)
    }

    /// A byte's bit in a ``letterMask(_:)``: its own for lowercase letters and
    /// digits, shared by other bytes.
    @inline(__always) static func bit(_ b: UInt8) -> UInt64 {
        if b >= 97 && b <= 122 { return 1 << UInt64(b - 97) }
        if b >= 48 && b <= 57 { return 1 << UInt64(b - 48 + 26) }
        return 1 << UInt64(36 + b % 28)
    }

    /// The set of bits of a text's bytes. Each edit (insertion, deletion,
    /// substitution; a transposition changes no letter) adds at most one
    /// letter missing from the other side and removes at most one: so when
    /// either side has more than k bits the other lacks, the two are more
    /// than k typos apart, and no edit-distance rows are worth filling.
    /// Bytes sharing a bit only weaken the test, never make it wrong.
    public static func letterMask<C: Collection<UInt8>>(_ text: C) -> UInt64 {
        var m: UInt64 = 0
        for b in text { m |= bit(b) }
        return m
    }

    func check(_ token: UnsafeBufferPointer<UInt8>, _ mask: UInt64, _ position: Int, _ rows: inout [Int], _ found: (Int, Int) -> Void) {
        for (w, word) in words.enumerated() {
            if token.count == word.count, token.elementsEqual(word) { found(w, position); continue }
            if prefixLast, w == words.count - 1, token.count > word.count,
                UnsafeBufferPointer(rebasing: token[..<word.count]).elementsEqual(word)
            {
                found(w, position); continue
            }
            if !alternatives.isEmpty, isAlternative(w, token) { found(w, position); continue }
            let k = allowed[w]
            guard k > 0, abs(token.count - word.count) <= k else { continue }
            let wm = masks[w]
            guard (wm & ~mask).nonzeroBitCount <= k, (mask & ~wm).nonzeroBitCount <= k else { continue }
            if Typos.distance(word, token, max: k, rows: &rows) != nil { found(w, position) }
        }
    }
}
