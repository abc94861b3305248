import Items
import SQLite

/// Why a shard store could not do what was asked.
///
/// A struct with a nested ``Code`` (as swift-service-lifecycle does) so that
/// new failure kinds don't break callers that switch over the ones they know.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        public var description: String { raw }

        /// A query names an attribute declared `searchable: false`; such
        /// attributes are stored and returned but never indexed.
        public static let attributeNotSearchable = Code("attribute_not_searchable")
        /// A write was attempted on a store opened read-only.
        public static let readOnly = Code("read_only")
        /// The query was cancelled by its `isCancelled` callback.
        public static let cancelled = Code("cancelled")
        /// The query itself is malformed (a batch size below 1, a negative limit).
        public static let invalidQuery = Code("invalid_query")
        /// A custom attribute declaration was refused.
        public static let invalidDeclaration = Code("invalid_declaration")
        /// The shard holds more distinct attribute names than it can index (65,535).
        public static let tooManyAttributes = Code("too_many_attributes")
        /// The file was written by an incompatible version of the store.
        public static let incompatibleFormat = Code("incompatible_format")
        /// SQLite failed; ``StoreError/underlying`` says how.
        public static let storage = Code("storage")
    }

    public var code: Code
    /// A human sentence.
    public var message: String
    /// The SQLite failure behind a `.storage` error.
    public var underlying: SQLiteError?

    public init(_ code: Code, _ message: String, underlying: SQLiteError? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        if let underlying { return "\(message): \(underlying)" }
        return message
    }
}

extension StoreError {
    /// Wraps SQLite failures; an interrupt means the query was cancelled.
    static func wrap(_ error: any Error, _ context: @autoclosure () -> String) -> any Error {
        if error is StoreError { return error }
        if let e = error as? SQLiteError {
            if e.code == .interrupt { return StoreError(.cancelled, "the query was cancelled") }
            return StoreError(.storage, context(), underlying: e)
        }
        return error
    }
}
