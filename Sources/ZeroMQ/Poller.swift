import CZeroMQ

/// Readiness flags for ``Poller``.
public struct PollEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// A whole message can be received (a socket) / `read` will not block (an fd).
    public static let readable = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// A message can be sent without blocking (at least one peer below its
    /// high-water mark) / `write` will not block.
    public static let writable = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// An error condition on a raw file descriptor (never set for sockets).
    public static let error = PollEvents(rawValue: Int16(ZMQ_POLLERR))
}

/// One thing to wait on: a ``Socket`` or a raw file descriptor (a pipe, an
/// eventfd, a signalfd), so that one thread can sleep on both.
public struct PollItem {
    public enum Source {
        case socket(Socket)
        case fileDescriptor(Int32)
    }

    public let source: Source
    /// What to wait for.
    public var events: PollEvents
    /// What was ready after the last ``Poller/poll(timeout:)``.
    public internal(set) var ready: PollEvents = []

    public init(_ socket: Socket, events: PollEvents = .readable) {
        self.source = .socket(socket)
        self.events = events
    }

    public init(fileDescriptor: Int32, events: PollEvents = .readable) {
        self.source = .fileDescriptor(fileDescriptor)
        self.events = events
    }
}

/// Waits on several sockets and file descriptors at once (`zmq_poll`).
///
/// Not `Sendable`, like the sockets it holds: poll on the thread that owns them.
///
/// ```swift
/// var poller = Poller([PollItem(frontend), PollItem(backend)])
/// while try poller.poll(timeout: .seconds(1)) >= 0 {
///     if poller.isReadable(0) { … }
/// }
/// ```
public struct Poller {
    public var items: [PollItem]

    public init(_ items: [PollItem] = []) { self.items = items }

    /// Adds an item and returns its index for ``ready(_:)``.
    @discardableResult
    public mutating func add(_ item: PollItem) -> Int {
        items.append(item)
        return items.count - 1
    }

    /// What item `index` had ready after the last poll.
    public func ready(_ index: Int) -> PollEvents { items[index].ready }
    public func isReadable(_ index: Int) -> Bool { items[index].ready.contains(.readable) }
    public func isWritable(_ index: Int) -> Bool { items[index].ready.contains(.writable) }

    /// Waits until at least one item is ready or the timeout passes.
    ///
    /// - Parameter timeout: `nil` waits forever; `.zero` only looks.
    ///   Rounded up to whole milliseconds, ZeroMQ's resolution.
    /// - Returns: how many items are ready (0 after a timeout); each item's
    ///   ``PollItem/ready`` says which events.
    /// - Throws: `.interrupted` when a signal arrives, `.terminated` after
    ///   ``Context/shutdown()``, `.closed` if a socket in the set was closed.
    @discardableResult
    public mutating func poll(timeout: Duration? = nil) throws -> Int {
        try Self.poll(&items, timeout: timeout)
    }

    /// The same as ``poll(timeout:)`` over an array the caller keeps.
    @discardableResult
    public static func poll(_ items: inout [PollItem], timeout: Duration? = nil) throws -> Int {
        var raw = [zmq_pollitem_t]()
        raw.reserveCapacity(items.count)
        for item in items {
            switch item.source {
            case .socket(let socket):
                raw.append(
                    zmq_pollitem_t(
                        socket: try socket.live("poll"), fd: 0,
                        events: item.events.rawValue, revents: 0))
            case .fileDescriptor(let fd):
                raw.append(
                    zmq_pollitem_t(
                        socket: nil, fd: zmq_fd_t(fd),
                        events: item.events.rawValue, revents: 0))
            }
        }
        let count = try raw.withUnsafeMutableBufferPointer { buffer in
            let rc = zmq_poll(buffer.baseAddress, Int32(buffer.count), milliseconds(timeout))
            if rc < 0 { throw ZMQError.last("poll") }
            return Int(rc)
        }
        for index in items.indices {
            items[index].ready = PollEvents(rawValue: raw[index].revents)
        }
        return count
    }
}

/// `zmq_poll` wants whole milliseconds, -1 for "forever"; round up so that a
/// 0.5 ms timeout does not become a busy "look and return".
func milliseconds(_ duration: Duration?) -> Int {
    guard let duration else { return -1 }
    let (seconds, attoseconds) = duration.components
    if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
    let millis = seconds.multipliedReportingOverflow(by: 1000)
    if millis.overflow { return Int.max }
    let fraction = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int(clamping: millis.partialValue + fraction)
}
