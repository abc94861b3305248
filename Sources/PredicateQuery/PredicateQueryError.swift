/// Why a predicate format string was refused, and where.
///
/// Shaped like `SpotlightQueryError`: a struct with a nested `Code`, so new
/// reasons can be added without breaking callers; `description` leads with
/// the offset, which the wire protocol and the command line report.
public struct PredicateQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        public var description: String { raw }
        public init(wireName: String) { self.raw = wireName }

        /// The predicate is empty or only white space.
        public static let emptyPredicate = Code("empty_predicate")
        /// A character or token that cannot stand where it was found.
        public static let unexpectedToken = Code("unexpected_token")
        /// A value or a key was expected.
        public static let expectedExpression = Code("expected_expression")
        /// A comparison operator was expected.
        public static let expectedOperator = Code("expected_operator")
        /// A quoted string has no closing quote, or a bad escape.
        public static let unterminatedString = Code("unterminated_string")
        /// A malformed number.
        public static let badNumber = Code("bad_number")
        /// An option letter other than those the operator takes, or an unclosed `[`.
        public static let badOption = Code("bad_option")
        /// A `(` or `{` never closed, or a closing one that closes nothing.
        public static let unbalancedParentheses = Code("unbalanced_parentheses")
        /// Parentheses or `NOT` nested deeper than the parser allows.
        public static let nestingTooDeep = Code("nesting_too_deep")
        /// `%@` or `%K` with no argument left, or arguments left over.
        public static let argumentCount = Code("argument_count")
        /// An argument of the wrong kind (`%K` needs a key name, a location needs latitude and longitude…).
        public static let badArgument = Code("bad_argument")
        /// An operator or construct the CloudKit dialect lacks (`OR`, `ENDSWITH`,
        /// `LIKE`, `MATCHES`, `!`, `NONE`, options); the `nspredicate` dialect has it.
        public static let notInCloudKit = Code("not_in_cloudkit")
        /// `ALL` in the CloudKit dialect (outside `ALL tokenize(…) IN allTokens`).
        public static let allNotSupported = Code("all_not_supported")
        /// CloudKit's `NOT` over `AND`, a tokenized search, the distance function or `BETWEEN`.
        public static let negationNotSupported = Code("negation_not_supported")
        /// A key path into a related record (`employee.name`).
        public static let keyPathNotSupported = Code("key_path_not_supported")
        /// A comparison whose operands do not fit the operator (a text with `<`,
        /// two keys, a location with `==`, …).
        public static let typeMismatch = Code("type_mismatch")
        /// A `MATCHES` pattern that is not an ICU regular expression.
        public static let badRegex = Code("bad_regex")
        /// A function other than `distanceToLocation:fromLocation:`, `tokenize:using:` and `now`.
        public static let unknownFunction = Code("unknown_function")
    }

    public var code: Code
    public var message: String
    /// The 0-based offset, in characters (grapheme clusters), of the fault.
    public var offset: Int

    public init(_ code: Code, _ message: String, offset: Int) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// `at 12: CloudKit has no ENDSWITH; the nspredicate dialect has it`.
    public var description: String { "at \(offset): \(message)" }
}
