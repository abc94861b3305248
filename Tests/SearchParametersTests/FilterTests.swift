import Items
import QueryPlan
import Testing

@testable import SearchParameters

/// Algolia's documented filter examples, verbatim, and its combination rules.
@Suite struct FilterTests {
    /// A request without typo parameters takes Algolia's documented defaults.
    @Test func typoThresholdsDefaultToAlgolias() throws {
        let plan = try SearchRequest(params: .object(["query": .string("x")])).plan
        #expect(plan.typos.minWordSizeForOneTypo == 4 && plan.typos.minWordSizeForTwoTypos == 8)
        #expect(plan.typos.allowed(for: "vim") == 0 && plan.typos.allowed(for: "curl") == 1)
        #expect(plan.typos.allowed(for: "postgres") == 2 && plan.typos.allowed(for: "inkscap") == 1)
        let set = try SearchRequest(params: .object(["query": .string("x"), "minWordSizefor1Typo": .number(6), "minWordSizefor2Typos": .number(10)]))
            .plan
        #expect(set.typos.minWordSizeForOneTypo == 6 && set.typos.minWordSizeForTwoTypos == 10)
    }

    func groups(_ s: String) throws(SearchParametersError) -> [FilterGroup] {
        var p = FilterExpressionParser(s)
        return try p.parse()
    }

    func failure(_ s: String) -> SearchParametersError? {
        do throws(SearchParametersError) { _ = try groups(s); return nil } catch { return error }
    }

    func facet(_ a: String, _ v: String, negated: Bool = false) -> QueryPlan.Predicate {
        let p = FilterCondition.facet(attribute: a, value: v).predicate
        return negated ? .not(p) : p
    }

