import Foundation
import Items
import Synchronization
import WireProtocol
import ZeroMQ

/// Why a client call failed.
public struct ClientError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        init(_ raw: String) { self.raw = raw }
        public var description: String { raw }
        /// No answer within the timeout: the server is down or unreachable.
        public static let timeout = Code("timeout")
        /// The server answered with an error (see `server`).
        public static let server = Code("server")
        public static let closed = Code("closed")
        /// A key file that was named could not be read.
        public static let keyFile = Code("key_file")
        public static let unexpectedReply = Code("unexpected_reply")
    }

    public var code: Code
    public var message: String
    public var server: WireError?

    public init(_ code: Code, _ message: String, server: WireError? = nil) {
        self.code = code
        self.message = message
        self.server = server
    }

    public var description: String { message }
}

/// What a running query delivers: batches as shards produce them, then one completion.
public enum QueryEvent: Sendable {
    case batch([JSONValue])
    case completion(Body.Completion)
}

/// A query in flight: iterate its events; cancel it with `cancel()`.
public struct QueryHandle: Sendable {
    public let id: String
    public let events: AsyncThrowingStream<QueryEvent, Error>
    let client: LimelightClient

    public func cancel() async { await client.cancel(queryID: id) }
}

/// A Limelight client: a DEALER socket to the coordinator, with requests and
/// replies matched by id, so many requests and queries can run at once.
public final class LimelightClient: Sendable {
    public let endpoint: String
    /// The API key every request carries (docs/security.md); nil sends none,
    /// which a cluster that does not require keys serves unscoped.
    public let key: String?
    /// With several endpoints, comma-separated (standby coordinators): all of
    /// them, and the one the socket is connected to (``failOver(after:)``).
    let coordinators: Mutex<CoordinatorEndpoints>
    let context: Context
    let socket: AsyncSocket
    let pending = PendingReplies()
    let receiver: Task<Void, Never>
    /// Fails the requests whose time is up (see ``PendingReplies/expire(now:)``).
    let sweeper: Task<Void, Never>

    /// - Parameters:
    ///   - key: the API key sent with every request (docs/security.md).
    ///   - curve: the coordinator's public key and this client's key pair,
    ///     when the coordinator has CURVE on (docs/security-transport.md).
    ///   - placement: where the client's socket thread and ZeroMQ's I/O
    ///     thread run: by default together, on the CPU the client is made
    ///     on, so that handing each message between them is no wake-up of
    ///     another CPU (see ``ThreadPlacement``); `.anywhere` leaves them to
    ///     the kernel.
    public init(
        endpoint: String, key: String? = nil, curve: CurveClientKeys? = nil,
        placement: ThreadPlacement = .here
    ) throws {
        self.endpoint = endpoint
        self.key = key
        let coordinators = CoordinatorEndpoints(endpoint)
        self.coordinators = Mutex(coordinators)
        let first = coordinators.current
        context = try Context(ioThreads: 1, placement: placement)
        let pending = self.pending
        // Replies are read and handed to their waiting request or query on
        // the socket's own thread (``AsyncSocket`` `intercept`), without a
        // hop through a receiving task.
        socket = try AsyncSocket(
            context: context, type: .dealer, name: "limelight-client",
            intercept: { [endpoint] frames in
                Self.receive(frames, pending: pending, endpoint: endpoint)
                return true
            }
        ) { s in
            if let curve { try s.set(curve.socketOptions) }
            try s.set(.linger(milliseconds: 0))
            try s.set(.sendHighWaterMark(1000))
            try s.set(.receiveHighWaterMark(100_000))
            try s.set(.reconnectInterval(milliseconds: 100))
            try s.connect(first)
        }
        let socket = self.socket
        receiver = Task { [endpoint] in
            // Every message is taken by `intercept`; the stream only says
            // when the socket is closed.
            for await frames in socket.messages { Self.receive(frames, pending: pending, endpoint: endpoint) }
            pending.failAll(ClientError(.closed, "connection closed"))
        }
        // One task keeps every request's time, instead of a timer task per
        // request: starting and cancelling one wakes two of the pool's
        // threads a request, while the sweeper adds no measurable latency.
        // A request fails about ``PendingReplies/sweepPeriod`` after its
        // time at most, when the pool has a thread for the sweeper.
        sweeper = Task { [pending] in
            while !Task.isCancelled {
                let next = pending.expire(now: .now)
                try? await Task.sleep(for: min(next ?? PendingReplies.sweepPeriod, PendingReplies.sweepPeriod))
            }
        }
    }

