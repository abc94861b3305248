import CZeroMQ
import Dispatch
import Foundation
import Synchronization

// The loop of an AsyncSocket's owner thread, the only thread that calls into
// its ZeroMQ socket (see AsyncSocket.swift for the design).

// MARK: - Owner thread

/// Carries `AsyncSocket.init`'s non-escaping `configure` closure to the owner
/// thread, which calls it once and drops it before `init` returns (which
/// `withoutActuallyEscaping` checks there).
final class ConfigureHandOff: Sendable {
    private let body: Mutex<(@Sendable (Socket) throws -> Void)?>

    init(_ body: @escaping @Sendable (Socket) throws -> Void) { self.body = Mutex(body) }

    /// Calls the closure once and drops the reference to it.
    func callOnce(_ socket: Socket) throws {
        guard let body = take() else { return }
        try body(socket)
    }

    /// Drops the closure uncalled (the socket could not be created).
    func release() { _ = take() }

    private func take() -> (@Sendable (Socket) throws -> Void)? {
        body.withLock { b in
            defer { b = nil }
            return b
        }
    }
}

/// The owner thread's report of how `configure` went.
final class Startup: Sendable {
    let result = Mutex<Result<String?, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
}

/// The loop the owner thread runs. Lives and dies on that thread.
struct Owner {
    let core: Core
    let socket: Socket
    /// Sends taken from the shared queue, in order, not yet accepted by ZeroMQ.
    var pending: [Outgoing] = []

    static func run(
        core: Core, context: Context, type: SocketType, startup: Startup,
        configure: ConfigureHandOff
    ) {
        // Beside the context's I/O threads (``ThreadPlacement``); a kernel
        // that refuses (a CPU taken away since) leaves it anywhere.
        context.placement.pinCurrentThread()
        let socket: Socket
        do {
            socket = try Socket(context: context, type: type)
        } catch {
            configure.release()
            core.fail(error as? ZMQError ?? ZMQError.closed())
            core.markExited()
            startup.result.withLock { $0 = .failure(error) }
            startup.done.signal()
            return
        }
        do {
            try configure.callOnce(socket)
            let endpoint = try? socket.lastEndpoint
            startup.result.withLock { $0 = .success(endpoint?.isEmpty == false ? endpoint : nil) }
        } catch {
            socket.close()
            core.fail(error as? ZMQError ?? ZMQError.closed())
            core.markExited()
            startup.result.withLock { $0 = .failure(error) }
            startup.done.signal()
            return
        }
        startup.done.signal()

        core.ownerSocket.set(socket)
        defer { core.ownerSocket.set(nil) }
        var owner = Owner(core: core, socket: socket)
        core.ownerStarts()
        let error = owner.loop()
        // Sends the owner thread had taken: they were not accepted by ZeroMQ.
        for item in owner.pending {
            item.complete(error ?? ZMQError.closed("send"))
        }
        owner.pending = []
        // Work left by the last batch's `intercept` still goes elsewhere,
        // and so do tasks that prefer this thread.
        for job in core.takeDeferred() { job(false) }
        core.endJobs()
        if let error { core.fail(error) }
        socket.close()
        core.markExited()
    }

    /// How the last attempt to flush `pending` ended.
    enum SendState {
        /// Nothing left, or nothing blocked.
        case idle
        /// The socket has no room for any message: wait for POLLOUT.
        case waitWritable
        /// Some ROUTER/STREAM peers are full: retry after a back-off.
        case retryLater
    }

