import Items
import SQLite

/// Why a shard store could not do what was asked.
///
/// A struct with a nested ``Code`` (as swift-service-lifecycle does) so that
/// new failure kinds don't break callers that switch over the ones they know.
package struct StoreError: Error, Sendable, CustomStringConvertible {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        package var description: String { raw }

        /// A query names an attribute declared `searchable: false`; such
        /// attributes are stored and returned but never indexed.
        package static let attributeNotSearchable = Code("attribute_not_searchable")
        /// A write was attempted on a store opened read-only.
        package static let readOnly = Code("read_only")
        /// The query was cancelled by its `isCancelled` callback.
        package static let cancelled = Code("cancelled")
        /// The query itself is malformed (a batch size below 1, a negative limit).
        package static let invalidQuery = Code("invalid_query")
        /// A custom attribute declaration was refused.
        package static let invalidDeclaration = Code("invalid_declaration")
        /// The shard holds more distinct attribute names than it can index (65,535).
        package static let tooManyAttributes = Code("too_many_attributes")
        /// The file was written by an incompatible version of the store.
        package static let incompatibleFormat = Code("incompatible_format")
        /// A change from a coordinator epoch below the shard's (see ``EpochFence``).
        package static let staleEpoch = Code("stale_epoch")
        /// SQLite failed; ``StoreError/underlying`` says how.
        package static let storage = Code("storage")
    }

    package var code: Code
    /// A human sentence.
    package var message: String
    /// The SQLite failure behind a `.storage` error.
    package var underlying: SQLiteError?

    package init(_ code: Code, _ message: String, underlying: SQLiteError? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    package var description: String {
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