    /// The client's socket thread as a task executor: a caller that sends
    /// requests one after another and awaits each answer (a batch job, a
    /// replay, a benchmark) runs faster inside
    /// `withTaskExecutorPreference(client.executor) { … }`. Each answer then
    /// resumes it on the thread that read the answer, and its next request
    /// leaves from there, instead of a wake-up of a pool thread and another
    /// of the socket's thread per request (``AsyncSocket/executor``). Keep
    /// the work between requests short there: while it runs, the client
    /// reads no answers for its other requests.
    public var executor: any TaskExecutor { socket.executor }

    static func receive(_ frames: [Data], pending: PendingReplies, endpoint: String) {
        guard let payload = frames.last else { return }
        let envelope: Envelope
        do throws(ProtocolError) {
            envelope = try Envelope.decode(payload, maxBytes: .max)
        } catch {
            // A reply we cannot read still answers its request: fail
            // that request now rather than leave it to its timeout.
            // Without an id there is no request to fail.
            if let id = error.id {
                pending.fail(id, ClientError(.unexpectedReply, "cannot read the reply to request \(id) from \(endpoint): \(error)"))
            }
            return
        }
        pending.deliver(envelope)
    }

    /// Hands a request to the socket without waiting (no task, no
    /// continuation per message); if it cannot be sent, the request `id`
    /// fails with the reason.
    func submit(_ id: String, _ body: Body) {
        let pending = self.pending
        let refused = socket.submit([Envelope(id: id, body: body, key: key).encoded()]) { error in
            if let error { pending.fail(id, ClientError(.closed, "could not send: \(error)")) }
        }
        if let refused { pending.fail(id, ClientError(.closed, "could not send: \(refused)")) }
    }

    deinit {
        receiver.cancel()
        sweeper.cancel()
    }

    public func close() {
        sweeper.cancel()
        socket.close()
        context.shutdown()
    }

    func newID() -> String { pending.nextID() }

    /// Sends a request and waits for its one reply; a server error becomes `ClientError(.server)`.
    public func request(_ body: Body, timeout: Duration = .seconds(30)) async throws -> Body {
        let id = newID()
        let reply: Envelope = try await withCheckedThrowingContinuation { cont in
            pending.expect(id, cont, until: .now + timeout, waiting: timeout, on: endpoint)
            submit(id, body)
        }
        if case .error(let e) = reply.body { throw ClientError(.server, e.description, server: e) }
        return reply.body
    }

    /// Asks whether the server is up and which shards it serves.
    public func ping(timeout: Duration = .seconds(3)) async throws -> Body.Pong {
        guard case .pong(let p) = try await request(.ping(Body.Empty()), timeout: timeout) else {
            throw ClientError(.unexpectedReply, "expected pong")
        }
        return p
    }

    public func publish(_ items: [JSONValue], batch: String? = nil, timeout: Duration = .seconds(120)) async throws -> Body.PublishAck {
        guard case .publishAck(let a) = try await request(.publish(Body.Publish(items: items, batch: batch)), timeout: timeout) else {
            throw ClientError(.unexpectedReply, "expected publish_ack")
        }
        return a
    }

    public func declare(_ attributes: [AttributeDeclaration]) async throws {
        guard case .declareAck = try await request(.declare(Body.Declare(attributes: attributes))) else {
            throw ClientError(.unexpectedReply, "expected declare_ack")
        }
    }

    /// Deletes by ids, by domains (subdomains too) or all items; on every
    /// shard, or only on `shards` (a shard the cluster lacks is an error).
    public func delete(ids: [String]? = nil, domains: [String]? = nil, all: Bool = false, shards: [Int]? = nil) async throws -> Int {
        guard case .deleteAck(let a) = try await request(.delete(Body.Delete(ids: ids, domains: domains, all: all ? true : nil, shards: shards)))
        else {
            throw ClientError(.unexpectedReply, "expected delete_ack")
        }
        return a.deleted
    }

    public func stats() async throws -> JSONValue {
        guard case .statsReply(let s) = try await request(.stats(Body.Empty())) else {
            throw ClientError(.unexpectedReply, "expected stats_reply")
        }
        return s.stats
    }

