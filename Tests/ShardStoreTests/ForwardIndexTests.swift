import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// The ``ForwardIndex``: proximity, attribute and whole-value exactness
/// worked out from its token ids must be the text scan's, item by item and
/// search by search, on text that is not ASCII, camel case, punctuated,
/// spread over several values, and with misspelt and cut query words; and
/// it is used only while it is the current data's.
@Suite struct ForwardIndexTests {
    /// Words of every kind the tokenizer treats differently: accented and
    /// not, other scripts, a ligature, a Kelvin sign, combining marks on
    /// their own (a token that folds to nothing), camel case, digits,
    /// punctuation inside a word.
    static let words = [
        "pa", "pal", "palm", "panda", "pandas", "parking", "parkings", "pathfinder", "pathfinders",
        "python", "python3", "table", "tables", "café", "cafe", "naïve", "naive", "Straße", "strasse",
        "日本語", "ZeroMQ", "zeromq", "libFoo", "XMLHttpRequest", "iPhone", "x86_64", "data-base",
        "data.base", "editor", "editors", "Éditeur", "re\u{301}sume\u{301}", "resume", "ﬁle", "file",
        "\u{212A}elvin", "kelvin", "ǅemal", "İstanbul", "σοφία", "e\u{301}", "\u{301}\u{301}", "--",
        "a,b;c", "Vi", "vim", "vim-gtk3", "MyWindowClass", "window", "class",
    ]
    static let joiners = [" ", " ", " ", "  ", ", ", "-", ".", "/", "", " — "]

    static func text(_ rng: inout SplitMix64, _ most: Int, asciiOnly: Bool = false) -> String {
        let n = Int(rng.next() % UInt64(most + 1))
        let words = asciiOnly ? Self.words.filter { $0.allSatisfy(\.isASCII) } : Self.words
        var out = ""
        for k in 0..<n {
            var w = words[Int(rng.next() % UInt64(words.count))]
            if rng.next() % 5 == 0 { w = w.prefix(1).uppercased() + w.dropFirst() }
            if k > 0 { out += joiners[Int(rng.next() % UInt64(joiners.count))] }
            out += w
        }
        return out
    }

    static func randomItems(_ n: Int, seed: UInt64, prefix: String = "i", asciiOnly: Bool = false) -> [JSONValue] {
        var rng = SplitMix64(state: seed)
        return (0..<n).map { i in
            func text(_ most: Int) -> String { Self.text(&rng, most, asciiOnly: asciiOnly) }
            let keywords = (0..<Int(rng.next() % 4)).map { _ in "\"" + text(3) + "\"" }.joined(separator: ", ")
            return item(
                "\(prefix)\(i)", domain: ["@alpha", "@beta"][Int(rng.next() % 2)],
                #"{"title": "\#(text(3))", "displayName": "\#(text(5))", "contentDescription": "\#(text(12))", "keywords": [\#(keywords)], "section": "\#(text(2))", "size": \#(rng.next() % 100)}"#
            )
        }
    }

    /// A word of the list, misspelt, cut short or in capitals now and then.
    static func queryText(_ rng: inout SplitMix64) -> String {
        var w = Array(words[Int(rng.next() % UInt64(words.count))])
        switch rng.next() % 6 {
        case 0 where w.count > 4: w.remove(at: Int(rng.next() % UInt64(w.count)))
        case 1 where w.count > 4: let k = Int(rng.next() % UInt64(w.count - 1)); w.swapAt(k, k + 1)
        case 2 where w.count > 3: w = Array(w.prefix(2 + Int(rng.next() % UInt64(w.count - 2))))
        case 3: w.replaceSubrange(0..<1, with: Array(w[0].uppercased()))  // "ﬁ" is "FI"
        default: break
        }
        return String(w)
    }

