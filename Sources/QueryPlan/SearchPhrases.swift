import Foundation

/// Phrase alternatives (``WordAlternative/phrase``) in the scan of
/// ``SearchWordMatcher``: followed token by token, and in the whole-value test.
extension SearchWordMatcher {
    /// A phrase alternative of a query word, as the scan follows it.
    public struct Phrase: Sendable, Hashable {
        /// The query word it stands for.
        public var word: Int
        /// The phrase's folded words as bytes.
        public var tokens: [[UInt8]]
        public var exact: Bool
    }

    /// Where the scan is in each phrase: per phrase, bit `j` set when its
    /// words up to `j` end at the current position (``current``) or at the
    /// one before (``previous``).
    public struct PhraseProgress {
        var position = -1
        var current: [UInt64]
        var previous: [UInt64]
        public init(_ matcher: SearchWordMatcher) {
            current = [UInt64](repeating: 0, count: matcher.phrases.count)
            previous = current
        }
    }

    /// Follows the phrases through one token (folded, whole or a camel-case
    /// part) at `position` (tokens in order; parts share their token's
    /// position): calls `found(word, start)` and `found(word, end)` where a
    /// phrase ends at it, its words matched whole, one per position, from
    /// `start` to `end` (this `position`).
    @inline(__always)
    public func followPhrases<C: Collection<UInt8>>(
        _ token: C, at position: Int, _ progress: inout PhraseProgress, _ found: (Int, Int) -> Void
    ) {
        if position != progress.position {
            for i in progress.current.indices {
                progress.previous[i] = position == progress.position + 1 ? progress.current[i] : 0
                progress.current[i] = 0
            }
            progress.position = position
        }
        for (i, phrase) in phrases.enumerated() {
            for (j, word) in phrase.tokens.enumerated() where word.count == token.count && token.elementsEqual(word) {
                guard j == 0 || progress.previous[i] & (1 << UInt64(j - 1)) != 0 else { continue }
                progress.current[i] |= 1 << UInt64(j)
                if j == phrase.tokens.count - 1 {
                    found(phrase.word, position - j)
                    found(phrase.word, position)
                }
            }
        }
    }

    /// Whether phrase `i` of ``phrases`` occurs in `value` (see
    /// ``followPhrases(_:at:_:_:)``): what a shard verifies an item it
    /// found by the phrase's words with.
    public func containsPhrase(_ i: Int, in value: String) -> Bool {
        let one = SearchWordMatcher(phrase: phrases[i])
        var found = false
        var progress = PhraseProgress(one)
        var copy = value
        let ascii = copy.withUTF8 { bytes -> Bool in
            guard !bytes.contains(where: { $0 >= 128 }) else { return false }
            var lowered: [UInt8] = []
            _ = Self.forEachASCIIToken(bytes, lowered: &lowered) { token, _, position, _ in
                one.followPhrases(token, at: position, &progress) { _, _ in found = true }
            }
            return true
        }
        if !ascii {
            for token in SearchTokens.tokens(value) {
                one.followPhrases(token.folded.utf8, at: token.position, &progress) { _, _ in found = true }
            }
        }
        return found
    }

    /// A matcher of one phrase alone (for ``containsPhrase(_:in:)``).
    init(phrase: Phrase) {
        original = []
        words = []
        masks = []
        allowed = []
        prefixLast = false
        policy = TypoPolicy(enabled: false)
        alternatives = []
        alternativeBytes = []
        phrases = [Phrase(word: 0, tokens: phrase.tokens, exact: phrase.exact)]
    }

    /// Whether `token` is a one-word alternative of word `w` that counts as exact.
    func isExactAlternative(_ w: Int, _ token: [UInt8]) -> Bool {
        guard w < alternativeBytes.count else { return false }
        return alternativeBytes[w].indices.contains { alternativeBytes[w][$0] == token && alternatives[w][$0].exact }
    }

    /// Whether a value whose whole tokens (folded, camel-case parts aside)
    /// are `tokens` is the whole query, with phrases: each query word is a
    /// token equal to it or to an alternative that counts as exact, or
    /// the tokens of a phrase that counts as exact; a run of query words
    /// that all have one phrase (a synonym's text of several words for
    /// another: "big apple" for "new york") may be that phrase once.
    func isWholeQuery(_ tokens: [[UInt8]]) -> Bool {
        // reach[i][j]: the first i query words are the first j tokens.
        let n = words.count, m = tokens.count
        var reach = [[Bool]](repeating: [Bool](repeating: false, count: m + 1), count: n + 1)
        reach[0][0] = true
        for i in 0..<n {
            for j in 0...m where reach[i][j] {
                if j < m, tokens[j] == words[i] || isExactAlternative(i, tokens[j]) { reach[i + 1][j + 1] = true }
                for p in phrases where p.word == i && p.exact && j + p.tokens.count <= m {
                    guard tokens[j..<(j + p.tokens.count)].elementsEqual(p.tokens) else { continue }
                    var k = i + 1
                    reach[k][j + p.tokens.count] = true
                    // The same phrase for the words after this one.
                    while k < n, phrases.contains(where: { $0.word == k && $0.exact && $0.tokens == p.tokens }) {
                        k += 1
                        reach[k][j + p.tokens.count] = true
                    }
                }
            }
        }
        return reach[n][m]
    }

    /// Whether folded `token` is an alternative of word `w` (and, with
    /// `exactOnly`, one that counts as exact).
    @inline(__always)
    public func isAlternative(_ w: Int, _ token: String, exactOnly: Bool = false) -> Bool {
        guard w < alternatives.count else { return false }
        return alternatives[w].contains { $0.word == token && (!exactOnly || $0.exact) }
    }

    /// ``isAlternative(_:_:exactOnly:)`` of bytes.
    @inline(__always)
    func isAlternative(_ w: Int, _ token: UnsafeBufferPointer<UInt8>, exactOnly: Bool = false) -> Bool {
        guard w < alternativeBytes.count else { return false }
        for (k, a) in alternativeBytes[w].enumerated() where a.count == token.count && token.elementsEqual(a) {
            if !exactOnly || alternatives[w][k].exact { return true }
        }
        return false
    }

    /// ``scanASCII(_:lowered:rows:_:)`` when some word has a phrase: the
    /// phrases followed token by token, and the whole-value test by
    /// ``isWholeQuery(_:)`` over the value's whole tokens.
    func scanASCIIWithPhrases(
        _ bytes: UnsafeBufferPointer<UInt8>, lowered: inout [UInt8], rows: inout [Int], _ found: (Int, Int) -> Void
    ) -> Bool {
        var progress = PhraseProgress(self)
        var tokens: [[UInt8]] = []
        _ = Self.forEachASCIIToken(bytes, lowered: &lowered) { token, mask, position, isPart in
            if !isPart { tokens.append(Array(token)) }
            check(token, mask, position, &rows, found)
            followPhrases(token, at: position, &progress, found)
        }
        return isWholeQuery(tokens)
    }

}