    /// Starts a query. Events end after the completion; a query rejected by
    /// the server (a parse error) ends the stream with `ClientError(.server)`.
    ///
    /// The client asks for the completion inside the last batch when the
    /// query's end comes with it (``Body/QueryRequest/completionInBatch``):
    /// one message fewer for most queries; the events are the same.
    ///
    /// A query never waits forever. The server completes every query by its
    /// deadline, so a stream that hears nothing for `silence` (by default the
    /// request's `deadlineMs` plus 10 seconds, or 60 seconds when it leaves
    /// the deadline to the server, whose default is 30) has lost its server:
    /// it ends with `ClientError(.timeout)`, and the query is cancelled in
    /// case the server is only slow. Without this a coordinator that died
    /// mid-query would leave the caller (and `limelight query`) waiting for good.
    public func query(_ request: Body.QueryRequest, silence: Duration? = nil) -> QueryHandle {
        let id = newID()
        let (stream, cont) = AsyncThrowingStream<QueryEvent, Error>.makeStream()
        var request = request
        if request.completionInBatch == nil { request.completionInBatch = true }
        let limit = silence ?? request.deadlineMs.map { .milliseconds($0) + .seconds(10) } ?? .seconds(60)
        pending.watching(+1)
        let watch = Task { [weak self, pending, endpoint] in
            defer { pending.watching(-1) }
            var wait = limit
            while true {
                try? await Task.sleep(for: wait)
                // Ended (the watch is cancelled when the stream ends), or not begun.
                guard !Task.isCancelled, let quiet = pending.silence(of: id) else { return }
                if quiet >= limit {
                    pending.fail(
                        id, ClientError(.timeout, "no message about query \(id) from \(endpoint) for \(limit): the server is down or unreachable"))
                    await self?.cancel(queryID: id)
                    return
                }
                wait = limit - quiet
            }
        }
        // The watch ends with its query, so finished queries leave no
        // sleeping tasks behind (a client running thousands of queries a
        // second would otherwise keep a minute's worth of them).
        cont.onTermination = { _ in watch.cancel() }
        pending.stream(id, cont)
        submit(id, .query(request))
        return QueryHandle(id: id, events: stream, client: self)
    }

    /// Runs a parameter search (Algolia's `SearchParameters` as a JSON object)
    /// and returns the response with the shards that could not answer.
    /// Malformed parameters come back as `ClientError(.server)` whose
    /// `server` names the parameter (and, for `filters`, the position).
    public func search(_ params: JSONValue, deadlineMs: Int? = nil, timeout: Duration = .seconds(30)) async throws -> Body.SearchResult {
        guard case .searchResult(let r) = try await request(.search(Body.Search(params: params, deadlineMs: deadlineMs)), timeout: timeout) else {
            throw ClientError(.unexpectedReply, "expected search_result")
        }
        return r
    }

    /// Key management (`keys`): see ``Body/Keys``.
    public func keys(_ request: Body.Keys, timeout: Duration = .seconds(30)) async throws -> Body.KeysReply {
        guard case .keysReply(let r) = try await self.request(.keys(request), timeout: timeout) else {
            throw ClientError(.unexpectedReply, "expected keys_reply")
        }
        return r
    }

    /// Asks the server to stop a query. Never waits for the server: a
    /// cancel to a coordinator that is gone is simply lost.
    public func cancel(queryID: String) async {
        _ = socket.submit([Envelope(id: newID(), body: .cancel(Body.Cancel(query: queryID)), key: key).encoded()]) { _ in }
    }
}

/// Requests waiting for replies, by id.
final class PendingReplies: Sendable {
    /// A request waiting for its one reply, and when it fails without one.
    /// The timeout's message is written only when it is thrown: formatting
    /// it (a `Duration` described) at every request would cost a measurable
    /// share of a client's CPU.
    struct Single {
        let continuation: CheckedContinuation<Envelope, Error>
        let deadline: ContinuousClock.Instant
        let waiting: Duration
        let endpoint: String

        var timeout: ClientError { ClientError(.timeout, "no answer from \(endpoint) within \(waiting)") }
    }

    /// A running query's events, and when the server last said anything about it.
    struct Stream {
        let continuation: AsyncThrowingStream<QueryEvent, Error>.Continuation
        var heard: ContinuousClock.Instant
    }

    private struct State {
        var counter = 0
        var single: [String: Single] = [:]
        var streams: [String: Stream] = [:]
        var watchCount = 0
    }
    private let state = Mutex(State())

