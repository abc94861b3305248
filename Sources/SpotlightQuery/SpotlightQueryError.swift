/// Why a Spotlight query string was refused, and where.
///
/// A struct with a nested `Code` rather than an enum, so that new reasons can
/// be added without breaking callers that switch over the old ones. Callers
/// that only report the fault use `description`, which leads with the offset
/// because the command line and the wire protocol both promise to name the
/// position of a bad query.
public struct SpotlightQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of fault, stable across releases (its wire name is snake case).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        public var description: String { raw }

        /// Recreates a code from its wire name; unknown names are kept as they are.
        public init(wireName: String) { self.raw = wireName }

        /// The query is empty or only white space.
        public static let emptyQuery = Code("empty_query")
        /// A character or token that cannot stand where it was found.
        public static let unexpectedToken = Code("unexpected_token")
        /// An attribute name was expected (at the start of a comparison or in `InRange`).
        public static let expectedAttribute = Code("expected_attribute")
        /// A comparison operator was expected after the attribute name.
        public static let expectedOperator = Code("expected_operator")
        /// A value was expected after an operator or in `InRange`.
        public static let expectedValue = Code("expected_value")
        /// A quoted string has no closing quote.
        public static let unterminatedString = Code("unterminated_string")
        /// A modifier letter other than `c`, `d`, `w` or `t`, or an unclosed `[`.
        public static let badModifier = Code("bad_modifier")
        /// A malformed number (`0x` without digits, an exponent without digits).
        public static let badNumber = Code("bad_number")
        /// An unknown `$time` variable, a bad offset, or a bad ISO-8601 date.
        public static let badTimeExpression = Code("bad_time_expression")
        /// `<`, `>`, `<=`, `>=` or `InRange` with a value that is neither a number nor a date.
        public static let orderingNeedsNumberOrDate = Code("ordering_needs_number_or_date")
        /// `*` / `**` (every text attribute) compared with a number, a date or an ordering.
        public static let allTextNeedsText = Code("all_text_needs_text")
        /// A `(` that is never closed or a `)` that closes nothing.
        public static let unbalancedParentheses = Code("unbalanced_parentheses")
        /// Parentheses or `!` nested deeper than the parser allows.
        public static let nestingTooDeep = Code("nesting_too_deep")
    }

    public var code: Code
    /// A sentence that names what was expected and what was found.
    public var message: String
    /// The 0-based offset, in characters (grapheme clusters), of the fault.
    public var offset: Int
    /// The 1-based line of the fault.
    public var line: Int
    /// The 1-based column of the fault, in characters.
    public var column: Int

    public init(_ code: Code, _ message: String, offset: Int, line: Int = 1, column: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
        self.line = line
        self.column = column ?? offset + 1
    }

    /// `at 9: expected a value after '==', found end of query`.
    public var description: String { "at \(offset): \(message)" }
}
