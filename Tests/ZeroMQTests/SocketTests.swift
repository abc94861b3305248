import Foundation
import Testing

@testable import ZeroMQ

@Suite("Socket (blocking, one thread)")
struct SocketTests {
    @Test func versionAndCapabilities() {
        let version = Context.version
        #expect(version.major == 4)
        #expect(version.minor >= 3)
        // Debian's libzmq5 is built with libsodium (CURVE) and IPC.
        #expect(Context.has("ipc"))
        #expect(!Context.has("no-such-capability"))
    }

    @Test func dealerRouterMultipartRoundTripOverTCP() throws {
        let context = try Context()
        let (router, endpoint) = try bound(context, .router)
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        #expect(!endpoint.hasSuffix(":*") && !endpoint.hasSuffix(":0"))

        let dealer = try connected(context, .dealer, to: endpoint, options: [.routingID(bytes("worker-1"))])
        #expect(try dealer.routingID == bytes("worker-1"))
        #expect(try dealer.send([bytes("header"), [], bytes("body")]))

        let request = try #require(try router.receive())
        #expect(texts(request) == ["worker-1", "header", "", "body"])

        #expect(try router.send([request[0], data("reply"), Data(repeating: 7, count: 100_000)]))
        let reply = try #require(try dealer.receive())
        #expect(reply.count == 2)
        #expect(text(reply[0]) == "reply")
        #expect(reply[1] == Data(repeating: 7, count: 100_000))
    }

    @Test func routerAddressesEachPeerByItsRoutingID() throws {
        let context = try Context()
        let (router, endpoint) = try bound(context, .router)
        let alpha = try connected(context, .dealer, to: endpoint, options: [.routingID(bytes("alpha"))])
        let beta = try connected(context, .dealer, to: endpoint, options: [.routingID(bytes("beta"))])
        let anonymous = try connected(context, .dealer, to: endpoint)

        try alpha.send([bytes("from alpha")])
        try beta.send([bytes("from beta")])
        try anonymous.send([bytes("from anonymous")])

        var senders: [String: Data] = [:]
        for _ in 0..<3 {
            let message = try #require(try router.receive())
            senders[text(message[1])] = message[0]
        }
        #expect(senders["from alpha"].map(text) == "alpha")
        #expect(senders["from beta"].map(text) == "beta")
        // ZeroMQ's generated ids are 5 bytes starting with a zero byte.
        let generated = try #require(senders["from anonymous"])
        #expect(generated.count == 5 && generated.first == 0)

        // Reply in the opposite order: each reply reaches only its peer.
        try router.send([generated, data("to anonymous")])
        try router.send([data("beta"), data("to beta")])
        try router.send([data("alpha"), data("to alpha")])
        #expect(texts(try alpha.receive()) == ["to alpha"])
        #expect(texts(try beta.receive()) == ["to beta"])
        #expect(texts(try anonymous.receive()) == ["to anonymous"])
        #expect(try alpha.receive(dontWait: true) == nil)
    }

    @Test func routerMandatoryReportsUnknownPeer() throws {
        let context = try Context()
        let (router, endpoint) = try bound(context, .router, options: [.routerMandatory(true)])
        #expect(zmqCode { try router.send([bytes("nobody"), bytes("hello")]) } == .hostUnreachable)

        // The socket is still usable, and known peers are reachable.
        let dealer = try connected(context, .dealer, to: endpoint, options: [.routingID(bytes("somebody"))])
        try dealer.send([bytes("hi")])
        _ = try #require(try router.receive())
        #expect(try router.send([bytes("somebody"), bytes("hello")]))
        #expect(texts(try dealer.receive()) == ["hello"])

        // Without ROUTER_MANDATORY the same send "succeeds" and the message is lost.
        let (lenient, _) = try bound(context, .router)
        #expect(try lenient.send([bytes("nobody"), bytes("hello")]))
    }

