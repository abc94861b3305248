import CZeroMQ
import Foundation

/// A ZeroMQ socket, used from one thread at a time.
///
/// ZeroMQ sockets are not thread safe, so this class is deliberately not
/// `Sendable`: the compiler keeps it on the thread that made it. Code running
/// in Swift concurrency uses ``AsyncSocket``, which owns a `Socket` on a
/// dedicated thread. Blocking calls here block the calling thread — never call
/// them from a task on the cooperative pool.
///
/// Messages are whole multipart messages, `[Data]` or `[[UInt8]]`: ZeroMQ
/// delivers all frames of a message or none, so there is no frame-level API.
///
/// Unlike raw libzmq, a new socket has a linger of 0: closing it discards
/// messages still queued, so that a vanished peer can never make process exit
/// hang. Limelight acknowledges at the application level instead.
public final class Socket {
    /// The context this socket lives in; kept alive by the socket.
    public let context: Context
    /// The pattern chosen at creation.
    public let type: SocketType

    private var handle: UnsafeMutableRawPointer?
    /// One zmq_msg_t reused for every receive: it must not move while
    /// initialised, so it lives at a fixed heap address.
    private let message: UnsafeMutablePointer<zmq_msg_t>

    public init(context: Context, type: SocketType) throws {
        guard let handle = zmq_socket(context.handle, type.rawValue) else {
            throw ZMQError.last("zmq_socket(\(type))")
        }
        var linger: Int32 = 0
        zmq_setsockopt(handle, ZMQ_LINGER, &linger, MemoryLayout<Int32>.size)
        self.handle = handle
        self.context = context
        self.type = type
        self.message = .allocate(capacity: 1)
    }

    deinit {
        close()
        message.deallocate()
    }

    /// Whether ``close()`` has run; every other call then throws ``ZMQError/Code/closed``.
    public var isClosed: Bool { handle == nil }

