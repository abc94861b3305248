import Foundation
import QueryPlan

/// A parameter search's word lookups: for each query word, the items that
/// hold it exactly, as a prefix or misspelt, from the process's
/// ``PostingIndex`` while it is current (see ``PostingSearch``), else from
/// FTS5, with the shard's ``Vocabulary`` giving the misspelt forms.
extension SearchRun {
    /// The items holding one query word, by how they hold it.
    struct WordPostings {
        /// Items holding a form of the word with 0, 1, 2 typos (an item may
        /// be in several: its typos are the fewest).
        var byTypos: [IDBits] = [IDBits(), IDBits(), IDBits()]
        /// Items holding the word itself (not only a prefix or a misspelling).
        var exact = IDBits()
        /// The FTS5 terms of every form, by typos, for column-filtered lookups
        /// (only where FTS5 answers: see ``termsByTypos``).
        var formsByTypos: [[String]] = [[], [], []]
        /// The same forms as ``PostingIndex`` terms, by typos, where the index
        /// answers for them (nil: FTS5 does).
        var termsByTypos: [[Int]?] = [nil, nil, nil]
        /// Items holding any form.
        var all = IDBits()

        var memoryBytes: Int { byTypos.reduce(exact.memoryBytes + all.memoryBytes) { $0 + $1.memoryBytes } }
    }

    /// A query word's lookups (``lookUpWordPostings(_:isLast:)``), kept per
    /// connection while the posting index they were made with is current
    /// (its terms give the typo forms, ``typoVocabulary()``): a facet
    /// refinement, another page, or the next letter typed after a word sends
    /// the same words again. With the index current they depend on nothing
    /// else than the word, whether it is a prefix, its typos and the
    /// searched columns (the key). The typo forms are kept already
    /// (``ShardStore/typoForms(_:maxTypos:in:)``); what this adds is the
    /// posting unions (`limelight-bench store`'s `refinements` kind
    /// exercises it).
    func wordPostings(_ word: String, isLast: Bool, alternatives: [WordAlternative] = []) throws -> WordPostings {
        guard let index = postingSearch?.index else { return try lookUpWordPostings(word, isLast: isLast, alternatives: alternatives) }
        let allowed = plan.typos.allowed(for: word)
        let cache = store.searchCache
        if cache.wordPostingsIndex !== index {
            cache.wordPostings = [:]
            cache.wordPostingsIndex = index
        }
        var key = "\(isLast && plan.prefixLast ? "p" : "w")\(allowed) \(columnMask.map { String($0) } ?? "*") \(word)"
        for a in alternatives { key += (a.exact ? " =" : " ~") + "\(a.typos)" + (a.isPhrase ? "\"" + a.word + "\"" : a.word) }
        // A phrase's items are verified on the searchable attributes' text.
        if alternatives.contains(where: \.isPhrase) { key += " in " + searchable.map(String.init).joined(separator: ",") }
        if let known = cache.wordPostings[key] {
            cache.wordPostingsReused += 1
            return known
        }
        let p = try lookUpWordPostings(word, isLast: isLast, alternatives: alternatives)
        let bytes = p.memoryBytes
        if cache.wordPostings.count >= SearchCache.maxWordPostings || cache.wordPostingsBytes + bytes > SearchCache.maxWordPostingsBytes {
            cache.wordPostings = [:]
            cache.wordPostingsBytes = 0
        }
        if bytes <= SearchCache.maxWordPostingsBytes / 4 {
            cache.wordPostings[key] = p
            cache.wordPostingsBytes += bytes
        }
        return p
    }

    /// Where a word's misspelt forms are looked up: the terms of the
    /// ``PostingIndex`` while it is current (the exact vocabulary of its
    /// lists, and the one the ``ForwardIndex`` is aligned with, so the
    /// forward index reuses the lookup), else the shard's ``Vocabulary``.
    func typoVocabulary() throws -> Vocabulary {
        try postingSearch?.index.terms ?? store.vocabulary()
    }

