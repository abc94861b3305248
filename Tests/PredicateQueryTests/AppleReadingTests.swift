import Foundation
import Items
import PredicateQuery
import QueryPlan
import Testing

/// Where GNUstep Base 1.28, the differential test's reference, departs from
/// Apple's documented `NSPredicate`, Limelight reads Apple's way; one test per
/// departure listed in ``PredicateQueryParser``'s semantics table (the oracle,
/// `GNUstepOracle/oracle.m`, corrects the same ones).
@Suite struct AppleReadingTests {
    let store: RecordStore

    init() throws {
        func record(_ id: String, _ attributes: String) -> String {
            #"{"uniqueIdentifier": "\#(id)", "domainIdentifier": "org.x", "attributes": {"contentType": "T", \#(attributes)}}"#
        }
        store = try RecordStore([
            record("bob", #""name": "Bob", "rank": 5, "colors": ["red", "green"]"#),
            record("cafe", #""name": "Café", "rank": "5", "colors": [1, 9]"#),
            record("dot", #""name": "x.y", "rank": 2.5, "colors": ["rose"]"#),
            record("q", #""name": "Jo?n", "rank": 3"#),
            record("n42", #""name": 42, "colors": []"#),
        ])
    }

    func ids(_ format: String, _ arguments: [JSONValue] = []) -> Set<String> {
        store.ids("T", format, arguments, dialect: .nspredicate)
    }

    /// GNUstep's `==` and `!=` compare with `-isEqual:`, ignoring `[c]` and `[d]`.
    @Test func equalityTakesItsOptions() {
        #expect(ids("name ==[c] 'BOB'") == ["bob"])
        #expect(ids("name ==[cd] 'CAFE'") == ["cafe"])
        #expect(ids("name !=[c] 'bob'") == ["cafe", "dot", "q", "n42"])
    }

    /// GNUstep's `[d]` only drops `NSLiteralSearch`; Apple ignores diacritics.
    @Test func diacriticOptionFoldsAccents() {
        #expect(ids("name BEGINSWITH[d] 'Cafe'") == ["cafe"])
        #expect(ids("name LIKE[d] 'caf?'") == [])
        #expect(ids("name LIKE[cd] 'caf?'") == ["cafe"])
    }

    /// GNUstep orders by `-doubleValue` (text "5" is 5, and a number against
    /// a text compares); Apple's `-compare:` orders like with like.
    @Test func orderingComparesNumbersWithNumbersOnly() {
        #expect(ids("rank < 6") == ["bob", "dot", "q"])
        #expect(ids("rank >= 5") == ["bob"])
        #expect(ids("name == '42'") == [])
        #expect(ids("name == 42") == ["n42"])
    }

    /// GNUstep's LIKE turns `?` into "none or one" and leaves regular
    /// expression characters live; Apple's `?` is exactly one character.
    @Test func likeWildcardsAreApples() {
        #expect(ids("name LIKE 'Bo?b'") == [])
        #expect(ids("name LIKE 'x?y'") == ["dot"])
        #expect(ids("name LIKE 'x.y'") == ["dot"])
        #expect(ids("name LIKE 'xzy'") == [])
        #expect(ids(#"name LIKE 'Jo\\?n'"#) == ["q"])
    }

    /// GNUstep's IN ignores `[c]`, and its `{…}` literals hold expressions, so
    /// IN and BETWEEN over them never match.
    @Test func inTakesOptionsAndLiteralLists() {
        #expect(ids("name IN[c] {'BOB', 'jo?n'}") == ["bob", "q"])
        #expect(ids("rank IN {3, 2.5}") == ["dot", "q"])
        #expect(ids("rank BETWEEN {2.5, 3}") == ["dot", "q"])
    }

    /// GNUstep parses BETWEEN as `> low AND < high`: exclusive, and under a
    /// quantifier each bound on its own (so [1, 9] is "between" 3 and 5), and
    /// a NONE or SOME before it loses its meaning.
    @Test func betweenIsOneInclusiveComparison() {
        #expect(ids("rank BETWEEN {3, 5}") == ["bob", "q"])
        #expect(ids("ANY colors BETWEEN {3, 5}") == [])
        #expect(ids("ANY colors BETWEEN {1, 1}") == ["cafe"])
        #expect(ids("NONE colors BETWEEN {1, 1}") == ["bob", "dot", "q", "n42"])
        #expect(ids("SOME colors BETWEEN {9, 10}") == ["cafe"])
    }

    /// GNUstep reads SOME as NOT ALL; Apple's SOME is ANY. Negated operators
    /// under a quantifier test each value: "some value is not red".
    @Test func quantifiersTestEachValue() {
        #expect(ids("SOME colors == 'red'") == ["bob"])
        #expect(ids("ANY colors != 'red'") == ["bob", "cafe", "dot"])
        #expect(ids("NONE colors != 'red'") == ["q", "n42"])
        #expect(ids("ALL colors != 'red'") == ["cafe", "dot", "q", "n42"])
        #expect(ids("ALL colors == nil") == ["q", "n42"])
        #expect(ids("ANY colors != nil") == ["bob", "cafe", "dot"])
    }

    /// GNUstep swaps `CONTAINS` into IN before applying ANY, and then raises;
    /// Apple tests each value.
    @Test func containsUnderAQuantifierTestsEachValue() {
        #expect(ids("ANY colors CONTAINS 'ee'") == ["bob"])
        #expect(ids("ALL colors CONTAINS[c] 'R'") == ["bob", "dot", "q", "n42"])
        #expect(ids("ALL colors CONTAINS 'R'") == ["q", "n42"])
    }

    /// GNUstep orders text by `-doubleValue` (every text is 0) and ignores
    /// `[c]` and `[d]`; Apple's `<`, `<=`, `>`, `>=` order text with
    /// `-compare:` under their options: capitals before small letters, and
    /// accented letters by their decomposition ("Café" before "Cafz").
    @Test func textOrdersByCompareWithItsOptions() {
        #expect(ids("name < 'a'") == ["bob", "cafe", "q"])
        #expect(ids("name <[c] 'c'") == ["bob"])
        #expect(ids("name <= 'Cafe'") == ["bob"])
        #expect(ids("name <=[d] 'Cafe'") == ["bob", "cafe"])
        #expect(ids("name >=[cd] 'CAFE'") == ["cafe", "dot", "q"])
        #expect(ids("name < 'Cafz'") == ["bob", "cafe"])
        // Numbers never order against text, nor text against numbers.
        #expect(ids("rank < '6'") == ["cafe"])
        #expect(ids("name > ''") == ["bob", "cafe", "dot", "q"])
    }

    /// GNUstep reads bounds given high first as an empty range; Apple's
    /// BETWEEN takes its bounds in either order.
    @Test func betweenTakesItsBoundsInEitherOrder() {
        #expect(ids("name BETWEEN {'C', 'K'}") == ["cafe", "q"])
        #expect(ids("name BETWEEN {'K', 'C'}") == ["cafe", "q"])
        #expect(ids("name BETWEEN %@", [.array([.string("Bob"), .string("Bob")])]) == ["bob"])
        #expect(ids("rank BETWEEN {5, 3}") == ["bob", "q"])
        #expect(ids("ANY colors BETWEEN {'s', 'g'}") == ["bob", "dot"])
        #expect(ids("NONE colors BETWEEN {'s', 'g'}") == ["cafe", "q", "n42"])
    }

    /// GNUstep's `-compare:` orders by UTF-16 unit, Apple's by code point:
    /// past U+FFFF ("😀", U+1F600) they part ways with characters such as
    /// the full-width "Ａ" (U+FF21).
    @Test func textOrdersByCodePoint() {
        let below = TextRangeTest(attribute: "k", upper: TextBound("\u{FF21}", inclusive: false))
        #expect(!below.contains("\u{1F600}"))
        #expect(below.contains("z"))
    }
}
