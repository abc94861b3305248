import Foundation
import QueryPlan

/// Marks the query's words in attribute values, for `_highlightResult` and
/// `_snippetResult`. A token is marked when it matches a query word by the
/// rule the shards matched with (``WordMatch``): the same tokenizer, the same
/// typos, the last word as a prefix.
public struct Highlighter: Sendable {
    public var words: [String]
    public var prefixLast: Bool
    public var typos: TypoPolicy
    public var preTag: String
    public var postTag: String
    public var ellipsis: String

    public init(plan: SearchPlan, preTag: String = "<em>", postTag: String = "</em>", ellipsis: String = "…") {
        words = plan.words
        prefixLast = plan.prefixLast
        typos = plan.typos
        self.preTag = preTag
        self.postTag = postTag
        self.ellipsis = ellipsis
    }

    /// Algolia's `matchLevel`: no word, some words, or every word matched.
    public enum MatchLevel: String, Sendable { case none, partial, full }

    public struct Result: Sendable, Hashable {
        public var value: String
        public var matchLevel: String
        public var matchedWords: [String]
        public var fullyHighlighted: Bool
    }

    /// The token ranges of `value` that match, merged, and which words matched.
    func matches(_ value: String) -> (ranges: [Range<String.Index>], matched: Set<Int>, tokens: [SearchTokens.Token], marked: Set<Int>) {
        let tokens = SearchTokens.tokens(value)
        var ranges: [Range<String.Index>] = []
        var matched = Set<Int>()
        var marked = Set<Int>()
        for (k, token) in tokens.enumerated() {
            for (w, word) in words.enumerated() {
                let isLast = prefixLast && w == words.count - 1
                if WordMatch.of(word: word, token: token.folded, isLast: isLast, policy: typos) != nil {
                    matched.insert(w)
                    marked.insert(k)
                    ranges.append(token.range)
                }
            }
        }
        // A whole token and its camel-case part may both match: keep the union.
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var merged: [Range<String.Index>] = []
        for r in ranges {
            if let last = merged.last, r.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        return (merged, matched, tokens, marked)
    }

    func level(_ matched: Set<Int>) -> MatchLevel {
        matched.isEmpty ? .none : matched.count == words.count ? .full : .partial
    }

    func mark(_ value: String, _ ranges: [Range<String.Index>], in span: Range<String.Index>) -> String {
        var out = ""
        var at = span.lowerBound
        for r in ranges where r.lowerBound >= span.lowerBound && r.upperBound <= span.upperBound {
            out += value[at..<r.lowerBound]
            out += preTag + value[r] + postTag
            at = r.upperBound
        }
        out += value[at..<span.upperBound]
        return out
    }

    public func highlight(_ value: String) -> Result {
        let m = matches(value)
        let wholeTokens = Set(m.tokens.map(\.position))
        let markedPositions = Set(m.marked.map { m.tokens[$0].position })
        return Result(value: mark(value, m.ranges, in: value.startIndex..<value.endIndex),
                      matchLevel: level(m.matched).rawValue,
                      matchedWords: m.matched.sorted().map { words[$0] },
                      fullyHighlighted: !wholeTokens.isEmpty && wholeTokens == markedPositions && m.ranges.count > 0
                        && m.ranges.allSatisfy { r in m.tokens.contains { $0.range == r } })
    }

    /// About `count` words of `value` around its first match (its start when
    /// nothing matches), with the ellipsis where text was cut.
    public func snippet(_ value: String, words count: Int) -> (value: String, matchLevel: String) {
        let m = matches(value)
        // Whole tokens only: camel-case parts share their token's position.
        var whole: [SearchTokens.Token] = []
        for t in m.tokens where whole.last?.position != t.position { whole.append(t) }
        guard !whole.isEmpty else { return (value, MatchLevel.none.rawValue) }
        let firstMatch = m.marked.min().map { m.tokens[$0].position } ?? 0
        var start = max(0, firstMatch - count / 2)
        let end = min(whole.count, start + count)
        start = max(0, end - count)
        let lo = start == 0 ? value.startIndex : whole[start].range.lowerBound
        let hi = end == whole.count ? value.endIndex : whole[end - 1].range.upperBound
        var out = mark(value, m.ranges, in: lo..<hi)
        if start > 0 { out = ellipsis + out }
        if end < whole.count { out += ellipsis }
        return (out, level(m.matched).rawValue)
    }
}
