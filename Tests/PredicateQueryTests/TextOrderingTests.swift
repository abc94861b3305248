import Foundation
import Items
import PredicateQuery
import QueryPlan
import Testing

/// Text ordering (`<`, `<=`, `>`, `>=`, `BETWEEN` with text) in both
/// dialects, its plan node on the wire, and its refusals.
@Suite struct TextOrderingTests {
    let store: RecordStore

    init() throws {
        func record(_ id: String, _ attributes: String) -> String {
            #"{"uniqueIdentifier": "\#(id)", "domainIdentifier": "org.x", "attributes": {"contentType": "T", \#(attributes)}}"#
        }
        store = try RecordStore([
            record("bob", #""name": "bob", "completionDate": "2026-01-02T00:00:00Z", "label": "2026-01-02""#),
            record("Bob", #""name": "Bob", "completionDate": "2026-01-05T00:00:00Z", "label": "2026-01-05""#),
            record("cy", #""name": "Cy", "label": "later""#),
            record("n7", #""name": 7"#),
        ])
    }

    /// CloudKit's text comparisons ignore case, as its `==` does: `BETWEEN
    /// {v, v}` finds what `== v` finds.
    @Test func cloudKitOrdersTextIgnoringCase() {
        #expect(store.ids("T", "name == 'BOB'") == ["bob", "Bob"])
        #expect(store.ids("T", "name BETWEEN {'BOB', 'BOB'}") == ["bob", "Bob"])
        #expect(store.ids("T", "name < 'c'") == ["bob", "Bob"])
        #expect(store.ids("T", "name >= 'C'") == ["cy"])
        #expect(store.ids("T", "NOT name < 'c'") == ["cy", "n7"])
    }

    /// nspredicate orders by plain `compare:` unless told otherwise:
    /// every capital comes before every small letter.
    @Test func nspredicateOrdersTextAsCompareDoes() {
        #expect(store.ids("T", "name < 'c'", dialect: .nspredicate) == ["bob", "Bob", "cy"])
        #expect(store.ids("T", "name <[c] 'c'", dialect: .nspredicate) == ["bob", "Bob"])
        #expect(store.ids("T", "name > 'Bob'", dialect: .nspredicate) == ["bob", "cy"])
    }

    /// An ISO-8601 text orders dates as dates and text as text.
    @Test func anISODateTextOrdersDatesAndText() {
        #expect(store.ids("T", "completionDate < '2026-01-03'") == ["bob"])
        #expect(store.ids("T", "label < '2026-01-03'") == ["bob"])
        #expect(store.ids("T", "label BETWEEN {'2026-01-06', '2026-01-01'}", dialect: .nspredicate) == ["bob", "Bob"])
    }

    @Test func mixedBoundsAndOptionsAreRefusedWhereTheyMustBe() {
        let mixed = parseError("name BETWEEN {'a', 5}", dialect: .nspredicate)
        #expect(mixed?.code == .typeMismatch)
        #expect(mixed?.offset == 13)
        #expect(mixed?.message.contains("a number") == true)
        let options = parseError("name <[c] 'b'")
        #expect(options?.code == .notInCloudKit)
        #expect(options?.message.contains("nspredicate") == true)
        #expect(parseError("name < nil", dialect: .nspredicate)?.code == .typeMismatch)
    }

    /// The lowered plans: options on `<` are kept; BETWEEN's bounds are put
    /// in order.
    @Test func thePlans() throws {
        let ns = PredicateQueryParser(dialect: .nspredicate, now: fixedNow)
        #expect(
            try ns.parse("name <=[cd] 'M'")
                == .textRange(
                    TextRangeTest(
                        attribute: "name", upper: TextBound("M", inclusive: true),
                        options: [.caseInsensitive, .diacriticInsensitive])))
        #expect(
            try ns.parse("name BETWEEN {'m', 'a'}")
                == .textRange(
                    TextRangeTest(
                        attribute: "name", lower: TextBound("a", inclusive: true), upper: TextBound("m", inclusive: true))))
        #expect(try ns.parse("ALL name > 'a'") == .every(.textRange(TextRangeTest(attribute: "name", lower: TextBound("a", inclusive: false)))))
    }

    /// A text range survives the wire, and so do the `every` plans that
    /// quantifiers make: `ALL k IN {…}` (an `or`) and `ANY k != v` (a `not`).
    @Test func plansSurviveTheWire() throws {
        let ns = PredicateQueryParser(dialect: .nspredicate, now: fixedNow)
        for format in [
            "name BETWEEN {'a', 'm'}", "name >[d] 'é'", "name < 'z' AND name >=[cd] ''", "ALL colors IN {'red', 'blue'}",
            "ANY colors != 'red'", "NONE colors <[c] 'm'", "ALL colors BETWEEN {'a', 'm'}",
        ] {
            let plan = try ns.parse(format).simplified()
            #expect(try QueryPlan.Predicate(json: plan.json) == plan, "\(format)")
        }
        #expect(throws: PlanDecodingError.self) {
            try QueryPlan.Predicate(json: json(#"{"op": "textRange", "attribute": "name", "min": "a", "options": "w"}"#))
        }
        #expect(throws: PlanDecodingError.self) {
            try QueryPlan.Predicate(json: json(#"{"op": "every", "of": [{"op": "or", "of": [{"op": "domain", "domains": ["a"]}]}]}"#))
        }
    }
}
