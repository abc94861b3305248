import Foundation
import Items
import PredicateQuery
import QueryPlan
import Testing

/// Every CloudKit rule that refuses a predicate, with the error's code and
/// position.
@Suite struct CloudKitRuleTests {
    static let here: JSONValue = json(#"{"latitude": 37.783, "longitude": -122.404}"#)

    struct Case: Sendable, CustomTestStringConvertible {
        var format: String
        var arguments: [JSONValue] = []
        var code: PredicateQueryError.Code
        var offset: Int
        var mentions: [String]
        var testDescription: String { format }
    }

    static let cases: [Case] = [
        Case(format: "ALL favoriteColors = 'red'", code: .allNotSupported, offset: 0, mentions: ["ALL", "nspredicate"]),
        Case(format: "name == 'a' AND ALL tags == 'x'", code: .allNotSupported, offset: 16, mentions: ["ALL"]),
        Case(format: "NOT (name == 'a' AND name == 'b')", code: .negationNotSupported, offset: 0, mentions: ["NOT", "AND"]),
        Case(format: "NOT self CONTAINS 'bob'", code: .negationNotSupported, offset: 0, mentions: ["tokenized"]),
        Case(format: "NOT allTokens TOKENMATCHES[cdl] 'bob'", code: .negationNotSupported, offset: 0, mentions: ["tokenized"]),
        Case(
            format: "NOT (ANY tokenize(%@, 'cdl') IN allTokens)", arguments: [.string("bob")], code: .negationNotSupported, offset: 0,
            mentions: ["tokenized"]),
        Case(
            format: "name == 'x' AND NOT distanceToLocation:fromLocation:(location, %@) < 5", arguments: [here],
            code: .negationNotSupported, offset: 16, mentions: ["distanceToLocation:fromLocation:"]),
        Case(format: "NOT rating BETWEEN {1, 5}", code: .negationNotSupported, offset: 0, mentions: ["BETWEEN"]),
        Case(format: "name ENDSWITH 'son'", code: .notInCloudKit, offset: 5, mentions: ["ENDSWITH", "nspredicate"]),
        Case(format: "name LIKE 'J*'", code: .notInCloudKit, offset: 5, mentions: ["LIKE", "nspredicate"]),
        Case(format: "name MATCHES 'J.*'", code: .notInCloudKit, offset: 5, mentions: ["MATCHES", "nspredicate"]),
        Case(format: "name == 'a' OR name == 'b'", code: .notInCloudKit, offset: 12, mentions: ["OR", "nspredicate"]),
        Case(format: "name == 'a' || name == 'b'", code: .notInCloudKit, offset: 12, mentions: ["||", "nspredicate"]),
        Case(format: "!(name == 'a')", code: .notInCloudKit, offset: 0, mentions: ["!", "nspredicate"]),
        Case(format: "NONE tags == 'x'", code: .notInCloudKit, offset: 0, mentions: ["NONE", "nspredicate"]),
        Case(format: "name BEGINSWITH[c] 'jo'", code: .notInCloudKit, offset: 15, mentions: ["[c]", "nspredicate"]),
        Case(format: "employee.name == 'Bob'", code: .keyPathNotSupported, offset: 0, mentions: ["employee.name", "related"]),
        Case(
            format: "rating > 1 AND %K == 'Bob'", arguments: [.string("manager.name")], code: .keyPathNotSupported, offset: 15,
            mentions: ["manager.name"]),
    ]

    @Test(arguments: cases)
    func refused(_ c: Case) {
        guard let error = parseError(c.format, c.arguments) else { return }
        #expect(error.code == c.code, "\(error)")
        #expect(error.offset == c.offset, "\(error)")
        for word in c.mentions { #expect(error.message.contains(word), "\(error.message) should mention \(word)") }
        #expect(error.description.hasPrefix("at \(c.offset): "))
    }

    /// What CloudKit refuses, the nspredicate dialect accepts (key paths aside).
    @Test(arguments: cases.filter { $0.code != .keyPathNotSupported })
    func acceptedByNSPredicate(_ c: Case) throws {
        _ = try PredicateQueryParser(dialect: .nspredicate, now: fixedNow).parse(c.format, arguments: c.arguments)
    }

    /// NOT over a single comparison is allowed, in CloudKit too.
    @Test func negatingOneComparisonIsAllowed() throws {
        let p = try PredicateQueryParser(now: fixedNow).parse("NOT name == 'a' AND NOT (rating > 3)")
        #expect(
            p
                == .and([
                    .not(.text(TextTest(attribute: .named("name"), pattern: TextPattern(literal: "a"), options: .caseInsensitive))),
                    .not(.range(RangeTest(attribute: "rating", lower: Bound(3, inclusive: false)))),
                ]))
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        var format: String
        var arguments: [JSONValue] = []
        var code: PredicateQueryError.Code
        var offset: Int
        var testDescription: String { format }
    }

    static let malformed: [Malformed] = [
        Malformed(format: "   ", code: .emptyPredicate, offset: 0),
        Malformed(format: "name == 'abc", code: .unterminatedString, offset: 8),
        Malformed(format: "name == %@", code: .argumentCount, offset: 8),
        Malformed(format: "name == 'a'", arguments: [.string("extra")], code: .argumentCount, offset: 11),
        Malformed(format: "%K == 1", arguments: [.number(3)], code: .badArgument, offset: 0),
        Malformed(format: "name 'a'", code: .expectedOperator, offset: 5),
        Malformed(format: "name ==", code: .expectedExpression, offset: 7),
        Malformed(format: "(name == 'a'", code: .unbalancedParentheses, offset: 0),
        Malformed(format: "name == 'a')", code: .unbalancedParentheses, offset: 11),
        Malformed(format: "name IN {'a', 'b'", code: .unbalancedParentheses, offset: 8),
        Malformed(format: "rating > {1, 2}", code: .typeMismatch, offset: 9),
        Malformed(format: "rating BETWEEN {1, 'high'}", code: .typeMismatch, offset: 15),
        Malformed(format: "rating == 12abc", code: .badNumber, offset: 10),
        Malformed(format: "name == other", code: .typeMismatch, offset: 8),
        Malformed(format: "name == 'a' name", code: .unexpectedToken, offset: 12),
        Malformed(format: "name ~ 'a'", code: .unexpectedToken, offset: 5),
        Malformed(format: "distanceToLocation:fromLocation:(location, %@) > 5", arguments: [here], code: .typeMismatch, offset: 47),
        Malformed(format: "distanceToLocation:fromLocation:(location, 'here') < 5", code: .typeMismatch, offset: 0),
        Malformed(format: "sizeOf(name) == 1", code: .unknownFunction, offset: 0),
        Malformed(format: "allTokens TOKENMATCHES[q] 'x'", code: .badOption, offset: 22),
        Malformed(format: "name == %@", arguments: [json(#"{"latitude": 100, "longitude": 0}"#)], code: .badArgument, offset: 8),
    ]

    @Test(arguments: malformed)
    func malformedPredicatesNameThePosition(_ m: Malformed) {
        guard let error = parseError(m.format, m.arguments) else { return }
        #expect(error.code == m.code, "\(error)")
        #expect(error.offset == m.offset, "\(error)")
    }

    @Test func keywordsInAnyCase() throws {
        let parser = PredicateQueryParser(now: fixedNow)
        #expect(try parser.parse("truepredicate") == .all)
        #expect(try parser.parse("name beginswith 'J' and ANY tags = 'x'") == parser.parse("name BEGINSWITH 'J' AND any tags = 'x'"))
        #expect(try parser.parse("tags contains 'x'") == parser.parse("tags CONTAINS 'x'"))
        // A keyword as a key needs '#'.
        #expect(
            try parser.parse("#in == 1") == .range(RangeTest(attribute: "in", lower: Bound(1, inclusive: true), upper: Bound(1, inclusive: true))))
    }
}
