import Foundation

/// Why a key was refused, or a key operation failed. The code travels as the
/// wire error's `code`, so clients can tell a missing key from a revoked one.
public struct TenancyError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The cluster requires keys and the request carries none.
        public static let keyRequired = Code("key_required")
        /// No key of the store has this value (or a secured key's signature is wrong).
        public static let invalidKey = Code("invalid_key")
        public static let keyRevoked = Code("key_revoked")
        /// A secured key past its `validUntil`.
        public static let keyExpired = Code("key_expired")
        /// The key is valid but its role does not allow the request.
        public static let forbidden = Code("forbidden")
        /// More requests per second than the key allows.
        public static let rateLimited = Code("rate_limited")
        /// A publish with more items than the key allows.
        public static let tooManyItems = Code("too_many_items")
        /// The cluster was started without a key store.
        public static let keysDisabled = Code("keys_disabled")
        /// A bad app name, role, restriction or limit.
        public static let invalidParameter = Code("invalid_parameter")
        public static let notFound = Code("not_found")
        /// The key store file could not be read or written.
        public static let storeFailed = Code("key_store_failed")
    }

    public var code: Code
    public var message: String
    /// The request field at fault, when there is one.
    public var field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(code): \(message)" }
}
