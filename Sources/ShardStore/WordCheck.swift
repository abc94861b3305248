import Items
import QueryPlan

/// When a word-index match is the answer on its own, with no `TextMatcher`
/// check of the item's values.
///
/// `** == "word"cdw` — the search-box query — is streamed from the word index,
/// and confirming each match on the item's values was most of its time
/// (every text value loaded, a long description split into words). For one
/// word, or one word prefix, compared with `c`, the index and `TextMatcher`
/// give the same answer on every item whose text is all ASCII, with one
/// exception: the index holds a camel-case token whole ("libFoo", which `t`
/// needs) besides its parts ("lib", "Foo"), while `w` sees only the parts, so
/// `"libfoo"cw` matches "libFoo" in the index and not in fact. Each item
/// therefore records its camel-case tokens (`items.wordcheck`), and a match is
/// checked only when the word could have come from one of them — or when the
/// item has text that is not ASCII, where Unicode folding and word boundaries
/// are FTS5's tokenizer's and might part from ``Words``.
///
/// Why ASCII is safe: FTS5's `unicode61` tokenizer and ``Words`` both make
/// words of runs of letters and digits; `c` folds A–Z on both sides; `d`
/// changes nothing in ASCII; and one word cannot straddle two values, so the
/// shared word-index column and list elements make no difference. A randomized
/// test compares the streamed answers with the checked ones.
enum WordCheck {
    /// The `wordcheck` of an item with text that is not ASCII.
    static let always = "*"

    /// The `items.wordcheck` value for an item's searchable text values: nil
    /// (never check), the folded camel-case tokens separated by spaces, or
    /// ``always``.
    static func value(for texts: some Sequence<String>) -> String? {
        var camel = Set<String>()
        for text in texts {
            guard Fold.isASCII(text) else { return always }
            guard hasCamelCase(text) else { continue }
            for token in Words.split(text, camelCase: false) where hasCamelCase(token) {
                camel.insert(token.lowercased())
            }
        }
        return camel.isEmpty ? nil : camel.sorted().joined(separator: " ")
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
        let isWord = !word.isEmpty && word.utf8.allSatisfy { b in
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