    /// How often, at least, the client's sweeper looks for requests whose
    /// time is up.
    static let sweepPeriod = Duration.milliseconds(100)

    func nextID() -> String {
        state.withLock {
            $0.counter += 1
            return "c\($0.counter)"
        }
    }

    func expect(
        _ id: String, _ c: CheckedContinuation<Envelope, Error>, until deadline: ContinuousClock.Instant,
        waiting: Duration, on endpoint: String
    ) {
        state.withLock { $0.single[id] = Single(continuation: c, deadline: deadline, waiting: waiting, endpoint: endpoint) }
    }

    /// Fails the requests whose deadline is past; returns how long until
    /// the next one's, nil when none waits.
    func expire(now: ContinuousClock.Instant) -> Duration? {
        let (expired, next) = state.withLock { state -> ([Single], ContinuousClock.Instant?) in
            var expired: [Single] = []
            var next: ContinuousClock.Instant?
            for (id, s) in state.single {
                if s.deadline <= now {
                    expired.append(s)
                    state.single.removeValue(forKey: id)
                } else if next.map({ s.deadline < $0 }) ?? true {
                    next = s.deadline
                }
            }
            return (expired, next)
        }
        for s in expired { s.continuation.resume(throwing: s.timeout) }
        return next.map { now.duration(to: $0) }
    }

    func stream(_ id: String, _ c: AsyncThrowingStream<QueryEvent, Error>.Continuation) {
        state.withLock { $0.streams[id] = Stream(continuation: c, heard: .now) }
    }

    /// Silence watches of queries (``LimelightClient/query(_:silence:)``) not ended yet.
    var watches: Int { state.withLock { $0.watchCount } }

    func watching(_ change: Int) { state.withLock { $0.watchCount += change } }

    /// How long since the server last sent anything about the running query
    /// `id`; nil once the query has ended.
    func silence(of id: String) -> Duration? {
        state.withLock { $0.streams[id].map { ContinuousClock.now - $0.heard } }
    }

    /// What a reply does once the lock is released: resume a request, or
    /// hand a query's stream its events.
    private enum Delivery {
        case reply(Single)
        case batch(AsyncThrowingStream<QueryEvent, Error>.Continuation, [JSONValue], Body.Completion?)
        case completion(AsyncThrowingStream<QueryEvent, Error>.Continuation, Body.Completion)
        case failure(AsyncThrowingStream<QueryEvent, Error>.Continuation, WireError)
        case none
    }

    func deliver(_ env: Envelope) {
        let delivery = state.withLock { state -> Delivery in
            if let c = state.single.removeValue(forKey: env.id) { return .reply(c) }
            guard let at = state.streams.index(forKey: env.id) else { return .none }
            let s = state.streams.values[at].continuation
            switch env.body {
            case .resultBatch(let b):
                if b.completion == nil { state.streams.values[at].heard = .now } else { state.streams.removeValue(forKey: env.id) }
                return .batch(s, b.items, b.completion)
            case .completion(let c):
                state.streams.removeValue(forKey: env.id)
                return .completion(s, c)
            case .error(let e):
                state.streams.removeValue(forKey: env.id)
                return .failure(s, e)
            default:
                return .none
            }
        }
        switch delivery {
        case .reply(let c): c.continuation.resume(returning: env)
        case .batch(let s, let items, let completion):
            s.yield(.batch(items))
            if let completion {
                s.yield(.completion(completion))
                s.finish()
            }
        case .completion(let s, let c):
            s.yield(.completion(c))
            s.finish()
        case .failure(let s, let e): s.finish(throwing: ClientError(.server, e.description, server: e))
        case .none: break
        }
    }

    func fail(_ id: String, _ error: ClientError) {
        let (c, s) = state.withLock { ($0.single.removeValue(forKey: id), $0.streams.removeValue(forKey: id)) }
        c?.continuation.resume(throwing: error)
        s?.continuation.finish(throwing: error)
    }

    func failAll(_ error: ClientError) {
        let (cs, ss) = state.withLock { state -> ([Single], [Stream]) in
            defer { state.single.removeAll(); state.streams.removeAll() }
            return (Array(state.single.values), Array(state.streams.values))
        }
        cs.forEach { $0.continuation.resume(throwing: error) }
        ss.forEach { $0.continuation.finish(throwing: error) }
    }
}