    @Test func documentedBasicFilters() throws {
        #expect(try groups("price > 12.99").map(\.predicate) == [.range(RangeTest(attribute: "price", lower: Bound(12.99, inclusive: false)))])
        #expect(
            try groups("price:5.99 TO 100").map(\.predicate)
                == [.range(RangeTest(attribute: "price", lower: Bound(5.99, inclusive: true), upper: Bound(100, inclusive: true)))])
        #expect(try groups("category:Book").map(\.predicate) == [facet("category", "Book")])
        #expect(
            try groups("_tags:published").map(\.predicate)
                == [.text(TextTest(attribute: .named("_tags"), pattern: TextPattern(literal: "published")))])
        #expect(try groups("author:\"Stephen King\"").map(\.predicate) == [facet("author", "Stephen King")])
        #expect(
            try groups("NOT _tags:non-fiction").map(\.predicate)
                == [.not(.text(TextTest(attribute: .named("_tags"), pattern: TextPattern(literal: "non-fiction"))))])
        // Tags without an attribute.
        #expect(try groups("public OR user_42").first?.items == [.tag("public"), .tag("user_42")])
    }

    @Test func documentedValidCombinations() throws {
        for valid in [
            "A AND (B OR C)", "(A OR B) AND C", "A AND (B OR C) AND (D OR E)",
            "A AND B AND (C OR D) AND (E OR F)", "(A OR B) AND (C OR D) AND E",
            "price < 10 AND (category:Book OR NOT category:Ebook)",
            "(\"county:Maricopa\" OR \"county:Pima\")",
        ] {
            #expect(failure(valid) == nil, "\(valid)")
        }
        let g = try groups("price < 10 AND (category:Book OR NOT category:Ebook)")
        #expect(g.count == 2)
        #expect(g[1].predicate == .or([facet("category", "Book"), facet("category", "Ebook", negated: true)]))
    }

    @Test func documentedInvalidCombinationsNameTheirPosition() {
        // "Don't group ANDs within ORs."
        let e1 = failure("A OR (B AND C) OR (D AND E)")
        #expect(e1?.code == .badFilter)
        #expect(e1?.position == 5)
        // "Don't use parentheses with top-level AND combinations."
        let e2 = failure("(A AND (B OR C))")
        #expect(e2?.position == 3)
        // "Don't use parentheses to negate a group of expressions."
        let e3 = failure("NOT (filter1 OR filter2)")
        #expect(e3?.position == 4)
        // Numeric and facet conditions in one OR.
        let e4 = failure("category:Book AND (price < 10 OR category:Ebook)")
        #expect(e4?.position == 19)
        #expect(e4?.message.contains("numeric") == true)
        // An OR beside an AND without parentheses.
        #expect(failure("A OR B AND C")?.position == 0)
    }

    @Test func malformedExpressionsSayWhere() {
        #expect(failure("price:5 TO")?.position == 10)
        #expect(failure("price:abc TO 9")?.position == 6)
        #expect(failure("price > cheap")?.position == 8)
        #expect(failure("author:\"Stephen King")?.position == 7)
        #expect(failure("(A OR B")?.message.contains("')'") == true)
        #expect(failure("a:b c:d")?.position == 4)
    }

    @Test func facetFilterListsAndNegation() throws {
        let r = try SearchRequest(
            params: .object([
                "facetFilters": .array([
                    .array([.string("category:Book"), .string("category:Movie")]), .string("author:John Doe"),
                    .string("genre:-comedy"), .string("count:\\-12"),
                ])
            ]))
        #expect(
            r.plan.filter
                == .and([
                    .or([facet("category", "Book"), facet("category", "Movie")]), facet("author", "John Doe"),
                    facet("genre", "comedy", negated: true), facet("count", "-12"),
                ]))
    }

    @Test func numericFilterLists() throws {
        let r = try SearchRequest(
            params: .object([
                "numericFilters": .array([.string("price < 1000"), .array([.string("inStock = 1"), .string("deliveryDate < 1441755506")])])
            ]))
        #expect(
            r.plan.filter
                == .and([
                    .range(RangeTest(attribute: "price", upper: Bound(1000, inclusive: false))),
                    .or([
                        .range(RangeTest(attribute: "inStock", lower: Bound(1, inclusive: true), upper: Bound(1, inclusive: true))),
                        .range(RangeTest(attribute: "deliveryDate", upper: Bound(1441755506, inclusive: false))),
                    ]),
                ]))
        #expect(throws: SearchParametersError.self) { try SearchRequest(params: .object(["numericFilters": .string("a > 1 AND b < 2")])) }
    }

    @Test func disjunctiveFacetsDropOnlyTheirOwnRefinements() throws {
        let r = try SearchRequest(
            params: .object([
                "facets": .array([.string("section")]), "disjunctiveFacets": .array([.string("architecture")]),
                "facetFilters": .array([.array([.string("architecture:amd64"), .string("architecture:all")]), .string("section:utils")]),
            ]))
        #expect(r.plan.facets == ["section", "architecture"])
        #expect(r.plan.disjunctiveFilters["architecture"] == facet("section", "utils"))
    }

    @Test func unknownAndInvalidParametersAreNamed() {
        #expect(
            throws: SearchParametersError(.unknownParameter, "'hitsPerPages' is not a search parameter Limelight knows", parameter: "hitsPerPages")
        ) {
            try SearchRequest(params: .object(["hitsPerPages": .number(3)]))
        }
        do throws(SearchParametersError) {
            _ = try SearchRequest(params: .object(["filters": .string("a:b OR (c:d AND e:f)")]))
            Issue.record("accepted")
        } catch {
            #expect(error.parameter == "filters")
            #expect(error.position == 7)
        }
        #expect(throws: SearchParametersError.self) { try SearchRequest(params: .object(["hitsPerPage": .string("x")])) }
        #expect(throws: SearchParametersError.self) { try SearchRequest(params: .object(["aroundLatLng": .string("north")])) }
    }

    @Test func pagingParameters() throws {
        let r = try SearchRequest(params: .object(["page": .number(10), "hitsPerPage": .number(20)]))
        #expect(r.offset == 200 && r.length == 20 && r.plan.window == 220)
        let o = try SearchRequest(params: .object(["offset": .number(5), "length": .number(3), "page": .number(9)]))
        #expect(o.offset == 5 && o.length == 3 && o.plan.window == 8)
        #expect(try SearchRequest(params: .object(["query": .string("vim ")])).plan.prefixLast == false)
        #expect(try SearchRequest(params: .object(["query": .string("Vim Édit")])).plan.words == ["vim", "edit"])
    }
}

/// The echoed `params`: sorted keys, values URL-encoded as RFC 3986 says
/// (unreserved characters kept, every other UTF-8 byte as `%XX`, what
/// Python's `urllib.parse.quote(v, safe="-._~")` gives), non-text values as JSON.
@Suite struct ParamsEchoTests {
    @Test func paramsAreURLEncodedBytes() {
        let params: JSONValue = .object([
            "query": .string("café vim~x/y&z=1+2%"), "hitsPerPage": .number(20),
            "facets": .array([.string("a b"), .string("c")]), "getRankingInfo": .bool(true),
        ])
        #expect(
            SearchResponseBuilder.urlEncoded(params)
                == "facets=%5B%22a%20b%22%2C%22c%22%5D&getRankingInfo=true&hitsPerPage=20&query=caf%C3%A9%20vim~x%2Fy%26z%3D1%2B2%25")
        #expect(SearchResponseBuilder.urlEncoded(.object([:])) == "")
    }
}

