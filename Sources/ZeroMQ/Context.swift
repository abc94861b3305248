import CZeroMQ

/// A ZeroMQ context: the I/O threads and the registry of `inproc://` endpoints.
///
/// Make one per process and share it: `inproc://` endpoints are only visible
/// inside one context, and each context starts its own I/O threads.
///
/// Lifetime: every ``Socket`` keeps its context alive, so the context is
/// terminated (`zmq_ctx_term`) only after the last socket has been closed and
/// released. Because sockets in this module default to a linger of 0, that
/// termination does not wait for undelivered messages unless a socket was
/// configured with ``SocketOption/linger(milliseconds:)``.
public final class Context: Sendable {
    // Safe without a lock: libzmq documents contexts as thread safe (every
    // zmq_ctx_* and zmq_socket call may come from any thread), the pointer is
    // immutable after init, and it is freed only in deinit, when no other
    // reference — and hence no socket — remains.
    nonisolated(unsafe) let handle: UnsafeMutableRawPointer

    /// - Parameter ioThreads: ZeroMQ's I/O threads; one handles about a
    ///   gigabyte per second, so the default suits every Limelight process.
    public init(ioThreads: Int = 1) throws {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        if zmq_ctx_set(handle, ZMQ_IO_THREADS, Int32(clamping: ioThreads)) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_IO_THREADS, \(ioThreads))")
            zmq_ctx_term(handle)
            throw error
        }
        self.handle = handle
    }

    /// Makes every blocking call on every socket of this context return
    /// ``ZMQError/Code/terminated``, and every later call fail the same way.
    ///
    /// This is how a process stops threads that sit in `receive()`: shut the
    /// context down, let each thread see `.terminated` and close its socket.
    /// ``AsyncSocket``s end their `messages` and fail pending sends with
    /// `.terminated`. Idempotent.
    public func shutdown() {
        _ = zmq_ctx_shutdown(handle)
    }

    deinit {
        // Blocks until every socket is closed, which holds here: sockets retain
        // their context, so this runs after the last one was released.
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    /// The libzmq this process actually loaded (not the headers it was built with).
    public static var version: (major: Int, minor: Int, patch: Int) {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return (Int(major), Int(minor), Int(patch))
    }

    /// Whether libzmq was built with a capability: `"curve"`, `"ipc"`,
    /// `"draft"`, `"gssapi"`, `"pgm"`, `"tipc"`, `"norm"`.
    public static func has(_ capability: String) -> Bool {
        zmq_has(capability) != 0
    }
}
