import Foundation

/// Why a key was refused, or a key operation failed. The code travels as the
/// wire error's `code`, so clients can tell a missing key from a revoked one.
package struct TenancyError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(_ rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// The cluster requires keys and the request carries none.
        package static let keyRequired = Code("key_required")
        /// No key of the store has this value (or a secured key's signature is wrong).
        package static let invalidKey = Code("invalid_key")
        package static let keyRevoked = Code("key_revoked")
        /// A secured key past its `validUntil`.
        package static let keyExpired = Code("key_expired")
        /// The key is valid but its role does not allow the request.
        package static let forbidden = Code("forbidden")
        /// More requests per second than the key allows.
        package static let rateLimited = Code("rate_limited")
        /// A publish with more items than the key allows.
        package static let tooManyItems = Code("too_many_items")
        /// The cluster was started without a key store.
        package static let keysDisabled = Code("keys_disabled")
        /// A bad app name, role, restriction or limit.
        package static let invalidParameter = Code("invalid_parameter")
        package static let notFound = Code("not_found")
        /// The key store file could not be read or written.
        package static let storeFailed = Code("key_store_failed")

        /// The codes that refuse a request for its key (authentication or
        /// authorization), as opposed to its content: clients tell them apart
        /// (the CLI exits 6 for these).
        package static let keyRefusals: Set<Code> = [.keyRequired, .invalidKey, .keyRevoked, .keyExpired, .forbidden, .keysDisabled]
    }

    package var code: Code
    package var message: String
    /// The request field at fault, when there is one.
    package var field: String?

    package init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    package var description: String { "\(code): \(message)" }
}
