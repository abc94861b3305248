/// Why a predicate format string was refused, and where.
///
/// Shaped like `SpotlightQueryError`: a struct with a nested `Code`, so new
/// reasons can be added without breaking callers; `description` leads with
/// the offset, which the wire protocol and the command line report.
package struct PredicateQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        package var description: String { raw }
        package init(wireName: String) { self.raw = wireName }

        /// The predicate is empty or only white space.
        package static let emptyPredicate = Code("empty_predicate")
        /// A character or token that cannot stand where it was found.
        package static let unexpectedToken = Code("unexpected_token")
        /// A value or a key was expected.
        package static let expectedExpression = Code("expected_expression")
        /// A comparison operator was expected.
        package static let expectedOperator = Code("expected_operator")
        /// A quoted string has no closing quote, or a bad escape.
        package static let unterminatedString = Code("unterminated_string")
        /// A malformed number.
        package static let badNumber = Code("bad_number")
        /// An option letter other than those the operator takes, or an unclosed `[`.
        package static let badOption = Code("bad_option")
        /// A `(` or `{` never closed, or a closing one that closes nothing.
        package static let unbalancedParentheses = Code("unbalanced_parentheses")
        /// Parentheses or `NOT` nested deeper than the parser allows.
        package static let nestingTooDeep = Code("nesting_too_deep")
        /// `%@` or `%K` with no argument left, or arguments left over.
        package static let argumentCount = Code("argument_count")
        /// An argument of the wrong kind (`%K` needs a key name, a location needs latitude and longitude…).
        package static let badArgument = Code("bad_argument")
        /// An operator or construct the CloudKit dialect lacks (`OR`, `ENDSWITH`,
        /// `LIKE`, `MATCHES`, `!`, `NONE`, options); the `nspredicate` dialect has it.
        package static let notInCloudKit = Code("not_in_cloudkit")
        /// `ALL` in the CloudKit dialect (outside `ALL tokenize(…) IN allTokens`).
        package static let allNotSupported = Code("all_not_supported")
        /// CloudKit's `NOT` over `AND`, a tokenized search, the distance function or `BETWEEN`.
        package static let negationNotSupported = Code("negation_not_supported")
        /// A key path into a related record (`employee.name`).
        package static let keyPathNotSupported = Code("key_path_not_supported")
        /// A comparison whose operands do not fit the operator (a text with `<`,
        /// two keys, a location with `==`, …).
        package static let typeMismatch = Code("type_mismatch")
        /// A `MATCHES` pattern that is not an ICU regular expression.
        package static let badRegex = Code("bad_regex")
        /// A function other than `distanceToLocation:fromLocation:`, `tokenize:using:` and `now`.
        package static let unknownFunction = Code("unknown_function")
    }

    package var code: Code
    package var message: String
    /// The 0-based offset, in characters (grapheme clusters), of the fault.
    package var offset: Int

    package init(_ code: Code, _ message: String, offset: Int) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// `at 12: CloudKit has no ENDSWITH; the nspredicate dialect has it`.
    package var description: String { "at \(offset): \(message)" }
}