@Suite struct HighlighterTests {
    func highlighter(_ query: String) throws -> Highlighter {
        Highlighter(plan: try SearchRequest(params: .object(["query": .string(query)])).plan)
    }

    @Test func marksMatchedWordsWithTheSameRules() throws {
        let h = try highlighter("vector drawng")
        let r = h.highlight("Inkscape: vector-based drawing program")
        #expect(r.value == "Inkscape: <em>vector</em>-based <em>drawing</em> program")
        #expect(r.matchLevel == "full")
        #expect(r.matchedWords == ["vector", "drawng"])
        #expect(r.fullyHighlighted == false)
        let whole = try highlighter("vim").highlight("vim")
        #expect(whole.value == "<em>vim</em>" && whole.fullyHighlighted)
        #expect(try highlighter("vim emacs").highlight("Vim").matchLevel == "partial")
        #expect(try highlighter("zzz").highlight("Vim").matchLevel == "none")
        // The last word as a prefix, camel-case parts.
        #expect(try highlighter("wind").highlight("MyWindowClass").value == "My<em>Window</em>Class")
    }

    /// The ASCII path (bytes, the shards' matcher) marks exactly what the
    /// general one (``SearchTokens``, ``WordMatch``) does: random values of
    /// letters in both cases, camel case, digits and separators, against
    /// queries made of pieces of them, misspelt or cut short.
    @Test func theASCIIPathMarksWhatTheGeneralOneDoes() throws {
        var rng = SplitMix64(state: 77)
        let alphabet = Array("aAbBeEiIoOnNrRsStTzZ09 -_.:/MyWindowClassNSWindowHTML5Parser ")
        var marked = 0, partial = 0, snippets = 0
        for _ in 0..<3000 {
            let value = String((0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            let tokens = value.split { !$0.isLetter && !$0.isNumber }.map(String.init)
            var words: [String] = []
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                var w = tokens.randomElement(using: &rng) ?? "window"
                switch Int.random(in: 0..<4, using: &rng) {
                case 0 where w.count > 2: w.removeLast()  // a prefix, or a deletion
                case 1 where !w.isEmpty: w.insert("e", at: w.index(w.startIndex, offsetBy: Int.random(in: 0...w.count, using: &rng)))
                case 2: w = String((0..<Int.random(in: 1...6, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
                default: break
                }
                words.append(w)
            }
            let query = words.joined(separator: " ") + (Bool.random(using: &rng) ? " " : "")
            let h = try highlighter(query)
            let fast = h.highlight(value, fast: true), general = h.highlight(value, fast: false)
            #expect(fast == general, "\(value.debugDescription) for \(query.debugDescription)")
            // The response's writer gives the bytes of that result written
            // as a tree, tags that need escapes included.
            var tagged = h
            (tagged.preTag, tagged.postTag) = Bool.random(using: &rng) ? ("<em>", "</em>") : ("<b class=\"q\">\\", "\u{1}</b>")
            var written: [UInt8] = []
            tagged.writeResult(value, HighlightScratch(tagged), into: &written)
            let r = tagged.highlight(value, fast: false)
            let tree: JSONValue = .object([
                "value": .string(r.value), "matchLevel": .string(r.matchLevel),
                "matchedWords": .array(r.matchedWords.map(JSONValue.string)), "fullyHighlighted": .bool(r.fullyHighlighted),
            ])
            #expect(written == JSONWriter.bytes(tree), "\(value.debugDescription) for \(query.debugDescription)")
            let n = Int.random(in: 1...5, using: &rng)
            let fs = h.snippet(value, words: n, fast: true), gs = h.snippet(value, words: n, fast: false)
            #expect(fs.value == gs.value && fs.matchLevel == gs.matchLevel, "\(value.debugDescription) for \(query.debugDescription), \(n) words")
            if general.value.contains("<em>") { marked += 1 }
            if general.matchLevel == "partial" { partial += 1 }
            if gs.value.contains("…") { snippets += 1 }
        }
        // The inputs do exercise marks, partial matches and cut snippets.
        #expect(marked > 1000 && partial > 100 && snippets > 300, "\(marked) \(partial) \(snippets)")
    }

    @Test func snippetsCenterOnTheFirstMatch() throws {
        let h = try highlighter("compression")
        let text = "7-Zip is a file archiver with a high compression ratio. The main features of 7-Zip are many"
        let s = h.snippet(text, words: 4)
        #expect(s.value == "…a high <em>compression</em> ratio…")
        #expect(s.matchLevel == "full")
        #expect(h.snippet("short text", words: 10).value == "short text")
    }
}
