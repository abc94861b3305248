/// Why a control-plane call failed.
///
/// A conflict is not an error: a transaction whose compares fail returns
/// ``TransactionResult/succeeded`` false, and the caller reads again and
/// decides again. These are failures of the store itself.
package struct ControlPlaneError: Error, Sendable, CustomStringConvertible, Equatable {
    package enum Code: String, Sendable, Equatable {
        /// No member (etcd) or no file (local) could be reached.
        case unreachable
        /// The store answered something this client cannot read.
        case badResponse
        /// The store refused the request (an etcd error, or a malformed call).
        case refused
        /// The local file could not be read, written or locked.
        case io
        /// An endpoint or URL that is not a control plane's.
        case badEndpoint
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code.rawValue): \(message)" }
}
