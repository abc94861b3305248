import CZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one error type of this module.
///
/// ZeroMQ reports failures as `errno` values, several of which are ZeroMQ's own
/// (`ETERM`, `EFSM`) and some of which mean something specific in a given
/// situation (`EHOSTUNREACH` only ever comes from a ROUTER with
/// `ZMQ_ROUTER_MANDATORY`). Callers branch on ``code`` — a small, stable set of
/// cases — and keep ``errno`` and ``message`` for logs, so that new or rare
/// errno values never need a new case to be handled.
public struct ZMQError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, in the terms a caller branches on.
    ///
    /// A struct with static members rather than an enum so that cases can be
    /// added without breaking exhaustive `switch` statements in callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        private init(_ name: String) { self.name = name }

        /// `EAGAIN`: the operation would block (non-blocking call, or a
        /// send/receive timeout expired). Most APIs here turn it into a `false`
        /// or `nil` result instead of throwing it.
        public static let again = Code("again")
        /// `ETERM`: the context was shut down; the socket is useless now and
        /// should be closed.
        public static let terminated = Code("terminated")
        /// `EHOSTUNREACH`: a ROUTER with ``SocketOption/routerMandatory(_:)``
        /// was asked to send to a routing id that has no connected peer.
        public static let hostUnreachable = Code("hostUnreachable")
        /// `EINTR`: a signal arrived while the call was blocked.
        public static let interrupted = Code("interrupted")
        /// `EINVAL`: a malformed endpoint, an option value out of range, …
        public static let invalidArgument = Code("invalidArgument")
        /// `EMSGSIZE`: the message exceeds what the transport or option allows.
        public static let messageTooLarge = Code("messageTooLarge")
        /// The socket (or ``AsyncSocket``) was closed by this process.
        public static let closed = Code("closed")
        /// `EADDRINUSE`: bind to an address somebody else holds.
        public static let addressInUse = Code("addressInUse")
        /// `EADDRNOTAVAIL` / `ENODEV`: bind to an interface this host lacks.
        public static let addressNotAvailable = Code("addressNotAvailable")
        /// `EPROTONOSUPPORT`: unknown transport in an endpoint (`foo://`).
        public static let protocolNotSupported = Code("protocolNotSupported")
        /// `ENOTSUP`: the socket type cannot do that (a SUB asked to send).
        public static let notSupported = Code("notSupported")
        /// `EFSM`: REQ/REP called out of their strict send/receive order.
        public static let invalidState = Code("invalidState")
        /// `ENOENT`: unbind/disconnect of an endpoint that is not bound/connected.
        public static let endpointNotFound = Code("endpointNotFound")
        /// `EMFILE` / `EMTHREAD`: out of file descriptors or sockets.
        public static let tooManyOpen = Code("tooManyOpen")
        /// Anything else: look at ``ZMQError/errno`` and ``ZMQError/message``.
        public static let other = Code("other")

        public var description: String { name }

        static func from(errno value: Int32) -> Code {
            switch value {
            case EAGAIN: return .again
            case ETERM: return .terminated
            case EHOSTUNREACH: return .hostUnreachable
            case EINTR: return .interrupted
            case EINVAL: return .invalidArgument
            case EMSGSIZE: return .messageTooLarge
            case ENOTSOCK: return .closed
            case EADDRINUSE: return .addressInUse
            case EADDRNOTAVAIL, ENODEV: return .addressNotAvailable
            case EPROTONOSUPPORT: return .protocolNotSupported
            case ENOTSUP: return .notSupported
            case EFSM: return .invalidState
            case ENOENT: return .endpointNotFound
            case EMFILE, EMTHREAD: return .tooManyOpen
            default: return .other
            }
        }
    }

    /// The case to branch on.
    public let code: Code
    /// The raw `errno` value, for logs and for codes that map to ``Code/other``.
    public let errno: Int32
    /// `zmq_strerror` text, or this module's own text for ``Code/closed``.
    public let message: String
    /// What was being done, e.g. `bind("tcp://nowhere:x")`: an endpoint error
    /// is useless in a log without the endpoint.
    public let operation: String?

    public init(code: Code, errno: Int32, message: String, operation: String? = nil) {
        self.code = code
        self.errno = errno
        self.message = message
        self.operation = operation
    }

    /// Builds the error from an errno value, with ZeroMQ's own text for it.
    public init(errno value: Int32, operation: String? = nil) {
        self.init(
            code: .from(errno: value), errno: value,
            message: String(cString: zmq_strerror(value)), operation: operation)
    }

    /// The error this module throws for any use of a closed socket: ZeroMQ
    /// itself would touch freed memory, so the wrappers check first.
    public static func closed(_ operation: String? = nil) -> ZMQError {
        ZMQError(code: .closed, errno: ENOTSOCK, message: "socket is closed", operation: operation)
    }

    /// Reads `zmq_errno()` right after a failed call.
    static func last(_ operation: @autoclosure () -> String? = nil) -> ZMQError {
        ZMQError(errno: zmq_errno(), operation: operation())
    }

    /// The same error, annotated with the operation that failed.
    func during(_ operation: String) -> ZMQError {
        ZMQError(code: code, errno: errno, message: message, operation: operation)
    }

    public var description: String {
        if let operation {
            return "ZMQError.\(code) in \(operation): \(message) (errno \(errno))"
        }
        return "ZMQError.\(code): \(message) (errno \(errno))"
    }
}
