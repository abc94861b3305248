import Items
import QueryPlan

/// When a word-index match is the answer on its own, with no `TextMatcher`
/// check of the item's values.
///
/// `** == "word"cdw` — the search-box query — is streamed from the word index,
/// and confirming each match on the item's values was most of its time
/// (every text value loaded, a long description split into words). For one
/// ASCII word, or word prefix, compared with `c` and `w`, a match is exact
/// when the index token it hit is one of the item's words as `TextMatcher`
/// splits them (camel-case parts included, folded). The index holds other
/// tokens too: camel-case tokens whole ("libFoo", which `t` needs, while `w`
/// sees only "lib" and "Foo"), and whatever folding and FTS5's tokenizer make
/// of text that is not ASCII ("Café" is the token "cafe", which `cw` without
/// `d` must not match). Each item records those other tokens
/// (`items.wordcheck`), and a match is checked only when the word could have
/// come from one of them.
///
/// Why the record is enough: the word is ASCII letters and digits, so an index
/// token it hits (equal to it, or starting with it) begins with a run of ASCII
/// letters and digits that FTS5's tokenizer (`unicode61`, which treats ASCII
/// as `Words` does) cut out of the indexed text — so the run is one of that
/// text's maximal ASCII runs. The record is every such run that is not also
/// one of the matcher's ASCII words; a run that is one of them matches in
/// fact. A randomized test compares streamed answers with checked ones.
enum WordCheck {
    /// What rows written before the column existed hold: check every match.
    static let always = "*"

    /// Gathers an item's `items.wordcheck` value while its word-index text is
    /// made (``ShardStore/ftsTexts(_:)``), so nothing is split or folded twice.
    ///
    /// The value is the item's index runs that are not its words (see
    /// ``ReferenceBuilder``, the definition). For an ASCII text with camel
    /// case, its runs are its tokens and their camel-case parts, and its words
    /// are those parts and the tokens without camel case: so the only runs
    /// that can fail to be words are its camel-case tokens, lowercased. Those
    /// few are kept, and the text's words are looked at only at the end, for
    /// the lengths some kept run has, instead of a set of every word of every
    /// such text (a long description with one "PyQt" in it). The reference
    /// builder takes 6% of indexing's CPU; a randomized
    /// test holds the two to the same values.
    struct Builder {
        /// Camel-case tokens of ASCII texts, lowercased.
        private var camelTokens = Set<Substring>()
        /// ASCII texts with camel case, whose words are checked at the end.
        private var camelTexts: [String] = []
        /// Texts that are not ASCII go the reference way.
        private var general = ReferenceBuilder()

        /// One searchable text value and the text the word index got for it.
        mutating func add(_ text: String, indexed: String) {
            if !Fold.isASCII(text) {
                general.add(text, indexed: indexed)
                return
            }
            guard hasCamelCase(text) else { return }
            var copy = text
            copy.withUTF8 { bytes in
                var start = -1
                var camel = false
                var prevLower = false
                for i in 0...bytes.count {
                    let b: UInt8 = i < bytes.count ? bytes[i] : 32
                    let lower = b >= 97 && b <= 122, upper = b >= 65 && b <= 90
                    if lower || upper || (b >= 48 && b <= 57) {
                        if start < 0 { start = i; camel = false }
                        if prevLower, upper { camel = true }
                        prevLower = lower
                    } else {
                        if start >= 0, camel {
                            let token = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                            camelTokens.insert(Substring(token.lowercased()))
                        }
                        start = -1
                        prevLower = false
                    }
                }
            }
            camelTexts.append(copy)
        }

        /// Nil when no match needs a check (most items), else the tokens that
        /// need one, lowercased, separated by spaces.
        var value: String? {
            var others = general.others.union(camelTokens.subtracting(general.words))
            guard !others.isEmpty else { return nil }
            let lengths = Set(others.map(\.utf8.count))
            for text in camelTexts {
                for word in Words.split(text, camelCase: true) where lengths.contains(word.utf8.count) {
                    others.remove(Substring(word.lowercased()))
                }
                if others.isEmpty { return nil }
            }
            return others.map(String.init).sorted().joined(separator: " ")
        }
    }

    /// The definition of ``Builder``, a set of runs and one of words per
    /// item: the value is every maximal ASCII run of the item's index texts
    /// that is not one of its ASCII words, over the texts that are not ASCII
    /// or have camel case (the index tokens of the others are their words).
    struct ReferenceBuilder {
        private(set) var words = Set<Substring>()
        private(set) var runs = Set<Substring>()

        mutating func add(_ text: String, indexed: String) {
            // All ASCII without camel case: its index tokens are its words.
            guard !Fold.isASCII(text) || hasCamelCase(text) else { return }
            runs.formUnion(asciiRuns(indexed.lowercased()))
            for word in Words.split(text, camelCase: true) where Fold.isASCII(String(word)) {
                words.insert(Substring(word.lowercased()))
            }
        }

        var others: Set<Substring> { runs.subtracting(words) }

        var value: String? {
            let others = others
            return others.isEmpty ? nil : others.map(String.init).sorted().joined(separator: " ")
        }
    }

    /// Maximal runs of ASCII letters and digits.
    static func asciiRuns(_ s: String) -> [Substring] {
        var out: [Substring] = []
        var start: String.Index?
        let utf8 = s.utf8
        var i = utf8.startIndex
        while i < utf8.endIndex {
            let b = utf8[i]
            let alnum = (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122)
            if alnum, start == nil { start = i }
            if !alnum, let st = start { out.append(s[st..<i]); start = nil }
            i = utf8.index(after: i)
        }
        if let st = start { out.append(s[st..<s.endIndex]) }
        return out
    }

    /// An a–z letter right before an A–Z one: a camel-case word boundary.
    static func hasCamelCase(_ s: some StringProtocol) -> Bool {
        var prevLower = false
        for b in s.utf8 {
            if prevLower, b >= 65, b <= 90 { return true }
            prevLower = b >= 97 && b <= 122
        }
        return false
    }

    /// The one word-index term a comparison over every text attribute comes
    /// down to, when matches of it on plain items are exact: the options
    /// include `c` and `w`, and the pattern is one ASCII word of letters and
    /// digits with no camel-case boundary, optionally followed by `*`. Nil
    /// otherwise, and when some declared text attribute is left out of `*`
    /// (its words are in the index all the same).
    static func trustedTerm(_ test: TextTest, schema: AttributeSchema) -> WordTerm? {
        guard test.options.contains(.wordBased), test.options.contains(.caseInsensitive) else { return nil }
        let parts = test.pattern.parts
        guard case .literal(let word)? = parts.first else { return nil }
        let prefix: Bool
        switch parts.count {
        case 1: prefix = false
        case 2 where parts[1] == .anyRun: prefix = true
        default: return nil
        }
        let isWord =
            !word.isEmpty
            && word.utf8.allSatisfy { b in
                (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122)
            }
        guard isWord, !hasCamelCase(word) else { return nil }
        let hidden = schema.custom.values.contains { $0.type == .text && $0.searchable && !$0.searchableByDefault }
        guard !hidden else { return nil }
        return WordTerm(text: word.lowercased(), prefix: prefix)
    }

    /// Whether a match of `term` on an item with this `wordcheck` still needs
    /// `TextMatcher`.
    static func needsCheck(_ stored: String?, term: WordTerm) -> Bool {
        guard let stored else { return false }
        if stored == always { return true }
        return stored.split(separator: " ").contains { token in
            term.prefix ? token.hasPrefix(term.text) : token == term.text
        }
    }
}
