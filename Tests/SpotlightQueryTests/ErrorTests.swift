import Foundation
import QueryPlan
import SpotlightQuery
import Testing

/// Malformed queries: each fault is named with its position and what was
/// expected; no input crashes the parser.
@Suite struct ErrorTests {
    @Test func missingValueNamesThePosition() throws {
        let e = try #require(failure("title == "))
        #expect(e.code == .expectedValue)
        #expect(e.offset == 9)
        #expect(e.message == "expected a value after '==', found end of query")
        #expect(e.description == "at 9: expected a value after '==', found end of query")
        #expect(e.line == 1 && e.column == 10)
    }

    @Test func unclosedParenthesisPointsAtIt() throws {
        let e = try #require(failure("(a == 1"))
        #expect(e.code == .unbalancedParentheses)
        #expect(e.offset == 0)
        #expect(e.message.contains("'('"))

        let nested = try #require(failure(#"a == 1 && (b == 2 || (c == 3)"#))
        #expect(nested.code == .unbalancedParentheses)
        #expect(nested.offset == 10)
    }

    /// Query, offset, code, and a phrase the message must contain.
    static let cases: [(String, Int, SpotlightQueryError.Code, String)] = [
        ("a == 1)", 6, .unbalancedParentheses, "')' has no matching '('"),
        (")", 0, .expectedAttribute, "found ')'"),
        ("()", 1, .expectedAttribute, "after '(', found ')'"),
        ("", 0, .emptyQuery, "empty"),
        ("   \n ", 0, .emptyQuery, "empty"),
        (#"title == "abc"#, 9, .unterminatedString, "never closed"),
        (#"title == 'abc"#, 9, .unterminatedString, "never closed"),
        (#"title == "abc\"#, 9, .unterminatedString, "never closed"),
        (#"title == "abc"x"#, 14, .badModifier, "unknown modifier 'x'"),
        (#"title == "abc"cz"#, 15, .badModifier, "unknown modifier 'z'"),
        (#"title ==[cx] "a""#, 10, .badModifier, "unknown modifier 'x' at 10"),
        (#"title ==[c "a""#, 10, .badModifier, "expected a modifier"),
        (#"title ==[c"#, 10, .badModifier, "expected ']'"),
        (#"title "a""#, 6, .expectedOperator, #"after 'title', found '"a"'"#),
        ("title", 5, .expectedOperator, "found end of query"),
        ("title =! 3", 7, .expectedValue, "after '=', found '!'"),
        ("title == == 3", 9, .expectedValue, "after '==', found '=='"),
        ("title == )", 9, .expectedValue, "found ')'"),
        ("a == 1 &&", 9, .expectedAttribute, "after '&&', found end of query"),
        ("a == 1 ||", 9, .expectedAttribute, "after '||', found end of query"),
        ("a == 1 && || b == 2", 10, .expectedAttribute, "found '||'"),
        ("!", 1, .expectedAttribute, "after '!', found end of query"),
        ("a == 1 b == 2", 7, .unexpectedToken, "expected '&&', '||' or end of query, found 'b'"),
        ("a == 1 & b == 2", 7, .unexpectedToken, "found '&'"),
        ("(a == 1 b)", 8, .unexpectedToken, "expected '&&', '||' or ')', found 'b'"),
        (#"title == "x" cd"#, 13, .unexpectedToken, "found 'cd'"),
        ("3 == title", 0, .expectedAttribute, "found '3'"),
        ("d == $time.someday", 5, .badTimeExpression, "unknown time variable '$time.someday'"),
        ("d == $date.today", 5, .badTimeExpression, "unknown variable '$date.today'"),
        ("d == $time.today(x)", 17, .badTimeExpression, "found 'x'"),
        ("d == $time.today(1.5)", 17, .badTimeExpression, "whole number of days"),
        ("d == $time.this_week(2", 22, .badTimeExpression, "expected ')'"),
        ("d == $time.today(99999999999999999999)", 17, .badTimeExpression, "whole number"),
        ("d == $time.iso(nope)", 15, .badTimeExpression, "'nope' is not an ISO-8601 date"),
        ("d == $time.iso", 14, .badTimeExpression, "expected '('"),
        ("d == $time.iso(2026-13-01)", 15, .badTimeExpression, "not an ISO-8601 date"),
        ("d == $time.iso(2026-11-01", 25, .badTimeExpression, "expected ')'"),
        ("d == $time.today(1 2)", 17, .badTimeExpression, "found '1 2'"),
        ("d == $time.now(soon)", 15, .badTimeExpression, "number of seconds"),
        ("a == 1 &&\n\n", 11, .expectedAttribute, "found end of query"),
        (#"title < "abc""#, 8, .orderingNeedsNumberOrDate, "'<' compares numbers and dates only"),
        ("title >= abc", 9, .orderingNeedsNumberOrDate, "'>=' compares numbers and dates only"),
        (#"size > "1*""#, 7, .orderingNeedsNumberOrDate, "neither"),
        ("size < *", 7, .orderingNeedsNumberOrDate, "neither"),
        (#"InRange(title, "a", "z")"#, 15, .orderingNeedsNumberOrDate, "InRange compares numbers and dates only"),
        ("InRange(size, 1, big)", 17, .orderingNeedsNumberOrDate, "InRange"),
        ("InRange(size, 1, 2", 7, .unbalancedParentheses, "InRange"),
        ("InRange(size, 1 2)", 16, .unexpectedToken, "expected ','"),
        ("InRange(size, 1, 2 3)", 19, .unexpectedToken, "expected ')'"),
        ("InRange(size, 1,)", 16, .expectedValue, "found ')'"),
        ("InRange()", 8, .expectedAttribute, "expected an attribute name after 'InRange('"),
        ("InRange(*, 1, 2)", 8, .allTextNeedsText, "every text attribute"),
        ("* < 5", 0, .allTextNeedsText, "every text attribute"),
        ("** == $time.today", 0, .allTextNeedsText, "every text attribute"),
        (#"a == 1 &&\nb =="#, 14, .expectedValue, "after '==', found end of query"),
    ]

    @Test(arguments: cases)
    func faultsAreNamedWhereTheyAre(_ query: String, _ offset: Int, _ code: SpotlightQueryError.Code, _ phrase: String) throws {
        let query = query.replacingOccurrences(of: #"\n"#, with: "\n")
        let e = try #require(failure(query))
        #expect(e.code == code, "\(e)")
        #expect(e.offset == offset, "\(e)")
        #expect(e.message.contains(phrase), "\(e)")
        #expect(e.description == "at \(e.offset): \(e.message)")
    }

    @Test func linesAndColumns() throws {
        let e = try #require(failure("a == 1 &&\nb =="))
        #expect(e.offset == 14)
        #expect(e.line == 2)
        #expect(e.column == 5)
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let deep = String(repeating: "(", count: 100_000) + "a == 1" + String(repeating: ")", count: 100_000)
        let e = try #require(failure(deep))
        #expect(e.code == .nestingTooDeep)
        let nots = String(repeating: "!", count: 100_000) + "a == 1"
        #expect(try #require(failure(nots)).code == .nestingTooDeep)
        // Well within the limit is fine.
        let fine = String(repeating: "(", count: 50) + #"a == "1""# + String(repeating: ")", count: 50)
        #expect(plan(fine) == text("a", "1"))
    }

    @Test func longFlatQueriesParse() {
        let many = (0..<5_000).map { "a\($0) == \($0)" }.joined(separator: " || ")
        guard case .or(let terms)? = plan(many) else {
            Issue.record("expected an or")
            return
        }
        #expect(terms.count == 5_000)
    }

    @Test func extremeOffsetsAreErrorsOrPeriodsNeverCrashes() {
        for n in ["-9223372036854775808", "9223372036854775807", "100001", "-100001"] {
            #expect(failure("d == $time.today(\(n))")?.code == .badTimeExpression)
        }
        for v in ["today", "this_week", "this_month", "this_year"] {
            for n in [-100_000, 100_000] {
                check("d == $time.\(v)(\(n))")
            }
        }
        check("d == $time.now(1e300)")
        check("d > 0x" + String(repeating: "f", count: 400))
    }

    @Test func codesHaveWireNames() {
        #expect(SpotlightQueryError.Code.expectedValue.description == "expected_value")
        #expect(SpotlightQueryError.Code(wireName: "expected_value") == .expectedValue)
    }

    // MARK: Fuzz

    static let tokens = [
        "title", "kMDItemTitle", "completionDate", "*", "**", "InRange", "InRange(", "(", ")", "!", "&&", "||",
        "&", "|", "==", "=", "!=", "<", ">", "<=", ">=", ",", "\"Window\"", "\"Win*dow\"", "'it\\'s'", "\"", "'",
        "\\", "\\*", "w", "c", "cd", "wt", "x", "[", "]", "[cd]", "[q]", "42", "-1.5", "1e3", "0x1F", "0x", "1e",
        "true", "false", "$time.today", "$time.today(-10)", "$time.now(", "$time.iso(", "$time.iso(2026-11-01)",
        "$time.this_week(1)", "$time.bogus", "$", "(-1)", "2026-11-01T12:00:00Z", "é", "🇫🇷", "\n", " ", "  ", "\t",
        "\u{301}", "\"\u{301}", "#", ";", ".", "-",
    ]

    static let seeds = [
        #"title == "Window"w"#,
        #"(authorNames == "Tim"wc || authorNames == "Steve"wc) && InRange(completionDate, $time.today(-10), $time.today)"#,
        #"kMDItemTextContent ==[cd] "Pa*ris" && !(size >= 0x10) || ** == 'x\'y'"#,
        #"d == $time.iso("2026-11-01T12:00:00+02:00") && e != $time.now(-60)"#,
    ]

    func check(_ query: String) {
        let count = query.count
        do {
            _ = try parser.parse(query)
        } catch {
            #expect(error.offset >= 0 && error.offset <= count, "\(query.debugDescription): \(error)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test func randomTokenSoup() {
        var rng = SplitMix64(state: 2026_11_22)
        for _ in 0..<4_000 {
            let n = Int.random(in: 1...14, using: &rng)
            var query = ""
            for _ in 0..<n {
                query += Self.tokens.randomElement(using: &rng)!
                if Bool.random(using: &rng) { query += " " }
            }
            check(query)
        }
    }

    @Test func truncatedAndMutatedQueries() {
        var rng = SplitMix64(state: 7)
        for seed in Self.seeds {
            let chars = Array(seed)
            for cut in 0...chars.count {
                check(String(chars[..<cut]))
                check(String(chars[cut...]))
            }
            for _ in 0..<500 {
                var c = chars
                let i = Int.random(in: 0..<c.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: c.remove(at: i)
                case 1: c.insert(Self.tokens.randomElement(using: &rng)!.first ?? " ", at: i)
                default: c[i] = Self.tokens.randomElement(using: &rng)!.first ?? " "
                }
                check(String(c))
            }
        }
    }

    @Test func randomCharacters() {
        var rng = SplitMix64(state: 99)
        let alphabet: [Character] = Array(#"abcXYZ019 .-_*"'\()[]!&|=<>,$:+#é"#) + ["\u{301}", "🇫🇷", "\n"]
        for _ in 0..<2_000 {
            let n = Int.random(in: 0...24, using: &rng)
            check(String((0..<n).map { _ in alphabet.randomElement(using: &rng)! }))
        }
    }
}
