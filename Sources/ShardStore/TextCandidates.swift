import Foundation
import Items
import QueryPlan
import SQLite

/// An FTS5 term: a whole folded token, or a prefix of one.
struct WordTerm: Hashable {
    var text: String
    var prefix: Bool

    var fts: String {
        let quoted = ShardStore.ftsQuote(text)
        return prefix ? quoted + " *" : quoted
    }
}

extension ShardStore {
    /// An FTS5 string: the term in double quotes, a quote inside doubled.
    /// Byte by byte, not `replacingOccurrences`, which goes through
    /// `NSString` on Linux and shows in a word query's CPU profile.
    static func ftsQuote(_ term: String) -> String {
        var out = "\""
        out.reserveCapacity(term.utf8.count + 2)
        if term.utf8.contains(UInt8(ascii: "\"")) {
            for c in term.unicodeScalars {
                out.unicodeScalars.append(c)
                if c == "\"" { out.unicodeScalars.append(c) }
            }
        } else {
            out += term
        }
        out += "\""
        return out
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
    /// - Otherwise (substring patterns) the word-index terms that contain the
    ///   pattern's runs of letters and digits, found in the vocabulary's
    ///   trigrams (``substringCandidates(_:literals:into:_:)``).
    /// - Nothing selective to look up (`*x*` with one letter) → scan every
    ///   value of the attributes, checked at once.
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
            Fold.fold(whole).count <= Fold.prefixCharacters
        {
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
        let sql =
            scoring
            ? "SELECT rowid, bm25(words, \(weights)) FROM words WHERE words MATCH ?"
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

    /// Substring candidates from the word index: each run of ASCII letters
    /// and digits in the folded literals lies inside one token of a matching
    /// value (see ``TermGrams``), so the items that hold, for each chosen run,
    /// one of the vocabulary's terms containing it, are a superset of the
    /// matches (the `TextMatcher` check decides). This serves short and long
    /// values alike, and patterns with spaces or punctuation too: each of
    /// their runs narrows. When no run is selective (`*x*`, or a pattern of
    /// punctuation or of letters folding to no ASCII), every text value of
    /// the attributes is scanned and checked at once. Returns whether what it
    /// added is exact.
    func substringCandidates(_ leaf: TextLeaf, literals: [String], into ids: inout [Int64], _ context: QueryContext) throws -> Bool {
        let nameIDs = leaf.names.ids
        let (lookup, watermark) = try substringLookup(Self.runs(literals), names: leaf.names)
        switch lookup {
        case .nothing:
            try appendWritten(since: watermark, to: &ids, context)
            return false
        case .match(let match):
            let s = try db.prepare("SELECT rowid FROM words WHERE words MATCH ? AND rowid <= ?")
            try s.bind(match, at: 0)
            try s.bind(watermark, at: 1)
            while try s.step() {
                try context.checkCancelled()
                ids.append(s.int64(at: 0))
            }
            try appendWritten(since: watermark, to: &ids, context)
            return false
        case .scan: break
        }
        let scan = try db.prepare("SELECT item, coalesce(text, key) FROM attrs WHERE name = ? AND key IS NOT NULL")
        for name in nameIDs {
            try scan.bind(name, at: 0)
            while try scan.step() {
                try context.checkCancelled()
                if leaf.matcher.matches(scan.string(at: 1) ?? "") { ids.append(scan.int64(at: 0)) }
            }
            try scan.reset()
        }
        return true
    }

    /// Every item written since the vocabulary's watermark, in id order: the
    /// part of a substring pattern's candidates a stale vocabulary cannot
    /// vouch for (see ``substringIndex()``).
    func appendWritten(since watermark: Int64, to ids: inout [Int64], _ context: QueryContext) throws {
        let s = try db.prepare("SELECT id FROM items WHERE id > ? ORDER BY id")
        try s.bind(watermark, at: 0)
        while try s.step() {
            try context.checkCancelled()
            ids.append(s.int64(at: 0))
        }
    }

    /// Terms a run may expand to before a scan is cheaper (an OR of a few
    /// thousand terms still beats scanning every title, not every
    /// description).
    static let maxRunTerms = 2_000

    /// The distinct runs of ASCII letters and digits of folded literals.
    static func runs(_ literals: [String]) -> [[UInt8]] {
        var runs: [[UInt8]] = []
        for literal in literals {
            for run in TermGrams.runs(Fold.fold(literal)) where !runs.contains(run) { runs.append(run) }
        }
        return runs
    }

    /// How the word index serves a substring pattern's runs.
    enum SubstringLookup {
        /// No term contains some run: no item up to the watermark matches.
        case nothing
        /// The FTS5 query whose rows up to the watermark are the candidates there.
        case match(String)
        /// No run is selective enough: scan the values instead.
        case scan
    }

    /// The FTS5 query for items holding, for each of the (up to three) most
    /// selective runs, a term that contains it — in the attribute's column
    /// when one is named — with the watermark of the vocabulary it was made
    /// from: it finds the matches among items up to there, and every item
    /// above must be checked as well (see ``substringIndex()``).
    func substringLookup(_ runs: [[UInt8]], names: NameSet) throws -> (SubstringLookup, watermark: Int64) {
        guard !runs.isEmpty else { return (.scan, 0) }
        let index = try substringIndex()
        let grams = index.grams
        let watermark = index.watermark
        let vocabulary = grams.vocabulary
        var column: Int?
        if case .one(let id?) = names { column = Layout.wordColumn(self.names[id] ?? "") }
        // Each run as FTS5 terms, with the postings it would read.
        var expansions: [(fts: [String], postings: Int)] = []
        for run in runs {
            var terms = grams.terms(containing: run)
            if let column { terms.removeAll { grams.columns[$0] & (1 << UInt32(column)) == 0 } }
            for t in grams.truncated where !terms.contains(t) { terms.append(t) }
            terms.sort()
            if terms.isEmpty { return (.nothing, watermark) }
            guard terms.count <= Self.maxRunTerms else { continue }
            var fts: [String] = []
            var postings = 0
            var k = 0
            while k < terms.count {
                let t = terms[k]
                postings += Int(vocabulary.docs[t])
                // Every term that starts like this one up to the run contains
                // the run: one prefix term stands for all of them.
                let head = grams.endOfFirstOccurrence(run, in: t).flatMap { String(vocabulary.term(t).utf8.prefix($0)) }
                let range = head.map { vocabulary.range(prefix: $0) } ?? t..<(t + 1)
                var j = k + 1
                while j < terms.count, terms[j] < range.upperBound { j += 1 }
                if let head, j - k > 1 {
                    fts.append(WordTerm(text: head, prefix: true).fts)
                    for i in (k + 1)..<j { postings += Int(vocabulary.docs[terms[i]]) }
                    k = j
                } else {
                    fts.append(WordTerm(text: vocabulary.term(t), prefix: false).fts)
                    k += 1
                }
            }
            expansions.append((fts, postings))
        }
        guard !expansions.isEmpty else { return (.scan, watermark) }
        expansions.sort { $0.postings < $1.postings }
        let chosen = expansions.prefix(3)
        var match = "(" + chosen.map { "(" + $0.fts.joined(separator: " OR ") + ")" }.joined(separator: " AND ") + ")"
        if let column { match = "{c\(column)} : " + match }
        return (.match(match), watermark)
    }
}
