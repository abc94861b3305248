/// Why a parameter search was refused: the parameter at fault and, inside a
/// `filters` expression, the character offset.
package struct SearchParametersError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        package var description: String { raw }

        /// A parameter Limelight does not know.
        package static let unknownParameter = Code("unknown_parameter")
        /// A known parameter with a value of the wrong type or out of range.
        package static let invalidParameter = Code("invalid_parameter")
        /// A `filters`, `facetFilters` or `numericFilters` expression that does not parse,
        /// or breaks one of Algolia's combination rules.
        package static let badFilter = Code("bad_filter")
    }

    package var code: Code
    package var message: String
    /// The parameter, e.g. `filters` or `facetFilters[1][0]`.
    package var parameter: String
    /// Character offset in the parameter's text, for `filters`.
    package var position: Int?

    package init(_ code: Code, _ message: String, parameter: String, position: Int? = nil) {
        self.code = code
        self.message = message
        self.parameter = parameter
        self.position = position
    }

    package var description: String {
        if let position { return "\(parameter) at \(position): \(message)" }
        return "\(parameter): \(message)"
    }
}
