import CZeroMQ

#if canImport(Glibc)
    import Glibc
#endif

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

    /// Where this context's I/O threads and its ``AsyncSocket``s' owner
    /// threads run (``ThreadPlacement/here`` resolved to its CPU).
    public let placement: ThreadPlacement

    /// - Parameters:
    ///   - ioThreads: ZeroMQ's I/O threads; one handles about a gigabyte per
    ///     second, so the default suits every Limelight process.
    ///   - placement: where the I/O threads and the sockets' owner threads
    ///     run (see ``ThreadPlacement``).
    /// - Throws: ``ZMQError`` `.invalidArgument` for a CPU this process may
    ///   not run on.
    public init(ioThreads: Int = 1, placement: ThreadPlacement = .anywhere) throws {
        let placement = try placement.resolved()
        guard let handle = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        if zmq_ctx_set(handle, ZMQ_IO_THREADS, Int32(clamping: ioThreads)) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_IO_THREADS, \(ioThreads))")
            zmq_ctx_term(handle)
            throw error
        }
        // The I/O threads start with the first socket, so this comes first.
        if case .cpu(let cpu) = placement, zmq_ctx_set(handle, ZMQ_THREAD_AFFINITY_CPU_ADD, Int32(cpu)) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_THREAD_AFFINITY_CPU_ADD, \(cpu))")
            zmq_ctx_term(handle)
            throw error
        }
        self.handle = handle
        self.placement = placement
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

/// Where a ``Context``'s threads run: ZeroMQ's I/O threads and the owner
/// threads of the context's ``AsyncSocket``s.
///
/// Every message crosses between the two: the I/O thread reads it off the
/// connection and wakes the owner thread (an `eventfd` write), and the owner
/// thread's answer wakes the I/O thread to write it. On one CPU a wake-up is
/// a switch of threads; across CPUs it is an interrupt to the other CPU,
/// which on a virtual machine costs more than most requests' own work.
/// Keeping the coordinator's client-socket and I/O threads on one CPU takes
/// about a fifth off a two-word search's latency on a 2-CPU virtual machine.
///
/// Only these threads are placed: work they hand to other threads (a
/// shard's searches when several wait, an indexer's writes) runs wherever
/// the kernel puts it.
public enum ThreadPlacement: Sendable, Hashable, CustomStringConvertible {
    /// Wherever the kernel puts them.
    case anywhere
    /// All on this CPU (numbered as the kernel does: 0 is the first).
    case cpu(Int)
    /// All on the CPU the thread that makes the context runs on then, if
    /// this process may run there (else anywhere).
    case here

    /// `here` as the CPU it means; a `cpu` this thread may not run on is an error.
    func resolved() throws -> ThreadPlacement {
        switch self {
        case .anywhere: return .anywhere
        case .here:
            return Self.currentCPU().map { .cpu($0) } ?? .anywhere
        case .cpu(let cpu):
            guard limelight_thread_may_run_on(Int32(clamping: cpu)) != 0 else {
                throw ZMQError(
                    code: .invalidArgument, errno: EINVAL,
                    message: "CPU \(cpu) is not one this process may run on (see its affinity: taskset -p \(getpid()))")
            }
            return self
        }
    }

    /// Pins the calling thread as this placement says (no-op for
    /// `anywhere`); false when the kernel refused.
    @discardableResult
    func pinCurrentThread() -> Bool {
        guard case .cpu(let cpu) = self else { return true }
        return limelight_pin_thread(Int32(clamping: cpu)) == 0
    }

    /// The CPU the calling thread runs on now, if it may stay there.
    public static func currentCPU() -> Int? {
        let cpu = Int(limelight_current_cpu())
        return cpu >= 0 && limelight_thread_may_run_on(Int32(cpu)) != 0 ? cpu : nil
    }

    /// The CPUs the calling thread may run on, in order.
    public static func allowedCPUs() -> [Int] {
        var cpus = [Int32](repeating: 0, count: Int(LIMELIGHT_MAX_CPUS))
        let count = cpus.withUnsafeMutableBufferPointer { limelight_allowed_cpus($0.baseAddress, Int32($0.count)) }
        return cpus.prefix(max(0, Int(count))).map(Int.init)
    }

    /// `anywhere`, `here`, or a CPU's number: the form of the processes'
    /// `--socket-cpu` flags.
    public init?(_ text: String) {
        switch text {
        case "anywhere", "any", "none": self = .anywhere
        case "here", "auto": self = .here
        default:
            guard let cpu = Int(text), cpu >= 0 else { return nil }
            self = .cpu(cpu)
        }
    }

    public var description: String {
        switch self {
        case .anywhere: "anywhere"
        case .here: "here"
        case .cpu(let cpu): String(cpu)
        }
    }
}
