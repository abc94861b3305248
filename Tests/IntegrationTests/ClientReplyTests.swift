import Foundation
import Synchronization
import LimelightClient
import Testing
import WireProtocol
import ZeroMQ

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
        init(replyTo reply: @escaping @Sendable (String, [String: Any]) -> Data) throws {
            context = try Context(ioThreads: 1)
            socket = try Socket(context: context, type: .router)
            try socket.set([.linger(milliseconds: 0), .receiveTimeout(milliseconds: 60_000)])
            try socket.bind("tcp://127.0.0.1:0")
            endpoint = try socket.lastEndpoint
            Thread { [self] in
                defer { done.signal() }
                guard let frames = try? socket.receive(), frames.count >= 2,
                      let request = try? JSONSerialization.jsonObject(with: frames.last!) as? [String: Any],
                      let id = request["id"] as? String else { return }
                _ = try? socket.send([frames[0], reply(id, request)])
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

    /// A query asks for its completion inside the last batch, and a batch
    /// that carries one ends the query's events: the batch, then the
    /// completion, with no message after it.
    @Test func aCompletionInsideTheLastBatchEndsTheQuery() async throws {
        let asked = Mutex(false)
        let server = try OneShotServer { id, request in
            asked.withLock { $0 = request["completionInBatch"] as? Bool == true }
            return Data(#"{"v":1,"type":"result_batch","id":"\#(id)","seq":1,"items":[{"uniqueIdentifier":"a"}],"completion":{"count":1,"failedShards":[{"shard":2,"reason":"gone"}],"cancelled":false,"elapsedMs":0.5}}"#.utf8)
        }
        defer { server.close() }
        let client = try LimelightClient(endpoint: server.endpoint)
        defer { client.close() }
        let handle = client.query(Body.QueryRequest(query: "title == \"a\"", limit: 1))
        // Events until the stream ends, or what came within 20 s (a client
        // that missed the completion would wait for one forever).
        let events = try await withThrowingTaskGroup(of: [QueryEvent]?.self) { group in
            group.addTask {
                var events: [QueryEvent] = []
                for try await e in handle.events { events.append(e) }
                return events
            }
            group.addTask { try await Task.sleep(for: .seconds(20)); return nil }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
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
