/// Why an item (or one of its fields) was rejected.
///
/// A struct with a nested `Code` rather than an enum, so new reasons can be
/// added without breaking callers that switch over them.
public struct ItemError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        public var description: String { raw }

        public static let notAnObject = Code("not_an_object")
        public static let missingIdentifier = Code("missing_identifier")
        public static let invalidIdentifier = Code("invalid_identifier")
        public static let invalidDomain = Code("invalid_domain")
        public static let invalidDate = Code("invalid_date")
        public static let wrongType = Code("wrong_type")
        public static let valueTooLong = Code("value_too_long")
        public static let tooManyValues = Code("too_many_values")
        public static let invalidAttributeName = Code("invalid_attribute_name")
        public static let invalidEntity = Code("invalid_entity")
        public static let invalidJSON = Code("invalid_json")
        public static let invalidLocation = Code("invalid_location")

        /// Recreates a code from its wire name; unknown names are kept as they are.
        public init(wireName: String) { self.raw = wireName }
    }

    public var code: Code
    /// A human sentence naming what was wrong.
    public var message: String
    /// The dotted path of the offending field (`attributes.completionDate`), if any.
    public var field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String {
        if let field { return "\(field): \(message)" }
        return message
    }
}
