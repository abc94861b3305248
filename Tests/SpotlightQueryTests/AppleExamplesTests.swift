import Foundation
import QueryPlan
import SpotlightQuery
import Testing

/// The examples of Apple's Core Spotlight documentation ("Searching for
/// information in your app", the `CSSearchQuery` reference) and of the older
/// "File Metadata Query Expression Syntax" (mdfind), each with items that
/// must and must not match.
@Suite struct AppleExamplesTests {
    // MARK: Core Spotlight

    @Test func windowWordBased() {
        // "'Window'w matches MyWindowClass and Broken Window, but not NSWindow."
        let items = titled("title", ["MyWindowClass", "Broken Window", "NSWindow", "Windows", "window", "Window"])
        #expect(matching(#"title == "Window"w"#, items) == ["MyWindowClass", "Broken Window", "Window"])
    }

    @Test func windowWordBasedPlan() {
        #expect(plan(#"title == "Window"w"#) == text("title", "Window", .wordBased))
    }

    @Test func authorsCompletedInTheLastTenDays() {
        // Apple's example, evaluated with now = 2026-11-22T15:30:00Z: the
        // range runs from the start of 2026-11-12 to the end of today.
        let query = #"(authorNames == "Tim"wc || authorNames == "Steve"wc) && InRange(completionDate, $time.today(-10), $time.today)"#
        let items = [
            TestItem("tim-last-week", ["authorNames": ["Tim Cook"], "completionDate": .date("2026-11-15T10:00:00Z")]),
            TestItem("steve-earlier-today", ["authorNames": ["steve jobs"], "completionDate": .date("2026-11-22T09:00:00Z")]),
            TestItem("tim-first-moment", ["authorNames": ["Tim"], "completionDate": .date("2026-11-12T00:00:00Z")]),
            TestItem("tim-too-early", ["authorNames": ["Tim"], "completionDate": .date("2026-11-11T23:59:59Z")]),
            TestItem("steve-tomorrow", ["authorNames": ["Steve"], "completionDate": .date("2026-11-23T00:00:00Z")]),
            TestItem("steve-last-moment", ["authorNames": ["Steve"], "completionDate": .date("2026-11-22T23:59:59Z")]),
            TestItem("steve-among-others", ["authorNames": ["Craig", "STEVE"], "completionDate": .date("2026-11-20T12:00:00Z")]),
            TestItem("steve-camel-case", ["authorNames": ["SteveJobs"], "completionDate": .date("2026-11-20T12:00:00Z")]),
            TestItem("timothy", ["authorNames": ["Timothy"], "completionDate": .date("2026-11-20T12:00:00Z")]),
            TestItem("jony", ["authorNames": ["Jony Ive"], "completionDate": .date("2026-11-20T12:00:00Z")]),
            TestItem("steve-not-completed", ["authorNames": ["Steve"]]),
            TestItem("no-author", ["completionDate": .date("2026-11-20T12:00:00Z")]),
        ]
        #expect(
            matching(query, items) == [
                "tim-last-week", "steve-earlier-today", "tim-first-moment", "steve-last-moment",
                "steve-among-others", "steve-camel-case",
            ])
    }

    @Test func authorsCompletedInTheLastTenDaysPlan() {
        let query = #"(authorNames == "Tim"wc || authorNames == "Steve"wc) && InRange(completionDate, $time.today(-10), $time.today)"#
        #expect(
            plan(query)
                == .and([
                    .or([
                        text("authorNames", "Tim", [.wordBased, .caseInsensitive]),
                        text("authorNames", "Steve", [.wordBased, .caseInsensitive]),
                    ]),
                    range(
                        "completionDate", Bound(seconds("2026-11-12T00:00:00Z"), inclusive: true),
                        Bound(seconds("2026-11-23T00:00:00Z"), inclusive: false)),
                ]))
    }

    @Test func searchableTitlePrefix() {
        // The CSSearchQuery reference: items titled "Searchable Item #1" …,
        // found by titles that begin with "Searchable".
        let items = titled("title", ["Searchable Item #1", "Searchable Item #2", "Searchable", "Not Searchable", "searchable item"])
        #expect(matching(#"title == "Searchable*""#, items) == ["Searchable Item #1", "Searchable Item #2", "Searchable"])
        #expect(matching(#"title == 'Searchable*'"#, items) == ["Searchable Item #1", "Searchable Item #2", "Searchable"])
        #expect(matching(#"title == "searchable*"c"#, items) == ["Searchable Item #1", "Searchable Item #2", "Searchable", "searchable item"])
    }

    @Test func tokenizedModifier() {
        // `t`: every word of the value must occur among the attribute's words, in any order.
        let items = titled("textContent", ["Paris is in France", "France: Paris", "Paris only", "france and paris", "Parisian France"])
        #expect(matching(#"textContent == "Paris France"t"#, items) == ["Paris is in France", "France: Paris"])
        #expect(matching(#"textContent == "Paris France"tc"#, items) == ["Paris is in France", "France: Paris", "france and paris"])
        #expect(matching(#"textContent == "Paris* France"t"#, items) == ["Paris is in France", "France: Paris", "Parisian France"])
    }

    // MARK: File Metadata Query Expression Syntax (mdfind)

    @Test func modifierTable() {
        let items = titled("textContent", ["Paris", "paris", "PARIS", "Pâris", "pâris"])
        #expect(matching(#"kMDItemTextContent == "Paris""#, items) == ["Paris"])
        #expect(matching(#"kMDItemTextContent ==[c] "Paris""#, items) == ["Paris", "paris", "PARIS"])
        #expect(matching(#"kMDItemTextContent == "Paris"c"#, items) == ["Paris", "paris", "PARIS"])
        #expect(matching(#"kMDItemTextContent ==[d] "Paris""#, items) == ["Paris", "Pâris"])
        #expect(matching(#"kMDItemTextContent ==[cd] "Paris""#, items) == ["Paris", "paris", "PARIS", "Pâris", "pâris"])
        #expect(matching(#"kMDItemTextContent == "Pâris"cd"#, items) == ["Paris", "paris", "PARIS", "Pâris", "pâris"])
        #expect(matching(#"kMDItemTextContent ==[c] "Paris"d"#, items) == ["Paris", "paris", "PARIS", "Pâris", "pâris"])
    }

    @Test func authorsCaseInsensitive() {
        // "kMDItemAuthors ==[c] "Steve"": the metadata key names authorNames.
        let items = [
            TestItem("steve", ["authorNames": ["Steve"]]),
            TestItem("STEVE", ["authorNames": ["Tim", "STEVE"]]),
            TestItem("steven", ["authorNames": ["Steven"]]),
        ]
        #expect(matching(#"kMDItemAuthors ==[c] "Steve""#, items) == ["steve", "STEVE"])
    }

    @Test func wildcardTable() {
        let items = titled("textContent", ["Paris", "Parisian", "CParis", "The Paris Review", "Palris", "Pa ris", "Pari", "paris"])
        #expect(matching(#"kMDItemTextContent == "Paris""#, items) == ["Paris"])
        #expect(matching(#"kMDItemTextContent == "Paris*""#, items) == ["Paris", "Parisian"])
        #expect(matching(#"kMDItemTextContent == "*Paris""#, items) == ["Paris", "CParis"])
        #expect(matching(#"kMDItemTextContent == "*Paris*""#, items) == ["Paris", "Parisian", "CParis", "The Paris Review"])
        #expect(matching(#"kMDItemTextContent == "Pa*ris""#, items) == ["Paris", "Palris", "Pa ris"])
        #expect(matching(#"kMDItemTextContent == "*""#, items) == Set(items.map(\.name)))
    }

    @Test func wildcardPlans() {
        #expect(
            plan(#"title == "Paris*""#)
                == .text(
                    TextTest(
                        attribute: .named("title"),
                        pattern: TextPattern(parts: [.literal("Paris"), .anyRun]))))
        #expect(
            plan(#"title == "*Paris""#)
                == .text(
                    TextTest(
                        attribute: .named("title"),
                        pattern: TextPattern(parts: [.anyRun, .literal("Paris")]))))
        #expect(
            plan(#"title == "Pa*ris""#)
                == .text(
                    TextTest(
                        attribute: .named("title"),
                        pattern: TextPattern(parts: [.literal("Pa"), .anyRun, .literal("ris")]))))
    }

    @Test func wordBasedWithWildcard() {
        let items = titled("title", ["MyWindowClass", "Broken Windows", "NSWindow", "Windowpane"])
        #expect(matching(#"title == "Window*"w"#, items) == ["MyWindowClass", "Broken Windows", "Windowpane"])
    }

    @Test func everyTextAttribute() {
        let items = [
            TestItem("in-title", ["title": "Paris in spring"]),
            TestItem("in-city", ["city": "paris"]),
            TestItem("in-keywords", ["keywords": ["travel", "Paris"]]),
            TestItem("elsewhere", ["title": "London", "rating": 5]),
        ]
        for attr in ["**", "*"] {
            #expect(matching(#"\#(attr) == "Paris"wc"#, items) == ["in-title", "in-city", "in-keywords"])
            #expect(matching("\(attr) == \"*\"", items) == Set(items.map(\.name)))
        }
        #expect(
            plan(#"** == "Paris"cd"#)
                == .text(
                    TextTest(
                        attribute: .allText, pattern: TextPattern(literal: "Paris"),
                        options: [.caseInsensitive, .diacriticInsensitive])))
    }
}