    /// Runs until close (returns nil) or a fatal socket error (returns it).
    mutating func loop() -> ZMQError? {
        let canReceive = ![.pub, .push].contains(socket.type)
        var drained = false
        var socketReadable = true
        var socketWritable = true
        var sendState = SendState.idle
        var retryDelay = 1  // milliseconds, doubled while ROUTER peers stay full

        while true {
            // Tasks that prefer this thread first, so that what they send is
            // taken in this very turn.
            core.runJobs()
            let turn = core.beginTurn(drained: drained, room: core.outboundCapacity - pending.count)
            if turn.closing { return nil }
            pending.append(contentsOf: turn.taken)

            // Send: unless the socket said it is full and has not said otherwise since.
            if !pending.isEmpty && (sendState != .waitWritable || socketWritable || !turn.taken.isEmpty) {
                do {
                    sendState = try flush()
                } catch {
                    return error
                }
            } else if pending.isEmpty {
                sendState = .idle
            }

            // Receive a batch, as long as the consumer keeps up.
            var paused = false
            var batchFull = false
            var received = 0
            if canReceive && socketReadable {
                while true {
                    guard core.mayReceive() else { paused = true; break }
                    if received == 64 { batchFull = true; break }
                    do {
                        guard let message = try socket.receive(dontWait: true) else { break }
                        received += 1
                        if let intercept = core.intercept, intercept(message) { continue }
                        core.deliver(message)
                    } catch let error as ZMQError {
                        if error.code == .interrupted { continue }
                        return error
                    } catch {
                        return ZMQError.closed("receive")
                    }
                }
            }
            // Work deferred by `intercept` (``AsyncSocket/deferUntilRead(_:)``):
            // when this batch was one message and nothing else waited, its
            // last job runs on this thread, after the others are sent away.
            let deferred = core.takeDeferred()
            if !deferred.isEmpty {
                let alone = received == 1 && !batchFull && !paused
                for job in deferred.dropLast() { job(false) }
                deferred.last!(alone)
            }
            if batchFull {
                // More may be waiting: go round again without sleeping, so that
                // queued sends get their turn between batches.
                drained = false
                socketReadable = true
                continue
            }

            if core.takeQueuedByOwner() {
                // Queued by `intercept` on this thread, without a wake-up
                // byte: take it before sleeping.
                drained = false
                continue
            }
            var events: PollEvents = []
            if canReceive && !paused { events.insert(.readable) }
            if sendState == .waitWritable { events.insert(.writable) }
            var items = [PollItem(socket, events: events), PollItem(fileDescriptor: core.wakeRead)]
            let timeout: Duration? = sendState == .retryLater ? .milliseconds(retryDelay) : nil
            let ready: Int
            do {
                ready = try Poller.poll(&items, timeout: timeout)
            } catch let error as ZMQError {
                if error.code == .interrupted { drained = false; continue }
                return error
            } catch {
                return ZMQError.closed("poll")
            }
            if sendState == .retryLater {
                retryDelay = ready == 0 ? min(retryDelay * 2, 64) : retryDelay
            } else {
                retryDelay = 1
            }
            socketReadable = items[0].ready.contains(.readable)
            socketWritable = items[0].ready.contains(.writable)
            drained = items[1].ready.contains(.readable)
            if drained { core.drainWakeups() }
        }
    }

    /// Offers every pending message to ZeroMQ without blocking and resumes the
    /// senders of those it accepted or rejected.
    mutating func flush() throws(ZMQError) -> SendState {
        let routed = socket.type.routesByFirstFrame
        var blockedPeers = Set<Data>()
        var blocked = false
        var kept: [Outgoing] = []
        var outcomes: [(Outgoing, ZMQError?)] = []
        var fatal: ZMQError?
        defer {
            for (item, error) in outcomes {
                item.complete(error)
            }
        }
        for (index, item) in pending.enumerated() {
            if fatal != nil || blocked {
                kept.append(contentsOf: pending[index...])
                break
            }
            let peer = routed ? item.frames.first : nil
            if let peer, blockedPeers.contains(peer) {
                kept.append(item)  // keeps per-peer order behind the blocked one
                continue
            }
            do {
                if try socket.send(item.frames, dontWait: true) {
                    outcomes.append((item, nil))
                } else {
                    kept.append(item)
                    if let peer { blockedPeers.insert(peer) } else { blocked = true }
                }
            } catch let error as ZMQError {
                if error.code == .terminated {
                    kept.append(item)
                    fatal = error
                } else {
                    outcomes.append((item, error))
                }
            } catch {
                outcomes.append((item, ZMQError.closed("send")))
            }
        }
        pending = kept
        if let fatal { throw fatal }
        if blocked { return .waitWritable }
        if !blockedPeers.isEmpty { return .retryLater }
        return .idle
    }
}

/// The owner thread's socket, for the jobs of tasks that run on that thread
/// (``AsyncSocket/reconnect(from:to:)``).
///
/// `@unchecked Sendable`: `socket` is set and cleared by the owner thread and
/// read only by jobs the owner thread runs (``Core/runJobs()``, between its
/// own socket calls), so one thread alone ever touches it.
final class OwnerSocket: @unchecked Sendable {
    private var socket: Socket?

    func set(_ socket: Socket?) { self.socket = socket }

    /// The socket, when called on the owner thread while its loop runs.
    func onOwnerThread(_ core: Core) -> Socket? { core.isOwnerThread ? socket : nil }
}
