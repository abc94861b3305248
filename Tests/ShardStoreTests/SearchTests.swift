import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// Parameter search in one shard: matching, typos, ranking, facets.
@Suite struct SearchTests {
    func store() throws -> (TempDir, ShardStore) {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item(
                "deb:vim", domain: "org.debian.editors",
                #"{"title": "vim", "displayName": "Vi IMproved - enhanced vi editor", "contentDescription": "Vim is an almost compatible version of the UNIX editor Vi.", "section": "editors", "installedSize": 3000}"#
            ),
            item(
                "deb:vim-gtk3", domain: "org.debian.editors",
                #"{"title": "vim-gtk3", "displayName": "Vi IMproved - enhanced vi editor - with GTK3 GUI", "contentDescription": "Vim is an almost compatible version of the UNIX editor Vi.", "section": "editors", "installedSize": 4000}"#
            ),
            item(
                "deb:neovim", domain: "org.debian.editors",
                #"{"title": "neovim", "displayName": "heavily refactored vim fork", "contentDescription": "Neovim is a fork of Vim focused on extensibility.", "section": "editors", "installedSize": 2000}"#
            ),
            item(
                "deb:python3", domain: "org.debian.python",
                #"{"title": "python3", "displayName": "interactive high-level object-oriented language", "contentDescription": "Python, the high-level, interactive object oriented language.", "section": "python", "installedSize": 100}"#
            ),
            item(
                "deb:inkscape", domain: "org.debian.graphics",
                #"{"title": "inkscape", "displayName": "vector-based drawing program", "contentDescription": "Inkscape is an illustration editor which has everything needed to create professional-quality computer art.", "section": "graphics", "installedSize": 9000}"#
            ),
        ])
        let reader = try openStore(dir, mode: .readOnly)
        return (dir, reader)
    }

    func ids(_ r: ShardSearchResult) -> [String] { r.hits.map(\.uniqueIdentifier) }

    @Test func exactNameFirstThenOtherMatches() throws {
        let (_, s) = try store()
        let r = try s.search(SearchPlan(words: ["vim"], window: 10))
        #expect(ids(r).first == "deb:vim")
        #expect(Set(ids(r)) == ["deb:vim", "deb:vim-gtk3", "deb:neovim"])
        #expect(r.nbHits == 3)
        #expect(r.hits[0].rank.exactAttribute == 0)
    }

    /// Algolia's defaults: one typo from 4 letters, two from 8
    /// (`minWordSizefor1Typo`, `minWordSizefor2Typos`).
    @Test func oneTypoFromFourLettersTwoFromEight() throws {
        let (_, s) = try store()
        // "inkscpe": a deletion; "inksacpe": a transposition.
        #expect(ids(try s.search(SearchPlan(words: ["inkscpe"], prefixLast: false))) == ["deb:inkscape"])
        #expect(ids(try s.search(SearchPlan(words: ["inksacpe"], prefixLast: false))) == ["deb:inkscape"])
        #expect(try s.search(SearchPlan(words: ["inkscpe"], prefixLast: false)).hits[0].rank.typos == 1)
        // "fork" misspelt: four letters allow one; three allow none.
        #expect(ids(try s.search(SearchPlan(words: ["forj"], prefixLast: false))) == ["deb:neovim"])
        #expect(ids(try s.search(SearchPlan(words: ["vum"], prefixLast: false))).isEmpty)
        // Eight letters allow two; seven only one.
        let two = try s.search(SearchPlan(words: ["inkscxpx"], prefixLast: false))
        #expect(ids(two) == ["deb:inkscape"] && two.hits.first?.rank.typos == 2)
        #expect(ids(try s.search(SearchPlan(words: ["pxthnn3"], prefixLast: false))).isEmpty)
        // The thresholds are parameters.
        let older = TypoPolicy(minWordSizeForOneTypo: 5, minWordSizeForTwoTypos: 9)
        #expect(ids(try s.search(SearchPlan(words: ["forj"], prefixLast: false, typos: older))).isEmpty)
        #expect(ids(try s.search(SearchPlan(words: ["inkscxpx"], prefixLast: false, typos: older))).isEmpty)
        // Typo tolerance off.
        #expect(ids(try s.search(SearchPlan(words: ["inkscpe"], prefixLast: false, typos: TypoPolicy(enabled: false)))).isEmpty)
    }

    @Test func lastWordIsAPrefix() throws {
        let (_, s) = try store()
        #expect(ids(try s.search(SearchPlan(words: ["inks"]))) == ["deb:inkscape"])
        #expect(ids(try s.search(SearchPlan(words: ["inks"], prefixLast: false))).isEmpty)
        // Every word must match.
        #expect(ids(try s.search(SearchPlan(words: ["vim", "python"]))).isEmpty)
        // "editors" (neovim's section) is "editor" with one typo, and "vim" starts with "vi".
        #expect(Set(ids(try s.search(SearchPlan(words: ["editor", "vi"])))) == ["deb:vim", "deb:vim-gtk3", "deb:neovim"])
        #expect(Set(ids(try s.search(SearchPlan(words: ["editor", "vi"], typos: TypoPolicy(enabled: false))))) == ["deb:vim", "deb:vim-gtk3"])
    }

    @Test func aWordThatStartsTheAttributeRanksFirst() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        try w.put([
            item("deb:cxref-emacs", #"{"title": "cxref-emacs"}"#),
            item("deb:emacs", #"{"title": "emacs"}"#),
            item("deb:elpa-emacs", #"{"title": "elpa-emacs"}"#),
        ])
        // One typo: no exact value, so where the word stands decides.
        for plan in [SearchPlan(words: ["emcas"], window: 3), SearchPlan(words: ["emac"], window: 3)] {
            let r = try w.search(plan)
            #expect(ids(r).first == "deb:emacs", "\(plan.words)")
            #expect(r.hits.first?.rank.attribute == SearchRank.attribute(0, atStart: true))
            #expect(r.hits.last?.rank.attribute == SearchRank.attribute(0, atStart: false))
        }
        // Two words, through the text: "emacs" starts its title.
        let two = try w.search(SearchPlan(words: ["emcas", "emcas"], prefixLast: false, window: 3))
        #expect(ids(two).first == "deb:emacs")
    }

    @Test func proximityRanksAdjacentWordsFirst() throws {
        let (_, s) = try store()
        // "vector-based drawing": one word between.
        let r = try s.search(SearchPlan(words: ["vector", "drawing"], window: 5))
        #expect(ids(r) == ["deb:inkscape"])
        #expect(r.hits[0].rank.proximity == 2)
        // Adjacent in both, so the title-like attribute decides; "vi editor" is
        // adjacent in vim's and vim-gtk3's display names, apart in inkscape's text.
        let adjacent = try s.search(SearchPlan(words: ["vi", "editor"], prefixLast: false, typos: TypoPolicy(enabled: false), window: 5))
        #expect(Set(ids(adjacent).prefix(2)) == ["deb:vim", "deb:vim-gtk3"])
        #expect(adjacent.hits[0].rank.proximity == 1)
    }

    @Test func facetsCountTheWholeMatchingSet() throws {
        let (_, s) = try store()
        let r = try s.search(SearchPlan(words: ["vim"], facets: ["section", "installedSize"], window: 1))
        #expect(r.hits.count == 1)
        #expect(r.facets["section"] == ["editors": 3])
        #expect(r.facetStats["installedSize"] == FacetStats(min: 2000, max: 4000, sum: 9000, count: 3))
    }

    @Test func disjunctiveFacetIgnoresItsOwnRefinement() throws {
        let (_, s) = try store()
        let refinement = QueryPlan.Predicate.text(
            TextTest(attribute: .named("section"), pattern: TextPattern(literal: "python"), options: [.caseInsensitive]))
        let r = try s.search(SearchPlan(filter: refinement, facets: ["section"], disjunctiveFilters: ["section": .all]))
        #expect(r.nbHits == 1)
        #expect(r.facets["section"] == ["editors": 3, "python": 1, "graphics": 1])
        let conjunctive = try s.search(SearchPlan(filter: refinement, facets: ["section"]))
        #expect(conjunctive.facets["section"] == ["python": 1])
    }

    @Test func anAliasCountsAFacetOverItsOwnFilterBesideTheConjunctiveCounts() throws {
        let (_, s) = try store()
        let refinement = QueryPlan.Predicate.text(
            TextTest(attribute: .named("section"), pattern: TextPattern(literal: "python"), options: [.caseInsensitive]))
        var plan = SearchPlan(
            filter: refinement, facets: ["section", "own", SearchPlan.disjunctiveSetSizes], disjunctiveFilters: ["own": .all])
        plan.facetAliases = ["own": "section"]
        let r = try s.search(plan)
        #expect(r.facets["section"] == ["python": 1])
        #expect(r.facets["own"] == ["editors": 3, "python": 1, "graphics": 1])
        // The alias's filter matches all five items: its request's nbHits.
        #expect(r.facets[SearchPlan.disjunctiveSetSizes] == ["own": 5])
        // The plan travels to query workers as JSON, aliases included.
        #expect(try SearchPlan(json: plan.json) == plan)
    }

    @Test func vocabularyFindsTermsWithinTheEditDistance() {
        let v = Vocabulary()
        for t in ["inkscape", "inkscape2", "inkspace", "ink", "pyhton", "python", "python3"].sorted() { v.append(t, docs: 1) }
        let found = Set(v.fuzzy("inkscape", maxTypos: 1).map { v.term($0.term) })
        #expect(found == ["inkscape", "inkscape2"])
        let two = Set(v.fuzzy("inkscape", maxTypos: 2).map { v.term($0.term) })
        #expect(two == ["inkscape", "inkscape2", "inkspace"])
        #expect(Set(v.fuzzy("python", maxTypos: 1).map { v.term($0.term) }) == ["python", "pyhton", "python3"])
        #expect(v.range(prefix: "pyt").map { v.term($0) } == ["python", "python3"])
    }

    /// Prefix lookups bisect the bucket of the prefix's first two bytes: one-
    /// byte terms, bytes past ASCII (0xFF is the last bucket), prefixes of no
    /// term and the empty prefix give what a scan of every term gives.
    @Test func prefixRangesAgreeWithAScanOnRandomTerms() {
        var rng = SplitMix64(state: 11)
        let alphabet: [UInt8] = [0x01, 0x61, 0x62, 0x7F, 0xC3, 0xFF]
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] } }
        let terms = Set((0..<300).map { _ in bytes(1 + Int(rng.next() % 4)) }).sorted { $0.lexicographicallyPrecedes($1) }
        let v = Vocabulary()
        for t in terms { v.append(bytes: t, docs: 1) }
        for n in 0...3 {
            for _ in 0..<60 {
                let p = bytes(n)
                let got = v.range(prefix: String(decoding: p, as: UTF8.self))
                let valid = String(validating: p, as: UTF8.self) != nil
                guard valid else { continue }  // the lookup takes text: only prefixes that are UTF-8
                let want = terms.indices.filter { terms[$0].starts(with: p) }
                #expect(Array(got) == want, "prefix \(p)")
                if want.isEmpty {
                    // Where the prefix would be: after every smaller term.
                    #expect(got.lowerBound == terms.firstIndex { !$0.lexicographicallyPrecedes(p) } ?? terms.count, "prefix \(p)")
                }
            }
        }
    }

    /// Words of 3 to 11 letters: two typos from 8 take ``Vocabulary/fuzzyTwo(_:)``'s
    /// three-way cut, one from 4 ``Vocabulary/fuzzyOne(_:)``'s, shorter ones the walk.
    @Test func fuzzyAgreesWithTheDistanceOnRandomTerms() {
        var rng = SplitMix64(state: 7)
        let letters = Array("abcde".utf8)
        func word() -> String {
            String(decoding: (0..<(3 + Int(rng.next() % 9))).map { _ in letters[Int(rng.next() % 5)] }, as: UTF8.self)
        }
        // Terms near each other, so that two typos find several: each seed
        // with one or two random edits (substituted, inserted, deleted or
        // swapped letters, anywhere).
        let seeds = (0..<60).map { _ in word() }
        func edited(_ s: String) -> String {
            var b = Array(s.utf8)
            for _ in 0..<(1 + Int(rng.next() % 2)) where b.count > 2 {
                let at = Int(rng.next() % UInt64(b.count))
                switch rng.next() % 4 {
                case 0: b[at] = letters[Int(rng.next() % 5)]
                case 1: b.insert(letters[Int(rng.next() % 5)], at: at)
                case 2: b.remove(at: at)
                default: if at + 1 < b.count { b.swapAt(at, at + 1) }
                }
            }
            return String(decoding: b, as: UTF8.self)
        }
        // And, for long seeds, every kind of edit in the first third with a
        // changed letter in the last: the terms only the edited first
        // thirds' probes find (the first and last thirds both differ).
        func thirds(_ s: String) -> [String] {
            let b = Array(s.utf8), m = b.count
            guard m >= 8 else { return [] }
            let h1 = m / 3, h2 = m - max(3, m / 3)
            return (0..<4).map { kind in
                var t = b
                let last = h2 + Int(rng.next() % UInt64(m - h2))
                t[last] = t[last] == letters[0] ? letters[1] : letters[0]
                let at = Int(rng.next() % UInt64(h1))
                switch kind {
                case 0: t[at] = t[at] == letters[2] ? letters[3] : letters[2]
                case 1: t.insert(letters[Int(rng.next() % 5)], at: at)
                case 2: t.remove(at: at)
                default: if at + 1 < h1 { t.swapAt(at, at + 1) } else { t.insert(letters[4], at: at) }
                }
                return String(decoding: t, as: UTF8.self)
            }
        }
        let near = seeds.flatMap { s in [s] + (0..<6).map { _ in edited(s) } + thirds(s) }
        let terms = Set((0..<400).map { _ in word() } + near).sorted()
        let v = Vocabulary()
        for t in terms { v.append(t, docs: 1) }
        var longFound = 0
        for i in 0..<400 {
            let q = i % 2 == 0 ? word() : seeds[i % seeds.count]
            for k in 1...2 {
                let got = Set(v.fuzzy(q, maxTypos: k).map { v.term($0.term) })
                let want = Set(terms.filter { Typos.distance(Array(q.utf8), Array($0.utf8), max: k) != nil })
                #expect(got == want, "\(q) within \(k)")
                if k == 2, q.utf8.count >= 8, want.count > 1 { longFound += 1 }
            }
        }
        #expect(longFound > 50, "\(longFound)")
    }

    /// The items that expire are read once per change of the data, but
    /// compared with the clock at every search: an item whose time passes
    /// between two searches, the data unchanged, is gone from the second;
    /// another connection's write of an expired item is seen at once.
    @Test func expiriesFollowTheClockAndTheData() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        let soon = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        try writer.put([item("soon", expires: soon, #"{"title": "news soon"}"#), item("stays", #"{"title": "news stays"}"#)])
        let reader = try openStore(dir, mode: .readOnly)
        let plan = SearchPlan(words: ["news"], window: 10)
        #expect(Set(ids(try reader.search(plan))) == ["soon", "stays"])
        try writer.put([
            item("old", expires: "2001-01-01T00:00:00Z", #"{"title": "news old"}"#),
            item("later", expires: "2999-01-01T00:00:00Z", #"{"title": "news later"}"#),
        ])
        #expect(Set(ids(try reader.search(plan))) == ["soon", "stays", "later"])
        Thread.sleep(forTimeInterval: 2.2)
        let r = try reader.search(plan)
        #expect(Set(ids(r)) == ["stays", "later"])
        #expect(r.nbHits == 2)
    }

    /// The default custom ranking's entity priorities are read once per
    /// change of the data, and again after the connection's own write.
    @Test func entityPrioritiesFollowTheirChanges() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([item("a", #"{"title": "corner shop"}"#), item("b", #"{"title": "corner shop"}"#)])
        #expect(try s.associate(uniqueIdentifier: "b", with: EntityAssociation(type: "Shop", id: "2", priority: 4)))
        let plan = SearchPlan(words: ["corner", "shop"], window: 10)
        #expect(ids(try s.search(plan)) == ["b", "a"])
        #expect(try s.associate(uniqueIdentifier: "a", with: EntityAssociation(type: "Shop", id: "1", priority: 9)))
        #expect(ids(try s.search(plan)) == ["a", "b"])
    }
}

/// The byte scanner that ranking uses agrees with the definition: the
/// search tokens (camel-case parts included) and `WordMatch`.
@Suite struct SearchWordMatcherTests {
    @Test func theASCIIScanAgreesWithTheDefinition() {
        var rng = SplitMix64(state: 23)
        let pieces = [
            "vim", "Vim", "editor", "Editors", "edtior", "MyWindowClass", "window", "NSWindow", "python3", "pyhton",
            "-", " ", "  ", ".", "::", "x", "Wind", "windo", "ab1c", "ABC", "aBc", "3D", "e",
        ]
        let words = ["vim", "editor", "window", "python3", "wind", "abc", "e", "edit"]
        for _ in 0..<3000 {
            let value = (0..<(Int(rng.next() % 7))).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }
                .joined(separator: rng.next() % 2 == 0 ? " " : "")
            let query = (0..<(1 + Int(rng.next() % 3))).map { _ in words[Int(rng.next() % UInt64(words.count))] }
            let prefixLast = rng.next() % 2 == 0
            let policy = TypoPolicy(enabled: rng.next() % 4 != 0)
            let matcher = SearchWordMatcher(words: query, prefixLast: prefixLast, policy: policy)
            var fast = Set<[Int]>()
            let whole = matcher.scan(value) { fast.insert([$0, $1]) }
            var slow = Set<[Int]>()
            for token in SearchTokens.tokens(value) {
                for (w, word) in query.enumerated() {
                    let isLast = prefixLast && w == query.count - 1
                    if WordMatch.of(word: word, token: token.folded, isLast: isLast, policy: policy) != nil { slow.insert([w, token.position]) }
                }
            }
            #expect(fast == slow, "\(query) in \(value)")
            #expect(whole == (SearchTokens.queryWords(value) == query), "\(query) is \(value)")
        }
    }

    /// With phrase alternatives (``WordAlternative/phrase``): the scan
    /// reports a phrase's word at its first and last positions where its
    /// words are whole tokens (or camel-case parts) at consecutive
    /// positions, ASCII or not, and a value is the whole query when its
    /// tokens are the words or their exact alternatives, phrases included.
    @Test func phrasesAgreeWithTheDefinition() {
        var rng = SplitMix64(state: 29)
        let pieces = ["new", "New", "york", "York", "NewYork", "big", "apple", "Yörk", "nouvelle", "-", " ", ", ", "x", "newYork"]
        let words = ["ny", "big", "apple", "x", "york"]
        let phrases = [["new", "york"], ["big", "apple"], ["nouvelle", "york"], ["york", "new", "york"], ["x", "x"]]
        var found = 0, wholes = 0
        for _ in 0..<4000 {
            let value = (0..<(Int(rng.next() % 7))).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }
                .joined(separator: rng.next() % 3 == 0 ? "" : " ")
            let query = (0..<(1 + Int(rng.next() % 3))).map { _ in words[Int(rng.next() % UInt64(words.count))] }
            let alternatives = query.map { _ in
                (0..<Int(rng.next() % 3)).map { _ in
                    WordAlternative(phrase: phrases[Int(rng.next() % UInt64(phrases.count))], exact: rng.next() % 3 != 0)
                }
            }
            let matcher = SearchWordMatcher(words: query, prefixLast: false, policy: TypoPolicy(), alternatives: alternatives)
            var fast = Set<[Int]>()
            let whole = matcher.scan(value) { fast.insert([$0, $1]) }
            // The definition: tokens by position, each phrase tried at every start.
            let tokens = SearchTokens.tokens(value)
            var slow = Set<[Int]>()
            for token in tokens {
                for (w, word) in query.enumerated() where WordMatch.of(word: word, token: token.folded, isLast: false, policy: TypoPolicy()) != nil {
                    slow.insert([w, token.position])
                }
            }
            let positions = (tokens.map(\.position).max() ?? -1) + 1
            for (w, list) in alternatives.enumerated() {
                for a in list where a.isPhrase {
                    for start in 0..<max(0, positions - a.phrase.count + 1) {
                        let at = a.phrase.indices.allSatisfy { j in tokens.contains { $0.position == start + j && $0.folded == a.phrase[j] } }
                        if at { slow.formUnion([[w, start], [w, start + a.phrase.count - 1]]) }
                    }
                }
            }
            #expect(fast == slow, "\(query) \(alternatives) in \(value)")
            found += slow.isEmpty ? 0 : 1
            // Whole: some way of cutting the value's words into the query's,
            // a word as itself or one exact phrase, a run of words sharing
            // one exact phrase as that phrase once.
            let valueWords = SearchTokens.queryWords(value)
            func cut(_ i: Int, _ j: Int) -> Bool {
                if i == query.count { return j == valueWords.count }
                if j < valueWords.count, valueWords[j] == query[i], cut(i + 1, j + 1) { return true }
                for a in alternatives[i] where a.exact && Array(valueWords.dropFirst(j).prefix(a.phrase.count)) == a.phrase {
                    var k = i + 1
                    if cut(k, j + a.phrase.count) { return true }
                    while k < query.count, alternatives[k].contains(where: { $0.exact && $0.phrase == a.phrase }) {
                        k += 1
                        if cut(k, j + a.phrase.count) { return true }
                    }
                }
                return false
            }
            let expected = cut(0, 0)
            #expect(whole == expected, "\(query) \(alternatives) is \(value)")
            wholes += expected ? 1 : 0
        }
        #expect(found > 400 && wholes > 20, "\(found) \(wholes)")
    }
}