    /// `alternatives`: other words the query word matches as whole tokens
    /// (``WordAlternative``), held at no typo, and in ``WordPostings/exact``
    /// when they count as exact.
    func lookUpWordPostings(_ word: String, isLast: Bool, alternatives: [WordAlternative] = []) throws -> WordPostings {
        var p = WordPostings()
        let exactForm = Self.quote(word)
        p.formsByTypos[0] = [exactForm]
        let prefix = isLast && plan.prefixLast
        if prefix { p.formsByTypos[0].append(exactForm + " *") }
        if let search = postingSearch, PostingSearch.isPlain(word) {
            let exact = search.exact(word)
            p.exact = search.bits(exact, columns: columnMask)
            // The prefix's terms include the word itself.
            let zero = prefix ? search.prefixed(word) : exact
            p.termsByTypos[0] = zero
            p.byTypos[0] = prefix ? search.bits(zero, columns: columnMask) : p.exact
        } else {
            let exact = try ftsIDs(columnFilter + exactForm)
            p.exact = IDBits(exact)
            p.byTypos[0] = prefix ? IDBits(IDs.union(exact, try ftsIDs(columnFilter + exactForm + " *"))) : p.exact
        }
        if !alternatives.isEmpty { try addAlternatives(alternatives.filter { $0.typos == 0 }, to: &p) }
        let allowed = plan.typos.allowed(for: word)
        if allowed > 0 {
            let vocabulary = try typoVocabulary()
            var found = store.typoForms(word, maxTypos: allowed, in: vocabulary).filter { $0.typos > 0 }
            if isLast, plan.prefixLast {
                // Terms that are already prefix matches count as no typo.
                let wordBytes = Array(word.utf8)
                found = found.filter { f in !vocabulary.withTerm(f.term) { $0.starts(with: wordBytes) } }
            }
            if found.count > ShardStore.maxTypoTerms {
                found.sort { ($0.typos, -vocabulary.docs[$0.term]) < ($1.typos, -vocabulary.docs[$1.term]) }
                found = Array(found.prefix(ShardStore.maxTypoTerms))
            }
            for t in 1...allowed {
                let level = found.filter { $0.typos == t }
                guard !level.isEmpty else { continue }
                if let search = postingSearch, vocabulary === search.index.terms,
                    level.allSatisfy({ f in vocabulary.withTerm(f.term, PostingSearch.isPlain) })
                {
                    // The forms are the index's own terms: their lists at
                    // once, with no text made of them (FTS5 is not asked).
                    let held = level.map(\.term)
                    p.termsByTypos[t] = held
                    p.byTypos[t] = search.bits(held, columns: columnMask)
                    continue
                }
                let terms = level.map { vocabulary.term($0.term) }
                let forms = terms.map(Self.quote)
                p.formsByTypos[t] = forms
                if let search = postingSearch, terms.allSatisfy(PostingSearch.isPlain) {
                    let held = terms.flatMap(search.exact)
                    p.termsByTypos[t] = held
                    p.byTypos[t] = search.bits(held, columns: columnMask)
                } else {
                    p.byTypos[t] = IDBits(try ftsIDs(columnFilter + "(" + forms.joined(separator: " OR ") + ")"))
                }
            }
        }
        for a in alternatives where a.typos > 0 { try addCorrection(a, to: &p) }
        p.all = IDBits.union(p.byTypos)
        return p
    }