    @Test func pubSubDeliversOnlySubscribedPrefixes() throws {
        let context = try Context()
        let (publisher, endpoint) = try bound(context, .pub)
        let subscriber = try connected(
            context, .sub, to: endpoint,
            options: [.subscribe(bytes("shard.3")), .subscribe(bytes("sync"))])

        // Subscriptions travel to the publisher asynchronously ("slow joiner"):
        // publish a sync message until one arrives.
        var synced = false
        for _ in 0..<200 where !synced {
            try publisher.send([bytes("sync"), []])
            if let message = try subscriber.receive(dontWait: true) {
                synced = text(message[0]) == "sync"
            } else {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        #expect(synced)

        for topic in ["shard.3", "shard.4", "other", "shard.30", "shard", "shard.3.replica"] {
            try publisher.send([bytes(topic), bytes("payload for \(topic)")])
        }
        try publisher.send([bytes("shard.3"), bytes("end")])

        var received: [String] = []
        while let message = try subscriber.receive(), text(message[1]) != "end" {
            if text(message[0]) != "sync" { received.append(text(message[0])) }  // late syncs
        }
        // Prefix matching on the first frame: "shard.30" matches "shard.3".
        #expect(received == ["shard.3", "shard.30", "shard.3.replica"])

        try subscriber.set(.unsubscribe(bytes("shard.3")))
        try publisher.send([bytes("shard.3"), bytes("after unsubscribe")])
        try publisher.send([bytes("sync"), bytes("end")])
        var last: [String]?
        repeat { last = texts(try subscriber.receive()) } while last == ["sync", ""]
        #expect(last == ["sync", "end"])
    }

    @Test func heartbeatOptionsAreAcceptedAndReadBack() throws {
        let context = try Context()
        let heartbeats: [SocketOption] = [
            .heartbeatInterval(milliseconds: 100), .heartbeatTimeout(milliseconds: 300),
            .heartbeatTTL(milliseconds: 500),
        ]
        let (router, endpoint) = try bound(
            context, .router,
            options: heartbeats + [
                .routerMandatory(true), .routerHandover(true), .tcpKeepalive(true),
            ])
        let dealer = try connected(
            context, .dealer, to: endpoint,
            options: heartbeats + [
                .reconnectInterval(milliseconds: 50),
                .reconnectIntervalMax(milliseconds: 1000), .probeRouter(true),
                .sendTimeout(milliseconds: 1000),
            ])
        #expect(try router.heartbeatInterval == 100)
        #expect(try router.heartbeatTimeout == 300)
        #expect(try dealer.heartbeatTTL == 500)
        #expect(try dealer.reconnectInterval == 50)
        #expect(try dealer.sendTimeout == 1000)

        // probeRouter: the ROUTER hears of the dealer before it says anything.
        let probe = try #require(try router.receive())
        #expect(probe.count == 2 && probe[1].isEmpty)

        // Several heartbeat intervals pass; the connection stays up.
        Thread.sleep(forTimeInterval: 0.35)
        try dealer.send([bytes("still here")])
        #expect(texts(try router.receive())?.last == "still here")
    }

    @Test func maxMessageSizeDropsTheConnectionOfAnOffender() throws {
        // Observed with libzmq 4.3.4: the receiving side's ZMTP decoder rejects
        // the oversized frame and closes that TCP connection. The message is
        // never delivered and no error surfaces on either socket; the DEALER
        // reconnects on its own, and later messages that fit flow again.
        let context = try Context()
        let (router, endpoint) = try bound(context, .router, options: [.maxMessageSize(1024)])
        #expect(try router.maxMessageSize == 1024)
        let dealer = try connected(
            context, .dealer, to: endpoint,
            options: [
                .routingID(bytes("big-sender")), .reconnectInterval(milliseconds: 20),
            ])
        try dealer.send([bytes("hello")])
        #expect(texts(try router.receive()) == ["big-sender", "hello"])

        try dealer.send([Data(repeating: 1, count: 4096)])
        // Nothing arrives for the oversized message.
        try router.set(.receiveTimeout(milliseconds: 200))
        #expect(try router.receive() == nil)

        // The connection comes back: keep sending small messages until one
        // arrives (messages sent while it was down may be lost with it).
        try router.set(.receiveTimeout(milliseconds: 50))
        var delivered: [Data]?
        for attempt in 0..<60 where delivered == nil {
            try dealer.send([bytes("small \(attempt)")], dontWait: true)
            delivered = try router.receive()
        }
        let message = try #require(delivered)
        #expect(text(message[0]) == "big-sender")
        #expect(text(message[1]).hasPrefix("small "))
    }

    @Test func contextShutdownUnblocksABlockingReceive() async throws {
        let context = try Context()
        let endpoint = inprocName()
        let outcome = try await withTimeout(60, "blocked receive") {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ZMQError.Code?, any Error>) in
                let thread = Thread {
                    do {
                        let socket = try Socket(context: context, type: .pull)
                        try socket.bind(endpoint)
                        let code = zmqCode { _ = try socket.receive() }  // no timeout: blocks
                        socket.close()
                        continuation.resume(returning: code)
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                thread.start()
                Thread.sleep(forTimeInterval: 0.1)
                context.shutdown()
            }
        }
        #expect(outcome == .terminated)
        // Every later call on the context fails the same way.
        #expect(zmqCode { _ = try Socket(context: context, type: .pair) } == .terminated)
    }

    @Test func badEndpointsThrowErrorsThatNameThem() throws {
        let context = try Context()
        let socket = try Socket(context: context, type: .router)
        do {
            try socket.bind("tcp://not a host:port")
            Issue.record("bind accepted a malformed endpoint")
        } catch let error as ZMQError {
            #expect(error.code == .invalidArgument)
            #expect(error.operation?.contains("tcp://not a host:port") == true)
            #expect(error.description.contains("tcp://not a host:port"))
            #expect(!error.message.isEmpty)
        }
        do {
            try socket.connect("carrier-pigeon://coop")
            Issue.record("connect accepted an unknown transport")
        } catch let error as ZMQError {
            #expect(error.code == .protocolNotSupported)
            #expect(error.description.contains("carrier-pigeon://coop"))
        }
        #expect(zmqCode { try socket.unbind("tcp://127.0.0.1:1") } == .endpointNotFound)

        // The port is taken: a second bind fails as such.
        let (holder, endpoint) = try bound(context, .pull)
        withExtendedLifetime(holder) {
            #expect(zmqCode { try socket.bind(endpoint) } == .addressInUse)
        }
    }

    @Test func closedSocketsThrowClosedInsteadOfCrashing() throws {
        let context = try Context()
        let socket = try Socket(context: context, type: .dealer)
        socket.close()
        socket.close()
        #expect(socket.isClosed)
        #expect(zmqCode { try socket.connect("tcp://127.0.0.1:1") } == .closed)
        #expect(zmqCode { _ = try socket.send([bytes("x")]) } == .closed)
        #expect(zmqCode { _ = try socket.receive() } == .closed)
        #expect(zmqCode { try socket.set(.linger(milliseconds: 0)) } == .closed)
    }

    @Test func unbindAndDisconnectStopTraffic() throws {
        let context = try Context()
        let (pull, endpoint) = try bound(context, .pull)
        let push = try connected(context, .push, to: endpoint)
        try push.send([bytes("one")])
        #expect(texts(try pull.receive()) == ["one"])
        try push.disconnect(endpoint)
        try pull.unbind(endpoint)
        #expect(try push.send([bytes("two")], dontWait: true) == false)  // no peer any more
    }

    @Test func sendAndReceiveWithoutWaiting() throws {
        let context = try Context()
        let (pair, endpoint) = try bound(context, .pair, inprocName())
        #expect(try pair.receive(dontWait: true) == nil)
        #expect(try pair.send([bytes("x")], dontWait: true) == false)  // no peer yet
        #expect(zmqCode { _ = try pair.send([] as [Data]) } == .invalidArgument)
        let peer = try connected(context, .pair, to: endpoint)
        try peer.send([Data(), Data()])
        #expect(try pair.receive() == [Data(), Data()])
    }

    @Test func defaultsAndOptionReadBack() throws {
        let context = try Context()
        let socket = try Socket(context: context, type: .dealer)
        #expect(try socket.linger == 0)  // this module's default, not libzmq's -1
        try socket.set([.sendHighWaterMark(7), .receiveHighWaterMark(9), .linger(milliseconds: 250)])
        #expect(try socket.sendHighWaterMark == 7)
        #expect(try socket.receiveHighWaterMark == 9)
        #expect(try socket.linger == 250)
        #expect(try socket.fileDescriptor >= 0)
        #expect(zmqCode { try socket.set(.routingID([])) } == .invalidArgument)
    }

    @Test func pollerWatchesSocketsAndFileDescriptors() throws {
        let context = try Context()
        let (a, endpoint) = try bound(context, .pair, inprocName())
        let b = try connected(context, .pair, to: endpoint)
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }

        var poller = Poller()
        let socketIndex = poller.add(PollItem(a, events: [.readable, .writable]))
        let pipeIndex = poller.add(PollItem(fileDescriptor: fds[0]))

        #expect(try poller.poll(timeout: .zero) == 1)
        #expect(poller.ready(socketIndex) == .writable)
        #expect(poller.ready(pipeIndex) == [])

        poller.items[socketIndex].events = .readable
        let start = ContinuousClock.now
        #expect(try poller.poll(timeout: .milliseconds(50)) == 0)
        #expect(ContinuousClock.now - start >= .milliseconds(45))

        try b.send([bytes("ping")])
        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(try poller.poll(timeout: .seconds(2)) == 2)
        #expect(poller.isReadable(socketIndex))
        #expect(poller.isReadable(pipeIndex))

        a.close()
        #expect(zmqCode { try poller.poll(timeout: .zero) } == .closed)
    }

    @Test func pollTimeoutsRoundUpToWholeMilliseconds() {
        #expect(milliseconds(nil) == -1)
        #expect(milliseconds(.zero) == 0)
        #expect(milliseconds(.microseconds(1)) == 1)
        #expect(milliseconds(.milliseconds(1500)) == 1500)
        #expect(milliseconds(.seconds(-1)) == 0)
    }
}
