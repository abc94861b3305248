import Foundation
import Items
import QueryPlan

/// Marks the query's words in attribute values, for `_highlightResult` and
/// `_snippetResult`. A token is marked when it matches a query word by the
/// rule the shards matched with (``WordMatch``): the same tokenizer, the same
/// typos, the last word as a prefix, a word's alternatives (synonyms,
/// plurals: ``WordAlternative``) as the word.
///
/// ASCII values (most values) are cut and compared on their bytes by the
/// shards' own matcher (``SearchWordMatcher/forEachASCIIToken(_:lowered:_:)``
/// and ``SearchWordMatcher/matchesASCII(_:rows:)``, held to ``WordMatch`` by
/// a randomized test), other values by ``SearchTokens`` and ``WordMatch``:
/// the same marks either way (a randomized test compares the two). Why:
/// building a `String` and two arrays per token made highlighting a page's
/// titles 3-4% of a search's CPU.
package struct Highlighter: Sendable {
    package let words: [String]
    package let prefixLast: Bool
    package let typos: TypoPolicy
    package var preTag: String
    package var postTag: String
    package var ellipsis: String
    let matcher: SearchWordMatcher

    package init(plan: SearchPlan, preTag: String = "<em>", postTag: String = "</em>", ellipsis: String = "…") {
        words = plan.words
        prefixLast = plan.prefixLast
        typos = plan.typos
        matcher = SearchWordMatcher(words: plan.words, prefixLast: plan.prefixLast, policy: plan.typos, alternatives: plan.alternatives)
        self.preTag = preTag
        self.postTag = postTag
        self.ellipsis = ellipsis
    }

    /// Algolia's `matchLevel`: no word, some words, or every word matched.
    package enum MatchLevel: String, Sendable { case none, partial, full }

    package struct Result: Sendable, Hashable {
        package var value: String
        package var matchLevel: String
        package var matchedWords: [String]
        package var fullyHighlighted: Bool
    }

    /// A value's tokens and what the query's words match in it, as UTF-8
    /// offsets in the value.
    struct Matches {
        /// Every token (camel-case parts after their token, at its position).
        var tokens: [(range: Range<Int>, position: Int)] = []
        /// The tokens that match a word, ascending.
        var marked: [Int] = []
        /// The marked tokens' ranges, merged where they touch.
        var ranges: [Range<Int>] = []
        /// Per query word, whether some token matches it.
        var matched: [Bool]
    }

    /// The token ranges of `value` that match, merged, and which words matched.
    /// `fast`: ASCII values by bytes (tests turn it off to compare).
    func matches(_ value: String, fast: Bool = true) -> Matches {
        let scratch = HighlightScratch(self)
        fill(value, fast: fast, scratch)
        return scratch.matches
    }

    /// ``matches(_:fast:)`` into `scratch.matches`, in the buffers it holds.
    func fill(_ value: String, fast: Bool, _ scratch: HighlightScratch) {
        var copy = value
        copy.withUTF8 { fill(utf8: $0, fast: fast, scratch) }
    }

    /// ``fill(_:fast:_:)`` of the text whose UTF-8 is `bytes` (valid UTF-8):
    /// a `String` is made of it only when it is not ASCII.
    func fill(utf8 bytes: UnsafeBufferPointer<UInt8>, fast: Bool, _ scratch: HighlightScratch) {
        scratch.matches.tokens.removeAll(keepingCapacity: true)
        scratch.matches.marked.removeAll(keepingCapacity: true)
        scratch.matches.ranges.removeAll(keepingCapacity: true)
        scratch.matches.matched.removeAll(keepingCapacity: true)
        scratch.matches.matched.append(contentsOf: repeatElement(false, count: words.count))
        scratch.ranges.removeAll(keepingCapacity: true)
        let wordCount = words.count
        func record(_ range: Range<Int>, _ position: Int, matching: (Int) -> Bool) {
            let k = scratch.matches.tokens.count
            scratch.matches.tokens.append((range, position))
            var any = false
            for w in 0..<wordCount where matching(w) {
                scratch.matches.matched[w] = true
                any = true
            }
            if any {
                scratch.matches.marked.append(k)
                scratch.ranges.append(range)
            }
        }
        let done = fast && words.count <= 64 && !bytes.contains(where: { $0 >= 128 })
        if done {
            _ = SearchWordMatcher.forEachASCIIToken(bytes, lowered: &scratch.lowered) { token, mask, position, _, start in
                let bits = matcher.matchesASCII(token, mask: mask, rows: &scratch.rows)
                record(start..<start + token.count, position) { bits & (1 << UInt64($0)) != 0 }
            }
        } else {
            let value = String(decoding: bytes, as: UTF8.self)
            let utf8 = value.utf8
            for token in SearchTokens.tokens(value) {
                let range =
                    utf8.distance(
                        from: utf8.startIndex, to: token.range.lowerBound)..<utf8.distance(from: utf8.startIndex, to: token.range.upperBound)
                record(range, token.position) { w in
                    WordMatch.of(word: words[w], token: token.folded, isLast: prefixLast && w == words.count - 1, policy: typos) != nil
                        || matcher.isAlternative(w, token.folded)
                }
            }
        }
        if !matcher.phrases.isEmpty { markPhrases(bytes, scratch) }
        // A whole token and its camel-case part may both match: keep the union.
        scratch.ranges.sort { $0.lowerBound < $1.lowerBound }
        for r in scratch.ranges {
            if let last = scratch.matches.ranges.last, r.lowerBound <= last.upperBound {
                scratch.matches.ranges[scratch.matches.ranges.count - 1] = last.lowerBound..<max(last.upperBound, r.upperBound)
            } else {
                scratch.matches.ranges.append(r)
            }
        }
    }

    /// Marks the tokens of each occurrence of a phrase alternative
    /// (``WordAlternative/phrase``: its words at consecutive positions, as
    /// the shards matched it), and its word as matched.
    func markPhrases(_ bytes: UnsafeBufferPointer<UInt8>, _ scratch: HighlightScratch) {
        let value = String(decoding: bytes, as: UTF8.self)
        let utf8 = value.utf8
        // Per position, the tokens there: their index among the recorded tokens and folded bytes.
        var index: [Int: Int] = [:]
        for (k, t) in scratch.matches.tokens.enumerated() { index[t.range.lowerBound << 32 | t.range.upperBound] = k }
        var byPosition: [[(k: Int, folded: [UInt8])]] = []
        for token in SearchTokens.tokens(value) {
            let lo = utf8.distance(from: utf8.startIndex, to: token.range.lowerBound)
            let hi = utf8.distance(from: utf8.startIndex, to: token.range.upperBound)
            guard let k = index[lo << 32 | hi] else { continue }
            while byPosition.count <= token.position { byPosition.append([]) }
            byPosition[token.position].append((k, Array(token.folded.utf8)))
        }
        var marked = Set(scratch.matches.marked)
        for phrase in matcher.phrases where phrase.tokens.count <= byPosition.count {
            for start in 0...(byPosition.count - phrase.tokens.count) {
                var ks: [Int] = []
                for (j, word) in phrase.tokens.enumerated() {
                    let here = byPosition[start + j].filter { $0.folded == word }.map(\.k)
                    if here.isEmpty { ks = []; break }
                    ks += here
                }
                guard !ks.isEmpty else { continue }
                scratch.matches.matched[phrase.word] = true
                for k in ks where marked.insert(k).inserted { scratch.ranges.append(scratch.matches.tokens[k].range) }
            }
        }
        scratch.matches.marked = marked.sorted()
    }

    func level(_ matched: [Bool]) -> MatchLevel {
        let count = matched.reduce(0) { $0 + ($1 ? 1 : 0) }
        return count == 0 ? .none : count == words.count ? .full : .partial
    }

    /// `value`'s bytes in `span`, with the ranges inside it between the tags.
    func mark(_ value: String, _ ranges: [Range<Int>], in span: Range<Int>) -> String {
        var copy = value
        return copy.withUTF8 { bytes in
            var out: [UInt8] = []
            out.reserveCapacity(span.count + ranges.count * (preTag.utf8.count + postTag.utf8.count))
            var at = span.lowerBound
            for r in ranges where r.lowerBound >= span.lowerBound && r.upperBound <= span.upperBound {
                out.append(contentsOf: bytes[at..<r.lowerBound])
                out.append(contentsOf: preTag.utf8)
                out.append(contentsOf: bytes[r])
                out.append(contentsOf: postTag.utf8)
                at = r.upperBound
            }
            out.append(contentsOf: bytes[at..<span.upperBound])
            return String(decoding: out, as: UTF8.self)
        }
    }

    package func highlight(_ value: String) -> Result { highlight(value, fast: true) }

    func highlight(_ value: String, fast: Bool) -> Result {
        let m = matches(value, fast: fast)
        return Result(
            value: mark(value, m.ranges, in: 0..<value.utf8.count),
            matchLevel: level(m.matched).rawValue,
            matchedWords: words.indices.filter { m.matched[$0] }.map { words[$0] },
            fullyHighlighted: fullyHighlighted(m))
    }

    /// Whether the marks cover the whole value: every position marked, and
    /// every mark a whole token.
    func fullyHighlighted(_ m: Matches) -> Bool {
        !m.tokens.isEmpty && everyPositionMarked(m) && m.ranges.count > 0
            && m.ranges.allSatisfy { r in m.tokens.contains { $0.range == r } }
    }

    /// `value`'s `_highlightResult` entry, written as ``JSONWriter`` writes
    /// ``highlight(_:)``'s result (`fullyHighlighted`, `matchLevel`,
    /// `matchedWords`, `value`, keys sorted) straight from the value's bytes:
    /// no marked `String`, no word list, and the token lists and matcher rows
    /// of `scratch` reused from one value to the next. Why: highlighting a
    /// page's titles is about a third of building its response.
    package func writeResult(_ value: String, _ scratch: HighlightScratch, into out: inout [UInt8]) {
        var copy = value
        copy.withUTF8 { writeResult(utf8: $0, scratch, into: &out) }
    }

    /// ``writeResult(_:_:into:)`` of the text whose UTF-8 is `bytes` (valid
    /// UTF-8): what the response writer gives for a value it holds as JSON
    /// text with no escapes, whose inside is those bytes (parsing the text
    /// into a string only to read its bytes again would cost a sixth of a
    /// hit's highlight).
    package func writeResult(utf8 bytes: UnsafeBufferPointer<UInt8>, _ scratch: HighlightScratch, into out: inout [UInt8]) {
        fill(utf8: bytes, fast: true, scratch)
        let m = scratch.matches
        Self.writeEntry(
            fully: fullyHighlighted(m), level: level(m.matched),
            words: words.indices.lazy.filter { m.matched[$0] }.map { words[$0] }, into: &out
        ) { out in
            var at = 0
            for r in m.ranges {
                JSONWriter.writeEscaped(UnsafeBufferPointer(rebasing: bytes[at..<r.lowerBound]), into: &out)
                out += scratch.preTag
                JSONWriter.writeEscaped(UnsafeBufferPointer(rebasing: bytes[r]), into: &out)
                out += scratch.postTag
                at = r.upperBound
            }
            JSONWriter.writeEscaped(UnsafeBufferPointer(rebasing: bytes[at..<bytes.count]), into: &out)
        }
    }

    /// One `_highlightResult` entry in ``JSONWriter``'s form (keys sorted:
    /// `fullyHighlighted`, `matchLevel`, `matchedWords`, `value`); `value`
    /// writes the inside of the value's string, escaped.
    package static func writeEntry(
        fully: Bool, level: MatchLevel, words: some Sequence<String>, into out: inout [UInt8],
        value: (inout [UInt8]) -> Void
    ) {
        out += #"{"fullyHighlighted":"#.utf8
        out += (fully ? "true" : "false").utf8
        out += #","matchLevel":""#.utf8
        out += level.rawValue.utf8
        out += #"","matchedWords":["#.utf8
        var first = true
        for w in words {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.writeString(w, into: &out)
        }
        out += #"],"value":""#.utf8
        value(&out)
        out += #""}"#.utf8
    }

    /// Whether every whole token has a marked token at its position (itself
    /// or one of its camel-case parts). A token's parts follow it at its
    /// position, so positions come in runs: one pass, no sets.
    func everyPositionMarked(_ m: Matches) -> Bool {
        var next = 0  // the next marked token, in m.marked
        var k = 0
        while k < m.tokens.count {
            let position = m.tokens[k].position
            var marked = false
            while k < m.tokens.count, m.tokens[k].position == position {
                if next < m.marked.count, m.marked[next] == k { marked = true; next += 1 }
                k += 1
            }
            if !marked { return false }
        }
        return true
    }

    /// About `count` words of `value` around its first match (its start when
    /// nothing matches), with the ellipsis where text was cut.
    package func snippet(_ value: String, words count: Int) -> (value: String, matchLevel: String) {
        snippet(value, words: count, fast: true)
    }

    func snippet(_ value: String, words count: Int, fast: Bool) -> (value: String, matchLevel: String) {
        let m = matches(value, fast: fast)
        // Whole tokens only: camel-case parts share their token's position.
        var whole: [(range: Range<Int>, position: Int)] = []
        for t in m.tokens where whole.last?.position != t.position { whole.append(t) }
        guard !whole.isEmpty else { return (value, MatchLevel.none.rawValue) }
        let firstMatch = m.marked.first.map { m.tokens[$0].position } ?? 0
        var start = max(0, firstMatch - count / 2)
        let end = min(whole.count, start + count)
        start = max(0, end - count)
        let lo = start == 0 ? 0 : whole[start].range.lowerBound
        let hi = end == whole.count ? value.utf8.count : whole[end - 1].range.upperBound
        var out = mark(value, m.ranges, in: lo..<hi)
        if start > 0 { out = ellipsis + out }
        if end < whole.count { out += ellipsis }
        return (out, level(m.matched).rawValue)
    }
}

/// The buffers one response's highlights reuse from value to value (see
/// ``Highlighter/writeResult(_:_:into:)``), and its tags as JSON string
/// content (escaped at their first use: ``Highlighter/matches(_:fast:)``
/// makes a scratch for one value and writes no tags). One per response, on
/// one thread.
package final class HighlightScratch {
    var matches = Highlighter.Matches(matched: [])
    var ranges: [Range<Int>] = []
    var lowered: [UInt8] = []
    var rows: [Int] = []
    private let tags: (pre: String, post: String)
    private(set) lazy var preTag: [UInt8] = Self.escaped(tags.pre)
    private(set) lazy var postTag: [UInt8] = Self.escaped(tags.post)

    package init(_ highlighter: Highlighter) {
        tags = (highlighter.preTag, highlighter.postTag)
    }

    static func escaped(_ s: String) -> [UInt8] {
        var s = s, out: [UInt8] = []
        s.withUTF8 { JSONWriter.writeEscaped($0, into: &out) }
        return out
    }
}