    /// Closes the socket. Messages still queued are kept for the linger period
    /// (0 unless configured), after which they are dropped. Idempotent.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        zmq_close(handle)
    }

    /// The raw handle for zmq calls; throws `.closed` instead of letting
    /// libzmq touch a freed socket.
    func live(_ operation: @autoclosure () -> String) throws -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError.closed(operation()) }
        return handle
    }

    private func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
        if rc != 0 { throw ZMQError.last(operation()) }
    }

    // MARK: Endpoints

    /// Listens on an endpoint such as `tcp://127.0.0.1:7700`, `tcp://*:0`
    /// (an ephemeral port: read ``lastEndpoint`` afterwards) or `inproc://name`.
    /// Errors name the endpoint.
    public func bind(_ endpoint: String) throws {
        let h = try live("bind(\"\(endpoint)\")")
        try check(zmq_bind(h, endpoint), "bind(\"\(endpoint)\")")
    }

    /// Connects to an endpoint. For TCP this returns at once and ZeroMQ keeps
    /// (re)connecting in the background, so an absent server is not an error.
    public func connect(_ endpoint: String) throws {
        let h = try live("connect(\"\(endpoint)\")")
        try check(zmq_connect(h, endpoint), "connect(\"\(endpoint)\")")
    }

    /// Drops a connection made with ``connect(_:)``; `endpoint` must be spelt
    /// as it was given to `connect`.
    public func disconnect(_ endpoint: String) throws {
        let h = try live("disconnect(\"\(endpoint)\")")
        try check(zmq_disconnect(h, endpoint), "disconnect(\"\(endpoint)\")")
    }

    /// Stops listening on an endpoint; for a wildcard bind pass the resolved
    /// ``lastEndpoint``, as ZeroMQ requires.
    public func unbind(_ endpoint: String) throws {
        let h = try live("unbind(\"\(endpoint)\")")
        try check(zmq_unbind(h, endpoint), "unbind(\"\(endpoint)\")")
    }

    /// The endpoint of the last bind or connect, with wildcards resolved
    /// (`tcp://127.0.0.1:*` becomes `tcp://127.0.0.1:41234`): how a test or a
    /// `limelight up` learns the port the kernel picked.
    public var lastEndpoint: String {
        get throws {
            let bytes = try bytesOption(ZMQ_LAST_ENDPOINT, "lastEndpoint", capacity: 1024)
            // ZeroMQ includes the C string's terminating zero in the length.
            return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    // MARK: Options

    /// Sets one option. Most options affect only connections made afterwards.
    public func set(_ option: SocketOption) throws {
        let (name, label, value) = option.encoded
        let h = try live("set(.\(label))")
        let rc = value.withUnsafeBytes { zmq_setsockopt(h, name, $0.baseAddress, $0.count) }
        try check(rc, "set(.\(label))")
    }

    /// Sets several options in order.
    public func set(_ options: [SocketOption]) throws {
        for option in options { try set(option) }
    }

    public var sendHighWaterMark: Int32 { get throws { try int32Option(ZMQ_SNDHWM, "sendHighWaterMark") } }
    public var receiveHighWaterMark: Int32 { get throws { try int32Option(ZMQ_RCVHWM, "receiveHighWaterMark") } }
    public var linger: Int32 { get throws { try int32Option(ZMQ_LINGER, "linger") } }
    public var receiveTimeout: Int32 { get throws { try int32Option(ZMQ_RCVTIMEO, "receiveTimeout") } }
    public var sendTimeout: Int32 { get throws { try int32Option(ZMQ_SNDTIMEO, "sendTimeout") } }
    public var maxMessageSize: Int64 { get throws { try int64Option(ZMQ_MAXMSGSIZE, "maxMessageSize") } }
    public var heartbeatInterval: Int32 { get throws { try int32Option(ZMQ_HEARTBEAT_IVL, "heartbeatInterval") } }
    public var heartbeatTimeout: Int32 { get throws { try int32Option(ZMQ_HEARTBEAT_TIMEOUT, "heartbeatTimeout") } }
    public var heartbeatTTL: Int32 { get throws { try int32Option(ZMQ_HEARTBEAT_TTL, "heartbeatTTL") } }
    public var reconnectInterval: Int32 { get throws { try int32Option(ZMQ_RECONNECT_IVL, "reconnectInterval") } }
    /// The routing id set with ``SocketOption/routingID(_:)`` (empty if none).
    public var routingID: [UInt8] { get throws { try bytesOption(ZMQ_ROUTING_ID, "routingID", capacity: 256) } }

    /// Whether a message can be received / sent without blocking right now;
    /// a cheap check outside ``Poller``.
    public var events: PollEvents {
        get throws { PollEvents(rawValue: Int16(truncatingIfNeeded: try int32Option(ZMQ_EVENTS, "events"))) }
    }

    /// The file descriptor ZeroMQ signals on, for embedding into another event
    /// loop. It is edge-triggered and does not mean "readable": after it fires,
    /// read ``events`` until it no longer shows what you wait for.
    public var fileDescriptor: Int32 {
        get throws {
            let h = try live("fileDescriptor")
            var fd: zmq_fd_t = -1
            var size = MemoryLayout<zmq_fd_t>.size
            try check(zmq_getsockopt(h, ZMQ_FD, &fd, &size), "fileDescriptor")
            return Int32(fd)
        }
    }

    private func int32Option(_ name: Int32, _ label: String) throws -> Int32 {
        let h = try live(label)
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        try check(zmq_getsockopt(h, name, &value, &size), label)
        return value
    }

    private func int64Option(_ name: Int32, _ label: String) throws -> Int64 {
        let h = try live(label)
        var value: Int64 = 0
        var size = MemoryLayout<Int64>.size
        try check(zmq_getsockopt(h, name, &value, &size), label)
        return value
    }

    private func bytesOption(_ name: Int32, _ label: String, capacity: Int) throws -> [UInt8] {
        let h = try live(label)
        var buffer = [UInt8](repeating: 0, count: capacity)
        var size = capacity
        let rc = buffer.withUnsafeMutableBytes { zmq_getsockopt(h, name, $0.baseAddress, &size) }
        try check(rc, label)
        return Array(buffer.prefix(size))
    }

    // MARK: Messages

    /// Sends one multipart message.
    ///
    /// - Parameter dontWait: return `false` instead of blocking when the
    ///   message cannot be queued now (high-water mark reached, no peer yet).
    /// - Returns: `true` once ZeroMQ has queued the whole message; `false` for
    ///   `EAGAIN` (only with `dontWait`, or when a ``SocketOption/sendTimeout(milliseconds:)``
    ///   expires), in which case nothing was sent.
    /// - Throws: ``ZMQError``: `.hostUnreachable` for a ROUTER with
    ///   `routerMandatory` and an unknown routing id, `.terminated` after
    ///   ``Context/shutdown()``, `.invalidArgument` for an empty message.
    @discardableResult
    public func send(_ frames: [[UInt8]], dontWait: Bool = false) throws -> Bool {
        try sendFrames(frames, dontWait: dontWait)
    }

    /// Sends one multipart message; see ``send(_:dontWait:)-([[UInt8]],_)``.
    @discardableResult
    public func send(_ frames: [Data], dontWait: Bool = false) throws -> Bool {
        try sendFrames(frames, dontWait: dontWait)
    }

    func sendFrames<Frame: ContiguousBytes>(_ frames: [Frame], dontWait: Bool) throws -> Bool {
        let h = try live("send")
        guard !frames.isEmpty else {
            throw ZMQError(errno: EINVAL, operation: "send (a message needs at least one frame)")
        }
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = index < frames.count - 1 ? ZMQ_SNDMORE : 0
            // Only the first frame can meet a full pipe: ZeroMQ counts the
            // high-water mark in whole messages and, once the first frame is
            // queued, accepts the rest. A later EAGAIN (should it ever come) is
            // retried blocking rather than leaving half a message behind.
            if dontWait && index == 0 { flags |= ZMQ_DONTWAIT }
            while true {
                let rc = frame.withUnsafeBytes { zmq_send(h, $0.baseAddress, $0.count, flags) }
                if rc >= 0 { break }
                let errno = zmq_errno()
                if index == 0 {
                    if errno == EAGAIN { return false }
                    throw ZMQError(errno: errno, operation: "send")
                }
                if errno == EINTR { continue }
                if errno == EAGAIN && flags & ZMQ_DONTWAIT != 0 { flags &= ~ZMQ_DONTWAIT; continue }
                throw ZMQError(errno: errno, operation: "send (frame \(index) of \(frames.count))")
            }
        }
        return true
    }

    /// Receives one whole multipart message.
    ///
    /// - Parameter dontWait: return `nil` at once when no message is waiting.
    /// - Returns: the frames, or `nil` for `EAGAIN` (only with `dontWait`, or
    ///   when a ``SocketOption/receiveTimeout(milliseconds:)`` expires).
    /// - Throws: `.terminated` after ``Context/shutdown()``; `.interrupted` when
    ///   a signal interrupts the wait (nothing was consumed then).
    public func receive(dontWait: Bool = false) throws -> [Data]? {
        let h = try live("receive")
        var frames: [Data] = []
        var more = true
        while more {
            zmq_msg_init(message)
            let flags: Int32 = dontWait && frames.isEmpty ? ZMQ_DONTWAIT : 0
            if zmq_msg_recv(message, h, flags) < 0 {
                let errno = zmq_errno()
                zmq_msg_close(message)
                if frames.isEmpty {
                    if errno == EAGAIN { return nil }
                    throw ZMQError(errno: errno, operation: "receive")
                }
                // The rest of a multipart message is already here (ZeroMQ
                // delivers messages atomically), so only a signal or
                // termination can get in the way.
                if errno == EINTR { continue }
                throw ZMQError(errno: errno, operation: "receive (frame \(frames.count))")
            }
            let size = zmq_msg_size(message)
            if size == 0 {
                frames.append(Data())
            } else {
                frames.append(Data(bytes: zmq_msg_data(message), count: size))
            }
            more = zmq_msg_more(message) != 0
            zmq_msg_close(message)
        }
        return frames
    }
}

// The compiler would infer this anyway; spelt out so nobody "fixes" it.
@available(*, unavailable, message: "A ZeroMQ socket belongs to one thread; use AsyncSocket from concurrent code")
extension Socket: Sendable {}
