/// Why a Spotlight query string was refused, and where.
///
/// A struct with a nested `Code` rather than an enum, so that new reasons can
/// be added without breaking callers that switch over the old ones. Callers
/// that only report the fault use `description`, which leads with the offset
/// because the command line and the wire protocol both promise to name the
/// position of a bad query.
package struct SpotlightQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of fault, stable across releases (its wire name is snake case).
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        package var description: String { raw }

        /// Recreates a code from its wire name; unknown names are kept as they are.
        package init(wireName: String) { self.raw = wireName }

        /// The query is empty or only white space.
        package static let emptyQuery = Code("empty_query")
        /// A character or token that cannot stand where it was found.
        package static let unexpectedToken = Code("unexpected_token")
        /// An attribute name was expected (at the start of a comparison or in `InRange`).
        package static let expectedAttribute = Code("expected_attribute")
        /// A comparison operator was expected after the attribute name.
        package static let expectedOperator = Code("expected_operator")
        /// A value was expected after an operator or in `InRange`.
        package static let expectedValue = Code("expected_value")
        /// A quoted string has no closing quote.
        package static let unterminatedString = Code("unterminated_string")
        /// A modifier letter other than `c`, `d`, `w` or `t`, or an unclosed `[`.
        package static let badModifier = Code("bad_modifier")
        /// A malformed number (`0x` without digits, an exponent without digits).
        package static let badNumber = Code("bad_number")
        /// An unknown `$time` variable, a bad offset, or a bad ISO-8601 date.
        package static let badTimeExpression = Code("bad_time_expression")
        /// `<`, `>`, `<=`, `>=` or `InRange` with a value that is neither a number nor a date.
        package static let orderingNeedsNumberOrDate = Code("ordering_needs_number_or_date")
        /// `*` / `**` (every text attribute) compared with a number, a date or an ordering.
        package static let allTextNeedsText = Code("all_text_needs_text")
        /// A `(` that is never closed or a `)` that closes nothing.
        package static let unbalancedParentheses = Code("unbalanced_parentheses")
        /// Parentheses or `!` nested deeper than the parser allows.
        package static let nestingTooDeep = Code("nesting_too_deep")
    }

    package var code: Code
    /// A sentence that names what was expected and what was found.
    package var message: String
    /// The 0-based offset, in characters (grapheme clusters), of the fault.
    package var offset: Int
    /// The 1-based line of the fault.
    package var line: Int
    /// The 1-based column of the fault, in characters.
    package var column: Int

    package init(_ code: Code, _ message: String, offset: Int, line: Int = 1, column: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
        self.line = line
        self.column = column ?? offset + 1
    }

    /// `at 9: expected a value after '==', found end of query`.
    package var description: String { "at \(offset): \(message)" }
}
