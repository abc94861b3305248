import Foundation
import Items
import Testing

/// Where a text stops being JSON: the first fault's line and column, and
/// what was expected there.
@Suite struct JSONSyntaxTests {
    @Test(
        arguments: [
            (#"{"query": "kiwi" "facets": []}"#, 1, 18, "expected ',' or '}' after a member, found '\"'"),
            ("{\"query\": \"kiwi\",\n \"facets\": [\"*\"] \"x\": 1}", 2, 18, "expected ',' or '}' after a member, found '\"'"),
            (#"{"a": [1 2]}"#, 1, 10, "expected ',' or ']' after an element, found '2'"),
            (#"{"a": "open}"#, 1, 7, "a string that is never closed"),
            (#"{a: 1}"#, 1, 2, "expected a member name in double quotes, found 'a'"),
            (#"{"a": 01}"#, 1, 7, "a number may not start with 0"),
            (#"{"a": "\q"}"#, 1, 8, "unknown escape \\q"),
            (#"{"é": tru}"#, 1, 7, "expected a value (an object, array, string, number, true, false or null), found 't'"),
            ("{} {}", 1, 4, "unexpected '{' after the JSON value"),
            ("", 1, 1, "expected a value, found end of text"),
        ] as [(String, Int, Int, String)])
    func faultsAreNamedWhereTheyAre(text: String, line: Int, column: Int, message: String) throws {
        #expect((try? JSONValue.parse(text)) == nil)
        let fault = try #require(JSONSyntaxError.find(in: text))
        #expect(fault.line == line)
        #expect(fault.column == column)
        #expect(fault.message == message)
    }

    @Test func wellFormedTextHasNoFault() {
        for text in [#"{"a": [1, -2.5e3, true, false, null, "x\n\u00e9"], "b": {}}"#, "[]", " 3 ", #""é""#] {
            #expect((try? JSONValue.parse(text)) != nil)
            #expect(JSONSyntaxError.find(in: text) == nil, "\(text)")
        }
    }
}