    /// Plans of two to four words (folded as a request folds them); a third
    /// of them, when `values` are given, the words of one of them (so that
    /// whole values match).
    static func randomPlans(_ n: Int, seed: UInt64, values: [String] = []) -> [SearchPlan] {
        var rng = SplitMix64(state: seed)
        let attributeSets: [[String]] = [
            [], ["title"], ["contentDescription", "title"], ["keywords", "displayName"],
            ["section"], ["title", "section", "displayName", "keywords"],
        ]
        let policies = [TypoPolicy(), TypoPolicy(enabled: false), TypoPolicy(minWordSizeForOneTypo: 1, minWordSizeForTwoTypos: 3)]
        var plans: [SearchPlan] = []
        while plans.count < n {
            var typed = (0..<(2 + Int(rng.next() % 3))).map { _ in queryText(&rng) }.joined(separator: " ")
            if !values.isEmpty, rng.next() % 3 == 0 { typed = values[Int(rng.next() % UInt64(values.count))] }
            let words = SearchTokens.queryWords(typed)
            guard words.count >= 2 else { continue }
            var plan = SearchPlan(
                words: words, prefixLast: rng.next() % 3 != 0,
                typos: policies[Int(rng.next() % UInt64(policies.count))],
                searchableAttributes: attributeSets[Int(rng.next() % UInt64(attributeSets.count))],
                window: [1, 3, 10, 20, 200][Int(rng.next() % 5)])
            if rng.next() % 4 == 0 { plan.filter = .domain(["@beta"]) }
            if rng.next() % 4 == 0 { plan.facets = ["section"] }
            plans.append(plan)
        }
        return withAlternatives(plans, seed: seed)
    }

    /// Every third plan with alternatives for some of its words (synonyms,
    /// plurals: ``WordAlternative``), drawn from `words`' tokens, exact or
    /// not, ASCII and not, every sixth with phrases; from a generator of their own, so the plans are
    /// otherwise those drawn without them.
    static func withAlternatives(_ plans: [SearchPlan], seed: UInt64, words: [String] = Self.words) -> [SearchPlan] {
        var rng = SplitMix64(state: seed ^ 0xA1_7E)
        let tokens = Array(Set(words.flatMap(SearchTokens.queryWords)))
            .sorted()
        let phrases = words.map(SearchTokens.queryWords).filter { $0.count > 1 }
        return plans.enumerated().map { k, plan in
            guard k % 3 == 1 else { return plan }
            var p = plan
            p.alternatives = plan.words.map { _ in
                (0..<Int(rng.next() % 3)).map { _ in
                    // Now and then an alternative correction, counted as typos.
                    let typos = rng.next() % 5 == 0 ? 1 + Int(rng.next() % 2) : 0
                    return WordAlternative(tokens[Int(rng.next() % UInt64(tokens.count))], exact: typos == 0 && rng.next() % 4 != 0, typos: typos)
                }
            }
            // Every other such plan with a phrase for some word: the
            // tokens of one of `words` (met adjacent wherever it is), or
            // two tokens drawn apart (adjacent now and then).
            if k % 6 == 1 {
                for w in p.alternatives.indices where w == 0 || rng.next() % 2 == 0 {
                    let phrase =
                        rng.next() % 2 == 0 && !phrases.isEmpty
                        ? phrases[Int(rng.next() % UInt64(phrases.count))]
                        : (0..<2).map { _ in tokens[Int(rng.next() % UInt64(tokens.count))] }
                    p.alternatives[w].append(WordAlternative(phrase: phrase, exact: rng.next() % 3 != 0))
                }
            }
            return p
        }
    }

    static func store(_ dir: TempDir, seed: UInt64, count: Int = 300) throws -> ShardStore {
        let s = try openStore(dir)
        try s.put(randomItems(count, seed: seed))
        #expect(try s.delete(ids: ["i3", "i5", "i8"]) == 3)
        return s
    }

