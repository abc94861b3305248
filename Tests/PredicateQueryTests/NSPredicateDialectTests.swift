import Foundation
import Items
import PredicateQuery
import QueryPlan
import Testing

/// The constructs only the `nspredicate` dialect has, each over records that
/// tell the readings apart.
@Suite struct NSPredicateDialectTests {
    static let records = [
        #"{"uniqueIdentifier": "1", "attributes": {"contentType": "Person", "name": "Johnson", "city": "Paris", "tags": ["a", "b"]}}"#,
        #"{"uniqueIdentifier": "2", "attributes": {"contentType": "Person", "name": "jackson", "city": "São Paulo", "tags": ["a"]}}"#,
        #"{"uniqueIdentifier": "3", "attributes": {"contentType": "Person", "name": "Jon", "city": "SAO PAULO", "tags": ["c"]}}"#,
        #"{"uniqueIdentifier": "4", "attributes": {"contentType": "Person", "name": "Jean\nLuc", "city": "Zürich"}}"#,
    ]

    func ids(_ format: String, _ arguments: [JSONValue] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> Set<String> {
        try RecordStore(Self.records).ids("Person", format, arguments, dialect: .nspredicate, sourceLocation: sourceLocation)
    }

    @Test func orAndBang() throws {
        #expect(try ids("name == 'Jon' OR name == 'jackson'") == ["2", "3"])
        #expect(try ids("name == 'Jon' || city == 'Paris'") == ["1", "3"])
        #expect(try ids("!(name == 'Jon')") == ["1", "2", "4"])
        #expect(try ids("! name BEGINSWITH 'J'") == ["2"])
        // AND binds tighter than OR.
        #expect(try ids("name == 'Jon' OR name == 'Johnson' AND city == 'Rome'") == ["3"])
    }

    @Test func endsWith() throws {
        #expect(try ids("name ENDSWITH 'son'") == ["1", "2"])
        #expect(try ids("name ENDSWITH 'SON'").isEmpty)
        #expect(try ids("name ENDSWITH[c] 'SON'") == ["1", "2"])
    }

    @Test func likeWithBothWildcards() throws {
        #expect(try ids("name LIKE 'J*son'") == ["1"])
        #expect(try ids("name LIKE[c] 'J*son'") == ["1", "2"])
        #expect(try ids("name LIKE 'J?n'") == ["3"])
        #expect(try ids("name LIKE 'J??n'").isEmpty)
        #expect(try ids("name LIKE '?ohn*'") == ["1"])
        #expect(try ids("name LIKE 'Jean?Luc'") == ["4"])  // ? takes a line break too
        #expect(try ids("name LIKE '*'") == ["1", "2", "3", "4"])
        #expect(try ids(#"city LIKE[cd] 's?o *'"#) == ["2", "3"])
    }

    @Test func matchesIsAWholeICURegularExpression() throws {
        #expect(try ids("name MATCHES 'J[a-z]+son'") == ["1"])
        #expect(try ids("name MATCHES 'son'").isEmpty)  // anchored: the whole value
        #expect(try ids("name MATCHES[c] 'j.*son'") == ["1", "2"])
        #expect(try ids(#"city MATCHES[cd] 'sao\\s+paulo'"#) == ["2", "3"])
        #expect(try ids(#"city MATCHES 'S\\w+ Paulo|Paris'"#) == ["1", "2"])
        let error = parseError("name MATCHES '(unclosed'", dialect: .nspredicate)
        #expect(error?.code == .badRegex)
        #expect(error?.offset == 13)
    }

    @Test func caseAndDiacriticOptions() throws {
        #expect(try ids("city == 'sao paulo'").isEmpty)
        #expect(try ids("city ==[c] 'sao paulo'") == ["3"])
        #expect(try ids("city ==[d] 'Sao Paulo'") == ["2"])
        #expect(try ids("city ==[cd] 'sao paulo'") == ["2", "3"])
        #expect(try ids("city BEGINSWITH[cd] 'zur'") == ["4"])
        #expect(try ids("city CONTAINS[cd] 'AO P'") == ["2", "3"])
        #expect(try ids("city CONTAINS 'ão P'") == ["2"])
        #expect(try ids("city CONTAINS 'ao P'").isEmpty)
    }

    @Test func allAndNone() throws {
        #expect(try ids("ALL tags == 'a'") == ["2", "4"])  // 4 has no tags: ALL holds over nothing
        #expect(try ids("ALL tags IN {'a', 'b'}") == ["1", "2", "4"])
        #expect(try ids("NONE tags == 'a'") == ["3", "4"])
        #expect(try ids("ANY tags == 'a'") == ["1", "2"])
        #expect(try ids("SOME tags == 'b'") == ["1"])
        #expect(try ids("ALL tags == 'a' AND tags != nil") == ["2"])
    }

    @Test func sameParserDialectPicksTheRules() throws {
        // == is case-sensitive in nspredicate, case-insensitive in CloudKit.
        let s = try RecordStore(Self.records)
        #expect(s.ids("Person", "name == 'jon'", dialect: .nspredicate).isEmpty)
        #expect(s.ids("Person", "name == 'jon'", dialect: .cloudkit) == ["3"])
        // CONTAINS with text: a substring in nspredicate, membership in CloudKit.
        #expect(s.ids("Person", "name CONTAINS 'son'", dialect: .nspredicate) == ["1", "2"])
        #expect(s.ids("Person", "name CONTAINS 'son'", dialect: .cloudkit).isEmpty)
        #expect(s.ids("Person", "tags CONTAINS 'a'", dialect: .cloudkit) == ["1", "2"])
    }
}
