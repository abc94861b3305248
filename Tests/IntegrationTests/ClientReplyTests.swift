import Foundation
import Synchronization
import Testing
import WireProtocol
import ZeroMQ

@testable import LimelightClient

/// The Swift client against a server that answers badly: a ROUTER socket of
/// the test's own, on loopback, standing in for the coordinator.
@Suite struct ClientReplyTests {
    /// A server that answers the first request it receives with `reply(id)`.
    final class OneShotServer: @unchecked Sendable {
        // The socket is used by the server's thread only, then closed by
        // `close()` once that thread has signalled `done`.
        let context: Context
        let socket: Socket
        let endpoint: String
        let done = DispatchSemaphore(value: 0)

        convenience init(reply: @escaping @Sendable (String) -> Data) throws {
            try self.init { id, _ in reply(id) }
        }

        /// `reply` gets the request's id and the request as parsed.
        convenience init(replyTo reply: @escaping @Sendable (String, [String: Any]) -> Data) throws {
            try self.init { socket, route, id, request in _ = try? socket.send([route, reply(id, request)]) }
        }

        /// `serve` answers the first request as it likes, on the server's
        /// thread: it gets the socket, the client's route, the request's id
        /// and the request as parsed.
        init(serve: @escaping @Sendable (Socket, Data, String, [String: Any]) -> Void) throws {
            context = try Context(ioThreads: 1)
            socket = try Socket(context: context, type: .router)
            try socket.set([.linger(milliseconds: 0), .receiveTimeout(milliseconds: 60_000)])
            try socket.bind("tcp://127.0.0.1:0")
            endpoint = try socket.lastEndpoint
            Thread { [self] in
                defer { done.signal() }
                guard let frames = try? socket.receive(), frames.count >= 2,
                    let request = try? JSONSerialization.jsonObject(with: frames.last!) as? [String: Any],
                    let id = request["id"] as? String
                else { return }
                serve(socket, frames[0], id, request)
            }.start()
        }

        func close() {
            done.wait()
            socket.close()
            context.shutdown()
        }
    }

