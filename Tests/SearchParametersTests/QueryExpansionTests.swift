import Items
import QueryPlan
import Testing

@testable import SearchParameters

/// ``QueryExpansion``: query words, an index's synonyms and the language
/// settings in, the plan's words and their alternatives out. Algolia's
/// documented examples verbatim where its documents give them.
@Suite struct QueryExpansionTests {
    func synonym(_ json: String) throws -> QuerySynonym {
        let object = try #require(try JSONValue.parse(json).objectValue)
        return try #require(QuerySynonym(json: object))
    }

    func words(_ alternatives: [WordAlternative]) -> [String] { alternatives.map(\.word).sorted() }

    /// "in the list ["pants", "trousers", "slacks"], a search for "trousers"
    /// returns records with "pants" or "slacks", and a search for "pants"
    /// returns records with "trousers" or "slacks"."
    @Test func regularSynonymsAreEquivalent() throws {
        let pants = try synonym(#"{"objectID": "a-list-of-2-synonyms", "type": "synonym", "synonyms": ["pants", "trousers", "slacks"]}"#)
        let e = QueryExpansion(synonyms: [pants])
        let trousers = e.expand(["trousers"], prefixLast: true)
        #expect(trousers.words == ["trousers"] && words(trousers.alternatives[0]) == ["pants", "slacks"])
        #expect(words(e.expand(["pants"], prefixLast: false).alternatives[0]) == ["slacks", "trousers"])
        // Each word of a query separately; a word without any has an empty list.
        let two = e.expand(["blue", "slacks"], prefixLast: false)
        #expect(two.alternatives.count == 2 && two.alternatives[0].isEmpty && words(two.alternatives[1]) == ["pants", "trousers"])
        // Single-word synonyms count as exact (alternativesAsExact's default).
        #expect(trousers.alternatives[0].allSatisfy { $0.exact })
        var inexact = e
        inexact.synonymsAsExact = false
        #expect(inexact.expand(["pants"], prefixLast: true).alternatives[0].allSatisfy { !$0.exact })
    }

    /// "a search for tablet will find iPad … However, a search for iPad won't
    /// find tablet": `{"type": "oneWaySynonym", "input": "tablet",
    /// "synonyms": ["ipad", "galaxy tab"]}`. "galaxy tab" is two words: a
    /// phrase alternative.
    @Test func oneWaySynonymsGoOneWay() throws {
        let tablet = try synonym(
            #"{"objectID": "a-unique-identifier", "type": "oneWaySynonym", "input": "tablet", "synonyms": ["ipad", "galaxy tab"]}"#)
        let e = QueryExpansion(synonyms: [tablet])
        let found = e.expand(["tablet"], prefixLast: true).alternatives[0]
        #expect(words(found) == ["galaxy tab", "ipad"])
        #expect(found.first { $0.isPhrase }?.phrase == ["galaxy", "tab"])
        #expect(e.expand(["ipad"], prefixLast: true).alternatives.isEmpty)
        #expect(e.expand(["galaxy"], prefixLast: true).alternatives.isEmpty)
        // Case and diacritics fold as query words do.
        let folded = try synonym(#"{"objectID": "x", "type": "onewaysynonym", "input": "Café", "synonyms": ["Coffee"]}"#)
        #expect(words(QueryExpansion(synonyms: [folded]).expand(["cafe"], prefixLast: true).alternatives[0]) == ["coffee"])
        // Turned off by the `synonyms` parameter.
        #expect(QueryExpansion(useSynonyms: false, synonyms: [tablet]).expand(["tablet"], prefixLast: true).alternatives.isEmpty)
    }

    /// Types that do not change matching (placeholders) and synonyms of one
    /// text are not read as synonyms.
    @Test func otherTypesDoNotApply() throws {
        for json in [
            #"{"objectID": "b", "type": "placeholder", "placeholder": "<street>", "replacements": ["street", "st"]}"#,
            #"{"objectID": "c", "type": "synonym", "synonyms": ["lonely"]}"#,
        ] {
            let object = try #require(try JSONValue.parse(json).objectValue)
            #expect(QuerySynonym(json: object) == nil, "\(json)")
        }
    }

    /// Multi-word synonyms, such as "NY" = "New York": where the query holds
    /// the words of a text, each of them also matches the one-word texts (not
    /// exact by default: `alternativesAsExact` lacks `multiWordsSynonym`).
    @Test func aPhraseOfTheQueryFindsItsOneWordSynonyms() throws {
        let ny = try synonym(#"{"objectID": "ny", "type": "synonym", "synonyms": ["NY", "New York", "NYC"]}"#)
        let e = QueryExpansion(synonyms: [ny])
        let found = e.expand(["pizza", "new", "york", "style"], prefixLast: false)
        #expect(found.alternatives.count == 4 && found.alternatives[0].isEmpty && found.alternatives[3].isEmpty)
        #expect(words(found.alternatives[1]) == ["ny", "nyc"] && words(found.alternatives[2]) == ["ny", "nyc"])
        #expect(found.alternatives[1].allSatisfy { !$0.exact })
        var exact = e
        exact.multiWordSynonymsAsExact = true
        #expect(exact.expand(["new", "york"], prefixLast: true).alternatives[0].allSatisfy { $0.exact })
        // The words apart, or one of them alone, are not the text.
        #expect(e.expand(["york", "new"], prefixLast: false).alternatives.isEmpty)
        #expect(e.expand(["new"], prefixLast: false).alternatives.isEmpty)
        // One way: the input's words find the synonyms, not the reverse.
        let oneWay = try synonym(#"{"objectID": "la", "type": "onewaysynonym", "input": "los angeles", "synonyms": ["LA", "city of angels"]}"#)
        let la = QueryExpansion(synonyms: [oneWay]).expand(["los", "angeles"], prefixLast: false)
        #expect(words(la.alternatives[0]) == ["city of angels", "la"] && words(la.alternatives[1]) == ["city of angels", "la"])
        #expect(QueryExpansion(synonyms: [oneWay]).expand(["la"], prefixLast: false).alternatives.isEmpty)
    }

    /// `"car"` matches `"cars"` and `"child"` matches `"children"`; "foot"
    /// and "feet"; "mice" and "mouse"; "shirt" and "shirts".
    @Test func pluralsBothWays() {
        let e = QueryExpansion(ignorePlurals: true)
        for (word, forms) in [
            ("car", ["cars"]), ("cars", ["car"]), ("child", ["children"]), ("children", ["child"]), ("foot", ["feet"]),
            ("feet", ["foot"]), ("mice", ["mouse"]), ("mouse", ["mice"]), ("shirt", ["shirts"]), ("shirts", ["shirt"]),
            ("library", ["libraries"]), ("libraries", ["library"]), ("box", ["boxes"]), ("glasses", ["glass"]),
            ("glass", ["glasses"]), ("key", ["keys"]), ("sheep", []), ("news", []), ("bus", ["buses"]),
        ] {
            let alternatives = e.expand([word], prefixLast: false).alternatives
            #expect((alternatives.first.map(words) ?? []) == forms.sorted(), "\(word)")
        }
        #expect(e.expand(["boxes"], prefixLast: false).alternatives[0].map(\.word).contains("box"))
        // Numbers and words of two letters have no plural.
        #expect(e.expand(["x86", "go"], prefixLast: false).alternatives.isEmpty)
        var inexact = e
        inexact.pluralsAsExact = false
        #expect(inexact.expand(["car"], prefixLast: false).alternatives[0] == [WordAlternative("cars", exact: false)])
    }

    /// "what is a record" becomes "record"; a word matched as a prefix is
    /// kept ("Stop words aren't removed from words interpreted as
    /// prefixes"); a query of stop words alone is kept whole.
    @Test func stopWords() {
        let e = QueryExpansion(removeStopWords: true)
        #expect(e.expand(["what", "is", "a", "record"], prefixLast: true).words == ["record"])
        #expect(e.expand(["what", "is", "a", "record"], prefixLast: false).words == ["record"])
        #expect(e.expand(["record", "of", "the"], prefixLast: true).words == ["record", "the"])
        #expect(e.expand(["record", "of", "the"], prefixLast: false).words == ["record"])
        #expect(e.expand(["the", "who"], prefixLast: false).words == ["the", "who"])
        #expect(QueryExpansion().expand(["what", "is", "a", "record"], prefixLast: false).words == ["what", "is", "a", "record"])
        // Stop words go before alternatives are found for the rest.
        let both = QueryExpansion(removeStopWords: true, ignorePlurals: true).expand(["the", "cars"], prefixLast: false)
        #expect(both.words == ["cars"] && words(both.alternatives[0]) == ["car"])
    }

    /// The parameters: English by `true` or a list holding "en"; `true`
    /// means `queryLanguages` when given; wrong values named.
    @Test func searchParameters() throws {
        func plan(_ o: [String: JSONValue]) throws(SearchParametersError) -> SearchPlan {
            var p = o
            p["query"] = p["query"] ?? .string("what is a car ")
            return try SearchRequest(params: .object(p)).plan
        }
        let typed = try plan([:])
        #expect(typed.words == ["what", "is", "a", "car"] && typed.alternatives.isEmpty)
        let english = try plan(["removeStopWords": .bool(true), "ignorePlurals": .array([.string("en")])])
        #expect(english.words == ["car"] && english.alternatives == [[WordAlternative("cars")]])
        #expect(try plan(["ignorePlurals": .array([.string("fr")])]).alternatives.isEmpty)
        #expect(try plan(["ignorePlurals": .bool(true), "queryLanguages": .array([.string("fr")])]).alternatives.isEmpty)
        #expect(try plan(["ignorePlurals": .string("true")]).alternatives.count == 4)
        let inexact = try plan(["ignorePlurals": .bool(true), "alternativesAsExact": .array([.string("singleWordSynonym")])])
        #expect(inexact.alternatives[3] == [WordAlternative("cars", exact: false)])
        for (name, value) in [
            ("ignorePlurals", JSONValue.number(3)), ("removeStopWords", .object([:])),
            ("alternativesAsExact", .array([.string("always")])), ("synonyms", .string("sometimes")),
            ("queryLanguages", .bool(true)),
        ] {
            #expect(throws: SearchParametersError.self, "\(name)") { try plan([name: value]) }
            do { _ = try plan([name: value]) } catch { #expect(error.parameter == name) }
        }
        // An index's synonyms, applied to the typed words after the parameters.
        var request = try SearchRequest(params: .object(["query": .string("the pants"), "removeStopWords": .bool(true)]))
        request.applySynonyms([try synonym(#"{"objectID": "p", "type": "synonym", "synonyms": ["pants", "trousers"]}"#)])
        #expect(request.plan.words == ["pants"] && request.plan.alternatives == [[WordAlternative("trousers")]])
    }

    /// The plan carries the alternatives over the wire, and a plan without
    /// them writes nothing for them.
    @Test func planWireForm() throws {
        var plan = SearchPlan(words: ["pants", "blue"])
        #expect(plan.json["alternatives"] == nil)
        plan.alternatives = [[WordAlternative("trousers"), WordAlternative("slack", exact: false)], []]
        #expect(try SearchPlan(json: plan.json) == plan)
        var wrong = plan.json.objectValue!
        wrong["alternatives"] = .array([.array([])])
        #expect(throws: PlanDecodingError.self) { try SearchPlan(json: .object(wrong)) }
    }

    /// The highlighter marks a word's alternatives as the word, ASCII or not.
    @Test func highlightsAlternatives() {
        var plan = SearchPlan(words: ["pants"], prefixLast: false)
        plan.alternatives = [[WordAlternative("trousers"), WordAlternative("pantalon")]]
        let h = Highlighter(plan: plan)
        for fast in [true, false] {
            let m = h.matches("Grey trousers, not pants", fast: fast)
            #expect(m.ranges.count == 2 && m.matched == [true], "\(fast)")
            #expect(h.matches("Pantalón gris", fast: fast).ranges == [0..<9], "\(fast)")
        }
    }

    /// Algolia: "if you have a synonym "NY = New York", a query "NY" can find
    /// a result "New York Times". However, it cannot find a result "new
    /// company in York" because it doesn't contain a phrase "New York"": the
    /// one-word query gets the text of several words as a phrase, not as
    /// words apart; not exact by default ("multi-word synonyms score lower
    /// than their original words on the exact ranking criterion"), exact with
    /// `multiWordsSynonym` ("Multi-word synonyms, such as "NY" = "New York",
    /// are considered exact matches").
    @Test func aWordFindsTheTextsOfSeveralWordsAsPhrases() throws {
        let ny = try synonym(#"{"objectID": "ny", "type": "synonym", "synonyms": ["NY", "New York"]}"#)
        let e = QueryExpansion(synonyms: [ny])
        let found = e.expand(["ny"], prefixLast: false)
        #expect(found.alternatives == [[WordAlternative(phrase: ["new", "york"], exact: false)]])
        var exact = e
        exact.multiWordSynonymsAsExact = true
        #expect(exact.expand(["ny"], prefixLast: false).alternatives == [[WordAlternative(phrase: ["new", "york"], exact: true)]])
        // One-word texts keep `singleWordSynonym`'s exactness beside it.
        let three = try synonym(#"{"objectID": "ny", "type": "synonym", "synonyms": ["NY", "new york", "NYC"]}"#)
        let both = QueryExpansion(synonyms: [three]).expand(["ny"], prefixLast: false).alternatives[0]
        #expect(both == [WordAlternative(phrase: ["new", "york"], exact: false), WordAlternative("nyc", exact: true)])
        // "HD ⇔ High Definition … search for HD … matches records with "High
        // Definition"": in the other direction too.
        let hd = try synonym(#"{"objectID": "hd", "type": "synonym", "synonyms": ["HD", "High Definition"]}"#)
        #expect(
            QueryExpansion(synonyms: [hd]).expand(["hd"], prefixLast: true).alternatives == [
                [WordAlternative(phrase: ["high", "definition"], exact: false)]
            ])
        let back = QueryExpansion(synonyms: [hd]).expand(["high", "definition"], prefixLast: false).alternatives
        #expect(back == [[WordAlternative("hd", exact: false)], [WordAlternative("hd", exact: false)]])
    }

    /// A text of several words for another: `["big apple", "new york"]`
    /// gives each word of "big apple" the phrase "new york", and the
    /// reverse; "distant learning = remote learning" (Algolia's example of
    /// multi-word synonyms and the exact criterion) likewise.
    @Test func twoPhrasesFindEachOther() throws {
        let apple = try synonym(#"{"objectID": "apple", "type": "synonym", "synonyms": ["big apple", "new york"]}"#)
        let e = QueryExpansion(synonyms: [apple])
        let big = e.expand(["big", "apple", "pizza"], prefixLast: false).alternatives
        let newYork = WordAlternative(phrase: ["new", "york"], exact: false)
        #expect(big == [[newYork], [newYork], []])
        let bigApple = WordAlternative(phrase: ["big", "apple"], exact: false)
        #expect(e.expand(["new", "york"], prefixLast: false).alternatives == [[bigApple], [bigApple]])
        // A word alone is none of the texts.
        #expect(e.expand(["apple"], prefixLast: false).alternatives.isEmpty)
        let learning = try synonym(#"{"objectID": "l", "type": "synonym", "synonyms": ["distant learning", "remote learning"]}"#)
        var exact = QueryExpansion(synonyms: [learning])
        #expect(
            exact.expand(["distant", "learning"], prefixLast: false).alternatives[0] == [
                WordAlternative(phrase: ["remote", "learning"], exact: false)
            ])
        exact.multiWordSynonymsAsExact = true
        #expect(
            exact.expand(["remote", "learning"], prefixLast: false).alternatives[1] == [
                WordAlternative(phrase: ["distant", "learning"], exact: true)
            ])
    }

    /// Phrases over the wire: `{phrase, exact}`, read back as written; a
    /// phrase of one word or with an empty word is refused, naming where.
    @Test func phraseWireForm() throws {
        var plan = SearchPlan(words: ["ny", "pizza"])
        plan.alternatives = [[WordAlternative(phrase: ["new", "york"], exact: false), WordAlternative("nyc")], []]
        #expect(
            plan.json["alternatives"]?.arrayValue?[0].arrayValue?[0]
                == .object(["phrase": .array([.string("new"), .string("york")]), "exact": .bool(false)]))
        #expect(try SearchPlan(json: plan.json) == plan)
        for bad in [JSONValue.array([.string("new")]), .array([.string("new"), .string("")]), .array([.string("new"), .number(1)])] {
            var wrong = plan.json.objectValue!
            wrong["alternatives"] = .array([.array([.object(["phrase": bad])]), .array([])])
            #expect {
                try SearchPlan(json: .object(wrong))
            } throws: { error in
                (error as? PlanDecodingError)?.path == "search.alternatives[0][0]"
            }
        }
    }

    /// The highlighter marks a phrase alternative's words where they are
    /// adjacent, as the word, and not the same words apart.
    @Test func highlightsPhrases() {
        var plan = SearchPlan(words: ["ny"], prefixLast: false)
        plan.alternatives = [[WordAlternative(phrase: ["new", "york"])]]
        let h = Highlighter(plan: plan)
        for fast in [true, false] {
            let m = h.matches("The New York Times", fast: fast)
            #expect(m.ranges == [4..<7, 8..<12] && m.matched == [true], "\(fast)")
            #expect(h.highlight("New York", fast: fast).fullyHighlighted, "\(fast)")
            let apart = h.matches("new company in York", fast: fast)
            #expect(apart.ranges.isEmpty && apart.matched == [false], "\(fast)")
            #expect(h.matches("Café in New York", fast: fast).ranges == [9..<12, 13..<17], "\(fast)")
        }
    }

    /// Alternative corrections: "Same as a one-way synonym, except that when
    /// matched, they will count as 1 (respectively 2) typos in the ranking
    /// formula" (`{"type": "altCorrection1", "word": "car", "corrections":
    /// ["vehicle", "auto"]}`); never exact, since they count as typos.
    @Test func alternativeCorrectionsCountAsTypos() throws {
        let one = try synonym(#"{"objectID": "synonymID", "type": "altCorrection1", "word": "car", "corrections": ["vehicle", "auto"]}"#)
        let e = QueryExpansion(synonyms: [one])
        #expect(
            e.expand(["car"], prefixLast: false).alternatives == [
                [WordAlternative("vehicle", exact: false, typos: 1), WordAlternative("auto", exact: false, typos: 1)]
            ])
        // One way.
        #expect(e.expand(["vehicle"], prefixLast: false).alternatives.isEmpty)
        let two = try synonym(#"{"objectID": "p", "type": "altcorrection2", "word": "pants", "corrections": ["trousers"]}"#)
        #expect(
            QueryExpansion(synonyms: [two]).expand(["pants"], prefixLast: true).alternatives == [
                [WordAlternative("trousers", exact: false, typos: 2)]
            ])
        // Found also as a regular synonym: the fewer typos, and exact.
        let regular = try synonym(#"{"objectID": "r", "type": "synonym", "synonyms": ["pants", "trousers"]}"#)
        #expect(QueryExpansion(synonyms: [two, regular]).expand(["pants"], prefixLast: true).alternatives == [[WordAlternative("trousers")]])
        // Over the wire.
        var plan = SearchPlan(words: ["car"])
        plan.alternatives = [[WordAlternative("vehicle", exact: false, typos: 1), WordAlternative(phrase: ["motor", "car"], typos: 2)]]
        #expect(
            plan.json["alternatives"]?.arrayValue?[0].arrayValue?[0]
                == .object(["word": .string("vehicle"), "exact": .bool(false), "typos": .number(1)]))
        #expect(try SearchPlan(json: plan.json) == plan)
        var wrong = plan.json.objectValue!
        wrong["alternatives"] = .array([.array([.object(["word": .string("x"), "typos": .number(3)])])])
        #expect(throws: PlanDecodingError.self) { try SearchPlan(json: .object(wrong)) }
    }

    /// "In case of a multi-word synonym, the engine only matches the synonym
    /// when the last word starts to match. For example, if you have a
    /// one-way synonym "New York = NY", you may not want to retrieve results
    /// with "NY" when you type "ne". However, you do when you type "new yo"."
    @Test func aTextOfSeveralWordsAppliesOnceItsLastWordIsStarted() throws {
        let ny = try synonym(#"{"objectID": "ny", "type": "onewaysynonym", "input": "New York", "synonyms": ["NY"]}"#)
        let e = QueryExpansion(synonyms: [ny])
        #expect(e.expand(["ne"], prefixLast: true).alternatives.isEmpty)
        #expect(e.expand(["new"], prefixLast: true).alternatives.isEmpty)
        let typing = e.expand(["new", "yo"], prefixLast: true)
        #expect(
            typing.words == ["new", "yo"] && typing.alternatives == [[WordAlternative("ny", exact: false)], [WordAlternative("ny", exact: false)]])
        // A complete word (a trailing space) must be the input's.
        #expect(e.expand(["new", "yo"], prefixLast: false).alternatives.isEmpty)
        // Only the last word is a prefix; a word before it must be whole.
        #expect(e.expand(["ne", "york"], prefixLast: true).alternatives.isEmpty)
        #expect(e.expand(["new", "yo", "pizza"], prefixLast: true).alternatives.isEmpty)
    }
}