    /// The items holding an alternative of the word, added at no typo (and
    /// as exact where it counts so): from the index when it answers for the
    /// word and every alternative, else from FTS5 (the forms of no typo then
    /// come from FTS5 too, so both stay one set).
    func addAlternatives(_ alternatives: [WordAlternative], to p: inout WordPostings) throws {
        guard !alternatives.isEmpty else { return }
        let phrases = alternatives.filter(\.isPhrase)
        let alternatives = alternatives.filter { !$0.isPhrase }
        for phrase in phrases {
            let bits = IDBits(try phraseItems(phrase))
            p.byTypos[0] = p.byTypos[0].union(bits)
            if phrase.exact { p.exact = p.exact.union(bits) }
        }
        guard !alternatives.isEmpty else { return }
        p.formsByTypos[0] += alternatives.map { Self.quote($0.word) }
        if let search = postingSearch, p.termsByTypos[0] != nil, alternatives.allSatisfy({ PostingSearch.isPlain($0.word) }) {
            for a in alternatives {
                let terms = search.exact(a.word)
                p.termsByTypos[0]! += terms
                let bits = search.bits(terms, columns: columnMask)
                p.byTypos[0] = p.byTypos[0].union(bits)
                if a.exact { p.exact = p.exact.union(bits) }
            }
            return
        }
        p.termsByTypos[0] = nil
        for a in alternatives {
            let bits = IDBits(try ftsIDs(columnFilter + Self.quote(a.word)))
            p.byTypos[0] = p.byTypos[0].union(bits)
            if a.exact { p.exact = p.exact.union(bits) }
        }
    }

    /// The items holding an alternative that counts as typos (an
    /// alternative correction), added at its level of typos (never exact),
    /// with its term where the one-word attribute lookups find that level's
    /// forms: among the level's index terms while they are the index's,
    /// else among its FTS5 forms (the index terms then turned into forms).
    func addCorrection(_ a: WordAlternative, to p: inout WordPostings) throws {
        let t = a.typos
        if a.isPhrase {
            p.byTypos[t] = p.byTypos[t].union(IDBits(try phraseItems(a)))
            return
        }
        if let search = postingSearch, PostingSearch.isPlain(a.word), p.termsByTypos[t] != nil || p.formsByTypos[t].isEmpty {
            let terms = search.exact(a.word)
            p.termsByTypos[t] = (p.termsByTypos[t] ?? []) + terms
            p.byTypos[t] = p.byTypos[t].union(search.bits(terms, columns: columnMask))
            return
        }
        if let held = p.termsByTypos[t], let search = postingSearch {
            // The level's forms as FTS5 text from here on.
            p.formsByTypos[t] = held.map { Self.quote(search.index.terms.term($0)) }
            p.termsByTypos[t] = nil
        }
        p.formsByTypos[t].append(Self.quote(a.word))
        p.byTypos[t] = p.byTypos[t].union(IDBits(try ftsIDs(columnFilter + Self.quote(a.word))))
    }

    /// The items where a phrase alternative occurs (``WordAlternative/phrase``):
    /// those holding each of its words (from the index when it answers for
    /// them, else FTS5), each confirmed on its searchable attributes' text
    /// by the matcher's own phrase rule (FTS5's positions put a token's
    /// camel-case parts after the value, and run on from one value to the
    /// next of a column, so its phrase queries are not this rule).
    func phraseItems(_ phrase: WordAlternative) throws -> [Int64] {
        var candidates: IDBits?
        for word in phrase.phrase {
            let bits: IDBits
            if let search = postingSearch, PostingSearch.isPlain(word) {
                bits = search.bits(search.exact(word), columns: columnMask)
            } else {
                bits = IDBits(try ftsIDs(columnFilter + Self.quote(word)))
            }
            candidates = candidates.map { $0.intersection(bits) } ?? bits
            if candidates?.isEmpty == true { return [] }
        }
        guard let ids = candidates?.ids, let i = matcher.phrases.firstIndex(where: { $0.tokens == phrase.phrase.map { Array($0.utf8) } })
        else { return [] }
        let s = try store.db.prepare("SELECT name, coalesce(text, key) FROM attrs WHERE item = ? AND kind IN (0, 5)")
        var out: [Int64] = []
        for id in ids {
            try context.checkCancelled()
            try s.bind(id, at: 0)
            while try s.step() {
                guard rankOf[s.int64(at: 0)] != nil, let text = s.string(at: 1) else { continue }
                if matcher.containsPhrase(i, in: text) {
                    out.append(id)
                    break
                }
            }
            try s.reset()
        }
        return out
    }
}