    /// Item by item, the forward index's numbers are the scan's, for every
    /// item of the shard (matching or not) and random plans.
    @Test func textMatchFromTheIndexIsTheScans() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 71)
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let index = try #require(try PostingIndexTests.held(s))
        let forward = try #require(index.forward)
        #expect(forward.termFolded.contains(true) && forward.termFolded.contains(false))
        #expect(forward.tokens.contains { $0 & 1 == 1 })  // camel-case parts
        let (ids, values) = try Self.idsAndValues(s)
        var kinds = AnswerKinds()
        try Self.forEachRun(s, index, seed: 73, values: values) { run, plan in
            #expect(run.forward === forward)
            for id in ids {
                let a = run.indexedTextMatch(id, forward)
                let b = try run.scannedTextMatch(id)
                #expect(
                    a?.proximity == b?.proximity && a?.attribute == b?.attribute && a?.exactAttribute == b?.exactAttribute,
                    "item \(id) \(plan.words) \(plan.searchableAttributes) \(plan.typos)")
                kinds.add(b)
            }
        }
        kinds.expectEveryKind(exact: 10)
    }

    /// Every item id of `s` and one it does not hold, and its text values
    /// sorted by text (name ids follow the order a JSON object's keys come
    /// out of a dictionary, which differs from process to process).
    static func idsAndValues(_ s: ShardStore) throws -> ([Int64], [String]) {
        (
            try s.db.prepare("SELECT id FROM items ORDER BY id").map { $0.int64(at: 0) } + [999_999],
            try s.db.prepare("SELECT coalesce(text, key) FROM attrs WHERE kind = 0").map { $0.string(at: 0) ?? "" }.sorted()
        )
    }

    /// Calls `body` with a run of each of 150 random plans (a third of them
    /// the words of one of `values`), each in a read transaction; but those
    /// with a phrase alternative, which use no forward index.
    static func forEachRun(
        _ s: ShardStore, _ index: PostingIndex, seed: UInt64, values: [String],
        _ body: (SearchRun, SearchPlan) throws -> Void
    ) throws {
        for plan in randomPlans(150, seed: seed, values: values) {
            try s.db.transaction(.deferred) {
                try s.reloadIfChanged()
                let run = try SearchRun(store: s, plan: plan, context: QueryContext(isCancelled: { false }, wantsScores: false), index: index)
                // A plan with a phrase alternative ranks by the text scan,
                // not the forward index (whose masks do not follow phrases).
                if plan.hasPhraseAlternatives {
                    #expect(run.forward == nil)
                    return
                }
                try body(run, plan)
            }
        }
    }

    /// The kinds of answer a comparison of text matches saw, so that it can
    /// say it saw every kind: matches, whole values, several proximities,
    /// matches at an attribute's start.
    struct AnswerKinds {
        var matches = 0, exact = 0, proximities: Set<Int> = [], starts = 0

        mutating func add(_ m: (proximity: Int, attribute: Int, exactAttribute: Int)?) {
            guard let m else { return }
            matches += 1
            proximities.insert(m.proximity)
            if m.exactAttribute != SearchRank.noExactAttribute { exact += 1 }
            if m.attribute % 2 == 0 { starts += 1 }
        }

        func expectEveryKind(exact least: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(
                matches > 400 && exact > least && proximities.count >= 5 && starts > 0,
                "\(matches) \(exact) \(proximities) \(starts)", sourceLocation: sourceLocation)
        }
    }

    /// Worked out for all candidates at once from the terms' occurrences
    /// (``TermOccurrences``), the numbers are the token loop's, item by
    /// item: on text of ASCII words only (which the occurrences describe)
    /// and on text with folded terms (whose items keep the loop).
    @Test func occurrencesGiveTheTokenLoopsNumbers() throws {
        for asciiOnly in [true, false] {
            let dir = TempDir()
            let s = try openStore(dir)
            try s.put(Self.randomItems(300, seed: 91, asciiOnly: asciiOnly))
            #expect(try s.delete(ids: ["i3", "i5", "i8"]) == 3)
            try s.buildSuggestionIndex()
            defer { PostingIndexes.shared.forget(path: s.path) }
            let index = try #require(try PostingIndexTests.held(s))
            let forward = try #require(index.forward)
            let described = (0..<forward.occurrences.items).filter { forward.occurrences.describes(Int64($0)) }.count
            #expect(asciiOnly ? described > 290 : described < 250, "\(described)")
            let (ids, values) = try Self.idsAndValues(s)
            var kinds = AnswerKinds()
            try Self.forEachRun(s, index, seed: 93, values: values) { run, plan in
                // All items, every other one (the lists galloped through),
                // and every 16th (common terms' lists then longer than twice
                // the candidates: binary searches in lockstep).
                for candidates in [
                    ids, ids.enumerated().filter { $0.offset % 2 == 1 }.map(\.element),
                    ids.enumerated().filter { $0.offset % 16 == 5 }.map(\.element),
                ] {
                    let all = run.indexedTextMatches(candidates, forward, always: true)
                    for (id, a) in zip(candidates, all) {
                        let b = run.indexedTextMatch(id, forward)
                        #expect(
                            a?.proximity == b?.proximity && a?.attribute == b?.attribute && a?.exactAttribute == b?.exactAttribute,
                            "item \(id) \(plan.words) \(plan.searchableAttributes) \(plan.typos): \(String(describing: a)) \(String(describing: b))")
                        kinds.add(b)
                    }
                }
            }
            kinds.expectEveryKind(exact: 4)
        }
    }

    /// Lockstep binary searches find, for every candidate, the first entry
    /// of its item or past it, as galloping does: candidates before, inside,
    /// between and past a list's items, lists of every length from one.
    @Test func lockstepSearchesFindWhatGallopingFinds() {
        var rng = SplitMix64(state: 97)
        for _ in 0..<300 {
            let length = 1 + Int(rng.next() % 200)
            var items = (0..<length).map { _ in UInt32(rng.next() % 400) }
            items.sort()
            let entries = items.enumerated().map { UInt64($1) << 32 | UInt64($0) }
            let padded = [UInt64(0)] + entries + [UInt64.max]  // a range inside a larger array
            let candidates = Array(Set((0..<(1 + Int(rng.next() % 60))).map { _ in UInt32(rng.next() % 420) })).sorted()
            var bases: [Int] = Array(repeating: 0, count: candidates.count)
            padded.withUnsafeBufferPointer { list in
                candidates.withUnsafeBufferPointer { keys in
                    SearchRun.lowerBounds(list, from: 1, to: 1 + length, keys, &bases)
                    for (c, key) in candidates.enumerated() {
                        #expect(bases[c] == SearchRun.gallop(list, from: 1, to: 1 + length, atLeast: UInt64(key) << 32), "\(key) in \(items)")
                    }
                }
            }
        }
    }

    /// A camel-case part that is a query word does not make its value the
    /// whole query ("fooBar baz" is not "foo baz"), from the occurrences as
    /// from the token loop; the value of those words alone is.
    @Test func camelCasePartsAreNotWholeWords() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("a", domain: "@alpha", #"{"title": "fooBar baz", "displayName": "foo bazQux"}"#),
            item("b", domain: "@alpha", #"{"title": "foo baz", "displayName": "other words"}"#),
            item("c", domain: "@alpha", #"{"title": "FooBaz", "displayName": "baz foo"}"#),
        ])
        let (described, all, loop) = try Self.occurrencesAndLoop(s, words: ["foo", "baz"])
        #expect(described.allSatisfy { $0 })
        #expect(all.map { $0?.exactAttribute } == loop.map { $0?.exactAttribute })
        // Only "b"'s title is the whole query.
        #expect(all.map { $0?.exactAttribute != SearchRank.noExactAttribute } == [false, true, false])
    }

    /// A text of thousands of words is described by its occurrences up to
    /// position 16,383 (Debian's longest description has 10,852 words and
    /// most queries match it), with the token loop's numbers: the query's
    /// words adjacent past position 4,096, and far apart before. Past the
    /// last position an item keeps the loop, and so does one of more than
    /// 512 values.
    @Test func longTextsAreDescribedUpToTheirLastPosition() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        func words(_ n: Int) -> String { (0..<n).map { "filler\($0 % 50)" }.joined(separator: " ") }
        let long = "alpha " + words(300) + " beta " + words(5_000) + " alpha beta " + words(20)
        let tooLong = words(16_400) + " alpha beta"
        let manyValues = (0..<600).map { "\"v\($0) alpha\"" }.joined(separator: ", ")
        try s.put([
            item("long", domain: "@alpha", #"{"title": "long", "contentDescription": "\#(long)"}"#),
            item("tooLong", domain: "@alpha", #"{"title": "too long", "contentDescription": "\#(tooLong)"}"#),
            item("many", domain: "@alpha", #"{"title": "beta", "keywords": [\#(manyValues)]}"#),
            item("short", domain: "@alpha", #"{"title": "alpha", "contentDescription": "beta"}"#),
        ])
        let (described, all, loop) = try Self.occurrencesAndLoop(s, words: ["alpha", "beta"])
        #expect(described == [true, false, false, true])
        #expect(all.map { $0?.proximity } == loop.map { $0?.proximity })
        #expect(all.map { $0?.attribute } == loop.map { $0?.attribute })
        #expect(all.map { $0?.exactAttribute } == loop.map { $0?.exactAttribute })
        // Adjacent past position 4,096 in the long texts; in two values of the others.
        #expect(all.map { $0?.proximity } == [1, 1, ProximityTracker.farthest, ProximityTracker.farthest])
    }

    /// For every item of `s` in id order (its index built here): whether
    /// the occurrences describe it, and a search's numbers for `words` (no
    /// typos, no prefix) from the occurrences and from the token loop.
    static func occurrencesAndLoop(
        _ s: ShardStore, words: [String]
    ) throws
        -> (
            described: [Bool], all: [(proximity: Int, attribute: Int, exactAttribute: Int)?],
            loop: [(proximity: Int, attribute: Int, exactAttribute: Int)?]
        )
    {
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let index = try #require(try PostingIndexTests.held(s))
        let forward = try #require(index.forward)
        let ids = try s.db.prepare("SELECT id FROM items ORDER BY id").map { $0.int64(at: 0) }
        let plan = SearchPlan(words: words, prefixLast: false, typos: TypoPolicy(enabled: false), window: 20)
        return try s.db.transaction(.deferred) {
            try s.reloadIfChanged()
            let run = try SearchRun(store: s, plan: plan, context: QueryContext(isCancelled: { false }, wantsScores: false), index: index)
            return (
                ids.map { forward.occurrences.describes($0) }, run.indexedTextMatches(ids, forward, always: true),
                ids.map { run.indexedTextMatch($0, forward) }
            )
        }
    }

    /// The masks a query begins with, found by lookups in the ASCII terms'
    /// vocabulary, are for every ASCII term what the matcher's own
    /// comparisons say (and folded terms are left to be decided when met).
    @Test func vocabularyLookupsDecideEveryASCIITermAsTheMatcher() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 79)
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let forward = try #require(try PostingIndexTests.held(s)?.forward)
        #expect(forward.asciiVocabulary.count == forward.termFolded.filter { !$0 }.count)
        // Typo forms by the forward index's own walk, and from the word
        // index's (the search's) mapped through the alignment plus the ASCII
        // terms FTS5 lacks: each cache keeps its forms, so one per way.
        // A second forward index is aligned with every other word-index term
        // only, so that half its ASCII terms are found in its extra ones.
        let own = ForwardTokenCache(), shared = ForwardTokenCache(), half = ForwardTokenCache()
        let terms = try #require(forward.wordTerms)
        let everyOther = Vocabulary()
        for i in stride(from: 0, to: terms.count, by: 2) { everyOther.append(bytes: terms.termBytes(i), docs: Int(terms.docs[i])) }
        let halved = try #require(try s.db.transaction(.deferred) { try ForwardIndex(db: s.db, wordTerms: everyOther) })
        for f in [forward, halved] {
            let aligned = f.asciiOfWordTerm.filter { $0 >= 0 }.count
            #expect(
                aligned > 40 && aligned + f.extraTerms.count == f.asciiVocabulary.count,
                "\(aligned) \(f.extraTerms.count) \(f.asciiVocabulary.count)")
        }
        #expect(halved.extraTerms.count > 40)
        var rows: [Int] = []
        var matched = 0, equal = 0, typos = 0, prefixes = 0
        // Plans of one word too (a single word's exact, prefix and typo
        // forms), and every policy, including typos on one-letter words.
        var plans = Self.randomPlans(200, seed: 89)
        var rng = SplitMix64(state: 91)
        for _ in 0..<100 {
            let words = SearchTokens.queryWords(Self.queryText(&rng))
            guard !words.isEmpty else { continue }
            plans.append(
                SearchPlan(
                    words: words, prefixLast: rng.next() % 2 == 0,
                    typos: [TypoPolicy(), TypoPolicy(minWordSizeForOneTypo: 1, minWordSizeForTwoTypos: 2)][Int(rng.next() % 2)]))
        }
        for plan in plans {
            let matcher = SearchWordMatcher(words: plan.words, prefixLast: plan.prefixLast, policy: plan.typos, alternatives: plan.alternatives)
            own.begin(forward, matcher)
            own.lookUp()
            shared.begin(forward, matcher)
            shared.lookUp(s)
            half.begin(halved, matcher)
            half.lookUp(s)
            #expect(shared.masks == own.masks && half.masks == own.masks, "\(plan.words) \(plan.prefixLast) \(plan.typos)")
            let cache = own
            for t in 0..<forward.termCount {
                if forward.termFolded[t] {
                    #expect(cache.masks[t] == 0)
                    continue
                }
                let want =
                    forward.withTerm(t) {
                        UInt32(matcher.matchesASCII($0, rows: &rows)) | UInt32(matcher.equalsASCII($0)) << ForwardTokenCache.equalsShift
                    } | ForwardTokenCache.known
                #expect(
                    cache.masks[t] == want,
                    "\(plan.words) \(plan.prefixLast) \(plan.typos) term \(forward.withTerm(t) { String(decoding: $0, as: UTF8.self) })")
                if want & ForwardTokenCache.matchBits != 0 {
                    matched += 1
                    let term = forward.withTerm(t) { Array($0) }
                    if !plan.words.contains(where: { Array($0.utf8) == term }) {
                        if plan.prefixLast, let last = plan.words.last, term.starts(with: Array(last.utf8)) { prefixes += 1 } else { typos += 1 }
                    }
                }
                if want >> ForwardTokenCache.equalsShift & ForwardTokenCache.matchBits != 0 { equal += 1 }
            }
        }
        // The comparison saw matches of every kind.
        #expect(matched > 300 && equal > 50 && typos > 50 && prefixes > 20, "\(matched) \(equal) \(typos) \(prefixes)")
    }

    /// Whole searches answer the same with the forward index, with the
    /// posting index alone, and with neither.
    @Test func searchesWithAndWithoutTheForwardIndexAgree() throws {
        for seed in [81, 83] as [UInt64] {
            let dir = TempDir()
            _ = try Self.store(dir, seed: seed)
            let forward = try openStore(dir, mode: .readOnly)
            let postingsOnly = try openStore(dir, mode: .readOnly)
            postingsOnly.searchCache.searchesUseForwardIndex = false
            let plain = try openStore(dir, mode: .readOnly)
            plain.searchCache.searchesUsePostingIndex = false
            try forward.buildSuggestionIndex()
            defer { PostingIndexes.shared.forget(path: forward.path) }
            var found = 0, runs = 0, phrases = 0, phraseHits = 0
            for plan in Self.randomPlans(150, seed: seed) + PostingSearchTests.randomPlans(50, seed: seed) {
                // Other suites' indexes, read in parallel, can push this one
                // out of the process's few: read it again then.
                if try PostingIndexTests.held(forward) == nil { try forward.buildSuggestionIndex() }
                let a = try forward.search(plan), b = try postingsOnly.search(plan), c = try plain.search(plan)
                #expect(a == b && b == c, "\(plan.words) \(plan.searchableAttributes) \(plan.window) \(plan.typos)")
                found += a.hits.count
                runs += 1
                // (A plan with a phrase alternative ranks by the text scan.)
                if plan.hasPhraseAlternatives {
                    phrases += 1
                    phraseHits += a.hits.count
                }
            }
            #expect(found > 400 && phrases > 10 && phraseHits > 20, "\(found) \(phrases) \(phraseHits)")
            #expect(forward.searchCache.forwardSearches == runs - phrases && postingsOnly.searchCache.forwardSearches == 0)
            #expect(postingsOnly.searchCache.postingSearches == runs && plain.searchCache.postingSearches == 0)
        }
    }

    /// A commit of another connection retires the forward index with the
    /// posting lists: the next search scans the new text (here, an item
    /// whose words moved apart), until the index is read again.
    @Test func aWriteMakesItNotCurrent() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        try w.put(Self.randomItems(200, seed: 91) + [item("moved", #"{"title": "zebra okapi"}"#)])
        let r = try openStore(dir, mode: .readOnly)
        try r.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: r.path) }
        let plan = SearchPlan(words: ["zebra", "okapi"], window: 10)
        let before = try r.search(plan)
        #expect(r.searchCache.forwardSearches == 1)
        #expect(before.hits.first?.uniqueIdentifier == "moved" && before.hits.first?.rank.proximity == 1)
        try w.put([item("moved", #"{"title": "zebra one two three okapi"}"#)])
        let after = try r.search(plan)
        #expect(r.searchCache.forwardSearches == 1)
        #expect(after.hits.first?.uniqueIdentifier == "moved" && after.hits.first?.rank.proximity == 4)
        try r.buildSuggestionIndex()
        #expect(try r.search(plan) == after)
        #expect(r.searchCache.forwardSearches == 2)
    }

    /// A word's lookups are kept for the next search of the same word (a
    /// refinement, another page) while the posting index they came from is
    /// current, for the searched columns and typos they were made with, and
    /// never past another connection's commit.
    @Test func wordLookupsAreKeptWhileTheIndexIsCurrent() throws {
        let dir = TempDir()
        let w = try openStore(dir)
        try w.put(Self.randomItems(200, seed: 93) + [item("z1", #"{"title": "zebra", "section": "wild"}"#)])
        let r = try openStore(dir, mode: .readOnly)
        try r.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: r.path) }
        let zebra = SearchPlan(words: ["zebr"], window: 10)
        #expect(try r.search(zebra).nbHits == 1)
        #expect(r.searchCache.wordPostingsReused == 0)
        // A refinement: the same word, a filter.
        var refined = zebra
        refined.filter = .domain(["@beta"])
        _ = try r.search(refined)
        #expect(r.searchCache.wordPostingsReused == 1)
        // Other searched columns or no prefix: lookups of their own.
        var inSection = zebra
        inSection.searchableAttributes = ["section"]
        #expect(try r.search(inSection).nbHits == 0)
        var whole = zebra
        whole.prefixLast = false
        #expect(try r.search(whole).hits.map(\.rank.typos) == [1])  // "zebra" as a misspelling of "zebr"
        #expect(try r.search(zebra).hits.map(\.rank.typos) == [0])  // as its prefix
        #expect(r.searchCache.wordPostingsReused == 2)
        // Another connection's commit: FTS5 answers until the index is read again, then the new one.
        try w.put([item("z2", #"{"title": "zebras"}"#)])
        #expect(try r.search(zebra).nbHits == 2)
        let searches = r.searchCache.postingSearches
        try r.buildSuggestionIndex()
        #expect(try r.search(zebra).nbHits == 2)
        #expect(r.searchCache.postingSearches == searches + 1)
        #expect(r.searchCache.wordPostingsReused == 2)
    }

    /// The index's terms are interned once each: every token of the index
    /// names a term, and no two terms are the same bytes of the same kind.
    @Test func termsAreDistinct() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 97, count: 120)
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let forward = try #require(try PostingIndexTests.held(s)?.forward)
        var seen: Set<[UInt8]> = []
        for t in 0..<forward.termCount {
            let bytes = forward.withTerm(t) { Array($0) } + [forward.termFolded[t] ? 1 : 0]
            #expect(seen.insert(bytes).inserted)
        }
        #expect(forward.tokens.allSatisfy { Int($0 >> 1) < forward.termCount })
        #expect(forward.termCount > 40 && forward.tokenCount > 1000, "\(forward.termCount) \(forward.tokenCount)")
    }

    /// Past its limit a shard has no forward index, and its searches scan
    /// the text (with the posting lists still from memory).
    @Test func pastItsLimitThereIsNone() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 101, count: 60)
        let tokens = try s.db.transaction(.deferred) { try ForwardIndex(db: s.db)?.tokenCount } ?? 0
        #expect(tokens > 100)
        #expect(try s.db.transaction(.deferred) { try ForwardIndex(db: s.db, maxTokens: tokens - 1) } == nil)
        #expect(try s.db.transaction(.deferred) { try ForwardIndex(db: s.db, maxTokens: tokens) }?.tokenCount == tokens)
        let index = try #require(try s.db.transaction(.deferred) { try PostingIndex(db: s.db, forward: false) })
        PostingIndexes.shared.publish(path: s.path, index: index)
        defer { PostingIndexes.shared.forget(path: s.path) }
        let plan = SearchPlan(words: ["python", "table"], window: 20)
        let r = try s.search(plan)
        #expect(s.searchCache.postingSearches == 1 && s.searchCache.forwardSearches == 0)
        s.searchCache.searchesUsePostingIndex = false
        #expect(try s.search(plan) == r)
    }

    /// A query of more words than a term's mask holds scans the text.
    @Test func longQueriesScanTheText() throws {
        let dir = TempDir()
        let s = try Self.store(dir, seed: 103, count: 60)
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let words = Array(repeating: "python", count: ForwardTokenCache.maxWords)
        _ = try s.search(SearchPlan(words: words, window: 5))
        #expect(s.searchCache.forwardSearches == 1)
        let long = SearchPlan(words: words + ["table"], window: 5)
        let r = try s.search(long)
        #expect(s.searchCache.forwardSearches == 1 && s.searchCache.postingSearches == 2)
        s.searchCache.searchesUsePostingIndex = false
        #expect(try s.search(long) == r)
    }
}
