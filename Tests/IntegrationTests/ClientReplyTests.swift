import Foundation
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

        init(reply: @escaping @Sendable (String) -> Data) throws {
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
                _ = try? socket.send([frames[0], reply(id)])
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
