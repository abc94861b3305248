import Foundation
import Items
import PredicateQuery
import QueryPlan
import Testing

/// The listings of CloudKit's `CKQuery` documentation, verbatim, over records
/// that tell each reading apart.
@Suite struct CKQueryListingTests {
    static let sanFrancisco: JSONValue = json(#"{"latitude": 37.783, "longitude": -122.404}"#)

    static let records = [
        #"{"uniqueIdentifier": "e1", "attributes": {"contentType": "Employee", "name": "John Appleseed", "favoriteColor": "Red", "favoriteColors": ["red", "blue"], "location": {"latitude": 37.783, "longitude": -122.404}}}"#,
        #"{"uniqueIdentifier": "e2", "attributes": {"contentType": "Employee", "name": "Joanna Smith", "favoriteColor": "green", "favoriteColors": ["green", "yellow"], "location": {"latitude": 37.3349, "longitude": -122.009}}}"#,
        #"{"uniqueIdentifier": "e3", "attributes": {"contentType": "Employee", "name": "Bob Smith", "favoriteColor": "blue", "favoriteColors": ["Blue"], "bio": "Bob builds bridges", "location": {"latitude": 40.7128, "longitude": -74.006}}}"#,
        #"{"uniqueIdentifier": "e4", "attributes": {"contentType": "Employee", "name": "Mary Bobbins", "favoriteColor": "yellow", "bio": "the smiths' neighbour"}}"#,
        #"{"uniqueIdentifier": "e5", "attributes": {"contentType": "Employee", "name": "joseph Ng", "favoriteColor": "RED", "favoriteColors": ["RED"]}}"#,
        #"{"uniqueIdentifier": "e6", "attributes": {"contentType": "Employee", "name": "Zoë", "bio": "Bób SMITH was here"}}"#,
        #"{"uniqueIdentifier": "p1", "attributes": {"contentType": "Party", "name": "Jo's red party, bob", "favoriteColor": "red", "favoriteColors": ["red"], "location": {"latitude": 37.783, "longitude": -122.404}}}"#,
        #"{"uniqueIdentifier": "t1", "attributes": {"contentType": "Task", "title": "Review", "employee": "e1"}}"#,
        #"{"uniqueIdentifier": "t2", "attributes": {"contentType": "Task", "title": "Plan", "employee": {"recordName": "e2"}}}"#,
        #"{"uniqueIdentifier": "t3", "attributes": {"contentType": "Task", "title": "Ship", "employee": {"recordName": "e1", "action": "none"}}}"#,
        #"{"uniqueIdentifier": "t4", "attributes": {"contentType": "Task", "title": "Test", "employee": "E1"}}"#,
    ]

    @Test func matchingAReference() throws {
        let s = try RecordStore(Self.records)
        let employeeID = json(#"{"recordName": "e1"}"#)
        // A reference compares by record identifier, exactly (t4's "E1" is another record).
        #expect(s.ids("Task", "employee == %@", [employeeID]) == ["t1", "t3"])
        #expect(s.ids("Task", "employee == %@", [json(#"{"recordName": "e2"}"#)]) == ["t2"])
        #expect(s.ids("Employee", "recordID == %@", [json(#"{"recordName": "e2"}"#)]) == ["e2"])
        #expect(s.ids("Employee", "recordID IN %@", [json(#"["e2", {"recordName": "e3"}, "t1"]"#)]) == ["e2", "e3"])
    }

    @Test func matchingAFieldValueFourWays() throws {
        let s = try RecordStore(Self.records)
        let expected: Set<String> = ["e1", "e5"]  // "Red" and "RED": CloudKit's == ignores case
        #expect(s.ids("Employee", "favoriteColor == 'red'") == expected)
        #expect(s.ids("Employee", "favoriteColor == %@", [.string("red")]) == expected)
        #expect(s.ids("Employee", "%K == %@", [.string("favoriteColor"), .string("red")]) == expected)
        #expect(s.ids("Employee", "%K == 'red'", [.string("favoriteColor")]) == expected)
    }

    @Test func matchingOneOrMoreValues() throws {
        let s = try RecordStore(Self.records)
        #expect(s.ids("Employee", "ANY favoriteColors = 'red'") == ["e1", "e5"])
        #expect(s.ids("Employee", "favoriteColors CONTAINS 'red'") == ["e1", "e5"])
        #expect(s.ids("Employee", "favoriteColor IN {'red', 'green'}") == ["e1", "e2", "e5"])
        #expect(s.ids("Employee", "ANY {'red', 'green'} = favoriteColor") == ["e1", "e2", "e5"])
        #expect(s.ids("Employee", "'yellow' IN favoriteColors") == ["e2"])
    }

    @Test func matchingAFieldThatStartsWithAString() throws {
        let s = try RecordStore(Self.records)
        // Case-sensitive: "joseph" does not begin with "Jo".
        #expect(s.ids("Employee", "name BEGINSWITH %@", [.string("Jo")]) == ["e1", "e2"])
    }

    @Test func matchingTokens() throws {
        let s = try RecordStore(Self.records)
        // "Bobbins" is not the token "bob"; "Bób" is (diacritics ignored).
        #expect(s.ids("Employee", "self contains 'bob'") == ["e3", "e6"])
        #expect(s.ids("Employee", "self CONTAINS 'BOB'") == ["e3", "e6"])
    }

    @Test func matchingSeveralTokens() throws {
        let s = try RecordStore(Self.records)
        #expect(s.ids("Employee", "self contains 'bob' AND self contains 'smith'") == ["e3", "e6"])
        #expect(s.ids("Employee", "allTokens TOKENMATCHES[cdl] %@", [.string("bob smith")]) == ["e3", "e6"])
        #expect(s.ids("Employee", "ALL tokenize(%@, 'Cdl') IN allTokens", [.string("bob smith")]) == ["e3", "e6"])
        // Any of the tokens: Joanna Smith too.
        #expect(s.ids("Employee", "self contains 'bob smith'") == ["e2", "e3", "e6"])
        #expect(s.ids("Employee", "ANY tokenize:using:(%@, 'cdl') IN allTokens", [.string("bob smith")]) == ["e2", "e3", "e6"])
        // Stop words are not searched for.
        #expect(s.ids("Employee", "self contains 'the bob'") == ["e3", "e6"])
        #expect(s.ids("Employee", "self contains 'the'").isEmpty)
    }

    @Test func matchingLocationsWithinARadius() throws {
        let s = try RecordStore(Self.records)
        let loc = Self.sanFrancisco
        // Cupertino is about 62 km from San Francisco, New York 4,100 km.
        #expect(s.ids("Employee", "distanceToLocation:fromLocation:(location, %@) < 100", [loc]) == ["e1", "e2"])
        #expect(s.ids("Employee", "distanceToLocation:fromLocation:(location, %@) < 10", [loc]) == ["e1"])
        #expect(s.ids("Employee", "distanceToLocation:fromLocation:(location, %@) < 5000", [loc]) == ["e1", "e2", "e3"])
    }

    @Test func retrievingAllRecordsOfAType() throws {
        let s = try RecordStore(Self.records)
        #expect(s.ids("Employee", "TRUEPREDICATE") == ["e1", "e2", "e3", "e4", "e5", "e6"])
        #expect(s.ids("Task", "TRUEPREDICATE") == ["t1", "t2", "t3", "t4"])
        #expect(s.ids("Employee", "FALSEPREDICATE").isEmpty)
        #expect(s.ids("employee", "TRUEPREDICATE").isEmpty)  // record types are exact
    }

    @Test func comparisonsAndDates() throws {
        let s = try RecordStore(
            [
                #"{"uniqueIdentifier": "a", "attributes": {"contentType": "Event", "rating": 3, "start": "2026-11-01T00:00:00Z", "done": true}}"#,
                #"{"uniqueIdentifier": "b", "attributes": {"contentType": "Event", "rating": 5, "start": "2026-12-01T00:00:00Z", "done": false}}"#,
                #"{"uniqueIdentifier": "c", "attributes": {"contentType": "Event", "rating": 1}}"#,
            ].map { $0.replacingOccurrences(of: #""start": "#, with: #""startDate": "#) })
        #expect(s.ids("Event", "rating >= 3") == ["a", "b"])
        #expect(s.ids("Event", "rating => 3 && rating =< 4") == ["a"])
        #expect(s.ids("Event", "rating > 1 AND rating < 5") == ["a"])
        #expect(s.ids("Event", "rating <> 3") == ["b", "c"])
        #expect(s.ids("Event", "rating != 3") == ["b", "c"])
        #expect(s.ids("Event", "rating BETWEEN {1, 3}") == ["a", "c"])
        #expect(s.ids("Event", "3 < rating") == ["b"])
        #expect(s.ids("Event", "startDate < now") == ["a"])
        #expect(s.ids("Event", "startDate > NOW()") == ["b"])
        #expect(s.ids("Event", "startDate > %@", [json(#"{"date": "2026-11-15T00:00:00Z"}"#)]) == ["b"])
        #expect(s.ids("Event", "startDate < '2026-11-15T00:00:00Z'") == ["a"])
        #expect(s.ids("Event", "done == YES") == ["a"])
        #expect(s.ids("Event", "done = no") == ["b"])
        #expect(s.ids("Event", "done == TRUE OR done == FALSE", dialect: .nspredicate) == ["a", "b"])
        #expect(s.ids("Event", "startDate == nil") == ["c"])
        #expect(s.ids("Event", "startDate != NULL") == ["a", "b"])
        #expect(s.ids("Event", "rating == %@", [.null]).isEmpty)
        #expect(s.ids("Event", #"rating == 3 aNd NoT rating == 5"#) == ["a"])
    }

    @Test func literalsAndEscapes() throws {
        let s = try RecordStore([
            #"{"uniqueIdentifier": "q", "attributes": {"contentType": "Note", "title": "it's \"quoted\"\n"}}"#,
            #"{"uniqueIdentifier": "r", "attributes": {"contentType": "Note", "title": "Straße", "size": 255}}"#,
        ])
        #expect(s.ids("Note", #"title == 'it\'s "quoted"\n'"#) == ["q"])
        #expect(s.ids("Note", #"title == "it's \"quoted\"\n""#) == ["q"])
        #expect(s.ids("Note", #"title == "Stra\u00dfe""#) == ["r"])
        #expect(s.ids("Note", "size == 0xFF") == ["r"])
        #expect(s.ids("Note", "size == 2.55e2") == ["r"])
        #expect(s.ids("Note", "size IN {1, 255}") == ["r"])
        #expect(s.ids("Note", "#size > -1") == ["r"])
    }
}
