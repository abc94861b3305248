import Foundation
import Items
import QueryPlan
import SQLite

/// An FTS5 term: a whole folded token, or a prefix of one.
struct WordTerm: Hashable {
    var text: String
    var prefix: Bool

    var fts: String {
        let quoted = "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        return prefix ? quoted + " *" : quoted
    }
}

extension ShardStore {
    /// Candidates for one text comparison.
    ///
    /// - `w`/`t` comparisons: every pattern word that does not start with a
    ///   wildcard must be in the value's words → an AND of word-index terms
    ///   (a word ending in `*` becomes a prefix term, served by the 2- and
    ///   3-character prefix indexes).
    /// - Whole-value comparisons that start with literal text: a range over
    ///   the folded `key` column (exact values and prefixes alike).
    /// - Otherwise the pattern's literal runs of 3 or more characters must be
    ///   substrings → trigram terms over short values, plus a scan of the
    ///   long values (not trigram-indexed) that `TextMatcher` checks at once.
    /// - Nothing to look up (`*x*` with one letter) → scan every value of the
    ///   attributes, checked at once.
    ///
    /// Numbers are never in the text indexes; for a named attribute its numeric
    /// values are checked as canonical text, through the `(name, num)` index.
    func textCandidates(_ leaf: TextLeaf, _ context: QueryContext) throws -> Candidates {
        let nameIDs = leaf.names.ids
        guard !nameIDs.isEmpty else { return .nothing }
        var ids: [Int64] = []
        var exact = true

        if case .one(let name?) = leaf.names {
            let s = try db.prepare("SELECT item, num FROM attrs WHERE name = ? AND num IS NOT NULL AND kind = 1")
            try s.bind(name, at: 0)
            while try s.step() {
                try context.checkCancelled()
                if leaf.matcher.matches(canonicalText(s.double(at: 1))) { ids.append(s.int64(at: 0)) }
            }
        }

        let options = leaf.test.options
        let pattern = leaf.test.pattern
        let wordBased = options.contains(.wordBased) || options.contains(.tokenized)
        if wordBased {
            let terms = Self.wordTerms(pattern, camelCase: options.contains(.wordBased))
            if !terms.isEmpty, let found = try wordIndexCandidates(terms, names: leaf.names, context) {
                ids += found
                exact = false
            } else {
                let literals = pattern.literals.flatMap { Words.split($0, camelCase: false).map(String.init) }
                exact = try substringCandidates(leaf, literals: literals, into: &ids, context) && exact
            }
        } else if pattern.parts.count == 1, case .literal(let whole) = pattern.parts[0],
                  options.isSuperset(of: [.caseInsensitive, .diacriticInsensitive]),
                  Fold.fold(whole).count <= Fold.prefixCharacters {
            // A whole value compared with `cd` (a facet filter): the folded key
            // is the comparison itself. A key is the fold of the value's first
            // 64 characters, so a key equal to a folded pattern of at most 32
            // characters comes from a value of at most 64 characters (folding
            // never halves a text's length), keyed whole: no check is owed,
            // and the (name, key) index answers alone.
            let s = try db.prepare("SELECT item FROM attrs WHERE name = ? AND key = ?")
            for name in nameIDs {
                try s.bind(name, at: 0)
                try s.bind(Fold.fold(whole), at: 1)
                while try s.step() { ids.append(s.int64(at: 0)) }
                try s.reset()
            }
        } else if case .literal(let first)? = pattern.parts.first {
            let prefix = String(Fold.fold(first).prefix(Fold.prefixCharacters))
            let s = try db.prepare("SELECT item FROM attrs WHERE name = ? AND key >= ? AND key < ?")
            for name in nameIDs {
                try s.bind(name, at: 0)
                try s.bind(prefix, at: 1)
                try s.bind(prefix + "\u{10FFFF}", at: 2)
                while try s.step() { ids.append(s.int64(at: 0)) }
                try s.reset()
            }
            exact = false
        } else {
            exact = try substringCandidates(leaf, literals: pattern.literals, into: &ids, context) && exact
        }
        return Candidates(ids: IDs.sortedUnique(ids), exact: exact)
    }

