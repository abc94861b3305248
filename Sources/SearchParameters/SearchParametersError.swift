/// Why a parameter search was refused: the parameter at fault and, inside a
/// `filters` expression, the character offset.
public struct SearchParametersError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        public var description: String { raw }

        /// A parameter Limelight does not know.
        public static let unknownParameter = Code("unknown_parameter")
        /// A known parameter with a value of the wrong type or out of range.
        public static let invalidParameter = Code("invalid_parameter")
        /// A `filters`, `facetFilters` or `numericFilters` expression that does not parse,
        /// or breaks one of Algolia's combination rules.
        public static let badFilter = Code("bad_filter")
    }

    public var code: Code
    public var message: String
    /// The parameter, e.g. `filters` or `facetFilters[1][0]`.
    public var parameter: String
    /// Character offset in the parameter's text, for `filters`.
    public var position: Int?

    public init(_ code: Code, _ message: String, parameter: String, position: Int? = nil) {
        self.code = code
        self.message = message
        self.parameter = parameter
        self.position = position
    }

    public var description: String {
        if let position { return "\(parameter) at \(position): \(message)" }
        return "\(parameter): \(message)"
    }
}