    /// A reply that names its request but cannot be decoded fails that
    /// request at once, saying why, instead of leaving it to its timeout.
    @Test func undecodableReplyFailsItsRequestAtOnce() async throws {
        let server = try OneShotServer { id in Data(#"{"v":1,"type":"pong","id":"\#(id)","shardCount":"eight"}"#.utf8) }
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let started = ContinuousClock.now
        do {
            _ = try await client.ping(timeout: .seconds(60))
            Issue.record("a pong with a text shardCount must not be accepted")
        } catch let error as ClientError {
            #expect(error.code == .unexpectedReply)
            #expect(error.message.contains("cannot read the reply to request c1"), "\(error.message)")
            #expect(error.message.contains("shardCount"), "\(error.message)")
        }
        // Had the reply been dropped, the error would be `.timeout`, after 60 s.
        print("undecodable reply failed its request after \(started.duration(to: .now))")
    }

    /// A request the server never answers fails with `.timeout` once its
    /// time is up, from the client's one sweeper (a request has no timer
    /// task of its own); had nothing kept its time, only the close after
    /// 30 s would end it, as `.closed`. (Not bounded more tightly: with the
    /// other suites running on two cores, the sweeper waited up to 4.7 s
    /// for a thread of the pool, as a timer task would.)
    @Test func anUnansweredRequestTimesOut() async throws {
        let server = try OneShotServer(serve: { _, _, _, _ in })  // reads the request, never answers
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let started = ContinuousClock.now
        let outcome: ClientError? = await withTaskGroup(of: ClientError?.self) { group in
            group.addTask {
                do { _ = try await client.ping(timeout: .milliseconds(300)); return nil } catch { return error as? ClientError }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30)); client.close(); return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        let took = started.duration(to: .now)
        #expect(outcome?.code == .timeout, "\(String(describing: outcome))")
        #expect(outcome?.message.contains("within 0.3 seconds") == true, "\(String(describing: outcome?.message))")
        #expect(took >= .milliseconds(300), "\(took)")
    }

    /// A query asks for its completion inside the last batch, and a batch
    /// that carries one ends the query's events: the batch, then the
    /// completion, with no message after it.
    @Test func aCompletionInsideTheLastBatchEndsTheQuery() async throws {
        let asked = Mutex(false)
        let server = try OneShotServer { id, request in
            asked.withLock { $0 = request["completionInBatch"] as? Bool == true }
            return Data(
                #"{"v":1,"type":"result_batch","id":"\#(id)","seq":1,"items":[{"uniqueIdentifier":"a"}],"completion":{"count":1,"failedShards":[{"shard":2,"reason":"gone"}],"cancelled":false,"elapsedMs":0.5}}"#
                    .utf8)
        }
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let handle = client.query(Body.QueryRequest(query: "title == \"a\"", limit: 1))
        // Events until the stream ends, or nil after 20 s (a client that
        // missed the completion would wait for one forever).
        let events = try await Self.events(handle, within: .seconds(20))?.get()
        #expect(asked.withLock { $0 })
        guard let events else {
            Issue.record("the query's events did not end with the completion inside its batch")
            return
        }
        guard events.count == 2, case .batch(let items) = events[0], case .completion(let c) = events[1] else {
            Issue.record("expected a batch then a completion, got \(events)")
            return
        }
        #expect(items == [.object(["uniqueIdentifier": .string("a")])])
        #expect(c.count == 1 && c.failedShards == [ShardFailure(shard: 2, reason: "gone")] && !c.cancelled)
    }

    /// What a scripted server received after its script, in order.
    final class Heard: @unchecked Sendable {
        // `messages` is guarded by `lock`.
        private let lock = NSLock()
        private var messages: [String] = []
        func append(_ m: String) { lock.withLock { messages.append(m) } }
        var all: [String] { lock.withLock { messages } }
    }

    /// A server that answers a query with `batches` result batches, one every
    /// `every`, then the completion if `complete`; then keeps the type of the
    /// next message it receives within `listen` (a cancel) in `heard`.
    static func scriptedQueryServer(
        batches: Int, every: Duration, complete: Bool, listen: Duration = .zero,
        heard: Heard = Heard()
    ) throws -> OneShotServer {
        try OneShotServer { socket, route, id, _ in
            for seq in stride(from: 1, through: batches, by: 1) {
                _ = try? socket.send([
                    route, Data(#"{"v":1,"type":"result_batch","id":"\#(id)","seq":\#(seq),"items":[{"uniqueIdentifier":"i\#(seq)"}]}"#.utf8),
                ])
                Thread.sleep(forTimeInterval: Double(every.components.seconds) + Double(every.components.attoseconds) / 1e18)
            }
            if complete {
                _ = try? socket.send([
                    route,
                    Data(#"{"v":1,"type":"completion","id":"\#(id)","count":\#(batches),"failedShards":[],"cancelled":false,"elapsedMs":1}"#.utf8),
                ])
            }
            // The first message after, if one comes within `listen` (a client
            // starved of threads by the synchronous tests running beside it
            // may take seconds to send its cancel).
            guard listen > .zero else { return }
            try? socket.set([.receiveTimeout(milliseconds: Int32(listen.components.seconds) * 1000)])
            if let more = try? socket.receive(), let m = try? JSONSerialization.jsonObject(with: more.last!) as? [String: Any] {
                heard.append("\(m["type"] ?? "?") \(m["query"] ?? "")")
            }
        }
    }

    /// The events of `handle` until they end (or the error that ended
    /// them), or nil when they have not ended within `limit`.
    static func events(_ handle: QueryHandle, within limit: Duration) async -> Result<[QueryEvent], any Error>? {
        await withTaskGroup(of: Result<[QueryEvent], any Error>?.self) { group in
            group.addTask {
                var events: [QueryEvent] = []
                do {
                    for try await e in handle.events { events.append(e) }
                    return .success(events)
                } catch { return .failure(error) }
            }
            group.addTask {
                try? await Task.sleep(for: limit); return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }

    /// A query whose server falls silent (it died, or froze) ends with a
    /// timeout once nothing has come for its `silence`, and is cancelled;
    /// it used to wait for its completion forever.
    @Test func aQueryWhoseServerFallsSilentTimesOutAndIsCancelled() async throws {
        let heard = Heard()
        let server = try Self.scriptedQueryServer(batches: 1, every: .zero, complete: false, listen: .seconds(30), heard: heard)
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let started = ContinuousClock.now
        let handle = client.query(Body.QueryRequest(query: "title == \"a\""), silence: .milliseconds(500))
        guard let outcome = await Self.events(handle, within: .seconds(60)) else {
            Issue.record("a query whose server fell silent was still waiting after 60 s")
            return
        }
        let waited = started.duration(to: .now)
        guard case .failure(let error as ClientError) = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(error.code == .timeout && error.message.contains("query \(handle.id)"), "\(error)")
        // Not before the silence; the upper bound is loose, since the suite's
        // synchronous tests can hold every thread the timer needs.
        #expect(waited >= .milliseconds(450) && waited < .seconds(45), "\(waited)")
        // The cancel reaches a server that was only slow.
        let end = ContinuousClock.now + .seconds(30)
        while heard.all.isEmpty, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(heard.all == ["cancel \(handle.id)"])
    }

    /// Batches are signs of life: a query that streams for longer than its
    /// `silence`, but never falls silent that long, ends with its completion.
    @Test func batchesKeepASlowQueryAlive() async throws {
        let server = try Self.scriptedQueryServer(batches: 5, every: .milliseconds(300), complete: true)
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let handle = client.query(Body.QueryRequest(query: "title == \"a\""), silence: .milliseconds(900))
        guard case .success(let events)? = await Self.events(handle, within: .seconds(20)) else {
            Issue.record("a query that streamed a batch every 300 ms did not end with its completion")
            return
        }
        #expect(events.count == 6)
        guard case .completion(let c)? = events.last else { Issue.record("no completion: \(events)"); return }
        #expect(c.count == 5 && !c.cancelled)
    }

    /// A query's silence watch ends with the query: a client running
    /// thousands of queries a second must not keep a minute of sleeping
    /// watches (the default silence is 60 s).
    @Test func aFinishedQueryLeavesNoWatchBehind() async throws {
        let server = try Self.scriptedQueryServer(batches: 1, every: .zero, complete: true)
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let handle = client.query(Body.QueryRequest(query: "title == \"a\""))
        guard case .success(let events)? = await Self.events(handle, within: .seconds(20)) else {
            Issue.record("the query did not end with its completion")
            return
        }
        #expect(events.count == 2)
        let end = ContinuousClock.now + .seconds(20)
        while client.pending.watches > 0, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(client.pending.watches == 0)
    }

    /// A good reply still goes through the same path.
    @Test func goodReplyIsDelivered() async throws {
        let server = try OneShotServer { id in Data(#"{"v":1,"type":"pong","id":"\#(id)","shardCount":3,"servedShards":[0,2]}"#.utf8) }
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let pong = try await client.ping(timeout: .seconds(20))
        #expect(pong.shardCount == 3)
        #expect(pong.servedShards == [0, 2])
    }
}