    /// The word-index terms a `w`/`t` pattern implies: its words, folded,
    /// except those that begin with a wildcard.
    static func wordTerms(_ pattern: TextPattern, camelCase: Bool) -> [WordTerm] {
        var terms: [WordTerm] = []
        let parts = pattern.parts
        for (i, part) in parts.enumerated() {
            guard case .literal(let literal) = part else { continue }
            let starBefore = i > 0 && parts[i - 1] == .anyRun
            let starAfter = i + 1 < parts.count && parts[i + 1] == .anyRun
            for token in Words.split(literal, camelCase: camelCase) {
                if starBefore, token.startIndex == literal.startIndex { continue }
                let folded = Fold.fold(String(token))
                guard !folded.isEmpty else { continue }
                terms.append(WordTerm(text: folded, prefix: starAfter && token.endIndex == literal.endIndex))
            }
        }
        var seen = Set<WordTerm>()
        return terms.filter { seen.insert($0).inserted }
    }

    /// Items whose word-index row holds every term — in the attribute's
    /// column when one is named; nil when FTS5 cannot take the terms (a
    /// character its tokenizer splits on but `Words` does not), and the
    /// caller must scan.
    func wordIndexCandidates(_ terms: [WordTerm], names: NameSet, _ context: QueryContext) throws -> [Int64]? {
        let scoring = context.scores != nil
        let weights = Layout.wordWeights.map { String($0) }.joined(separator: ", ")
        let sql = scoring ? "SELECT rowid, bm25(words, \(weights)) FROM words WHERE words MATCH ?"
            : "SELECT rowid FROM words WHERE words MATCH ?"
        var match = "(" + terms.map(\.fts).joined(separator: " AND ") + ")"
        if case .one(let id?) = names {
            match = "{c\(Layout.wordColumn(self.names[id] ?? ""))} : " + match
        }
        let s = try db.prepare(sql)
        try s.bind(match, at: 0)
        var ids: [Int64] = []
        do {
            while try s.step() {
                let item = s.int64(at: 0)
                ids.append(item)
                // bm25() is negative, better matches more so.
                if scoring { context.scores![item, default: 0] += -s.double(at: 1) }
            }
        } catch {
            if error.message.contains("phrase queries are not supported") { return nil }
            throw error
        }
        return ids
    }

    /// Substring candidates: the trigram index for short values and a checked
    /// scan of long ones; a checked scan of everything when no literal is long
    /// enough for trigrams. Returns whether what it added is exact.
    func substringCandidates(_ leaf: TextLeaf, literals: [String], into ids: inout [Int64], _ context: QueryContext) throws -> Bool {
        let nameIDs = leaf.names.ids
        var grams: [String] = []
        var seen = Set<String>()
        for literal in literals {
            let scalars = Array(Fold.fold(literal).unicodeScalars)
            guard scalars.count >= 3 else { continue }
            for i in 0...(scalars.count - 3) {
                var g = ""
                g.unicodeScalars.append(contentsOf: scalars[i..<(i + 3)])
                if seen.insert(g).inserted { grams.append(g) }
            }
        }
        let scan: Statement
        if grams.isEmpty {
            scan = try db.prepare("SELECT item, text FROM attrs WHERE name = ? AND key IS NOT NULL")
        } else {
            // A dozen trigrams narrow enough; more only add posting lists to merge.
            if grams.count > 12 {
                let step = Double(grams.count - 1) / 11
                grams = (0..<12).map { grams[Int((Double($0) * step).rounded())] }
            }
            let s = try db.prepare("SELECT rowid FROM grams WHERE grams MATCH ?")
            try s.bind(grams.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: " AND "), at: 0)
            while try s.step() { ids.append(s.int64(at: 0)) }
            scan = try db.prepare("SELECT item, text FROM attrs WHERE name = ? AND kind = 5")
        }
        for name in nameIDs {
            try scan.bind(name, at: 0)
            while try scan.step() {
                try context.checkCancelled()
                if leaf.matcher.matches(scan.string(at: 1) ?? "") { ids.append(scan.int64(at: 0)) }
            }
            try scan.reset()
        }
        return grams.isEmpty
    }
}
