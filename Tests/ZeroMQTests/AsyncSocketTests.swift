import Foundation
import Synchronization
import Testing

@testable import ZeroMQ

@Suite("AsyncSocket (owner thread + Swift concurrency)")
struct AsyncSocketTests {
    @Test func dealerRouterRoundTripOverTCP() async throws {
        let context = try Context()
        let router = try AsyncSocket(context: context, type: .router, name: "test-router") { socket in
            try socket.set(.routerMandatory(true))
            try socket.bind("tcp://127.0.0.1:0")
        }
        let endpoint = try #require(router.endpoint)
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:") && !endpoint.hasSuffix(":0"))
        let dealer = try AsyncSocket(context: context, type: .dealer) { socket in
            try socket.set(.routingID(bytes("indexer-7")))
            try socket.connect(endpoint)
        }
        defer { router.close(); dealer.close() }

        try await withTimeout {
            try await dealer.send([data("query"), Data(), data("{}")])
            let request = try #require(await collect(router, count: 1).first)
            #expect(texts(request) == ["indexer-7", "query", "", "{}"])
            try await router.send([request[0], data("batch 1")])
            try await router.send([request[0], data("batch 2")])
            let replies = await collect(dealer, count: 2)
            #expect(replies.map { texts($0) } == [["batch 1"], ["batch 2"]])
        }
    }

    @Test func routerMandatoryFailsExactlyTheSendWhosePeerIsGone() async throws {
        let context = try Context()
        let router = try AsyncSocket(context: context, type: .router) { socket in
            try socket.set(.routerMandatory(true))
            try socket.bind("tcp://127.0.0.1:*")
        }
        let dealer = try AsyncSocket(context: context, type: .dealer) { socket in
            try socket.set(.routingID(bytes("present")))
            try socket.connect(router.endpoint!)
        }
        defer { router.close(); dealer.close() }

        try await withTimeout {
            try await dealer.send([data("hello")])
            _ = await collect(router, count: 1)

            // Interleave sends to a present and an absent peer concurrently:
            // each caller learns its own outcome.
            let outcomes = try await withThrowingTaskGroup(of: (Int, ZMQError.Code?).self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let peer = index.isMultiple(of: 2) ? "present" : "absent-\(index)"
                        let code = await zmqCode { try await router.send([data(peer), data("#\(index)")]) }
                        return (index, code)
                    }
                }
                return try await group.reduce(into: [Int: ZMQError.Code?]()) { $0[$1.0] = $1.1 }
            }
            for index in 0..<20 {
                #expect(
                    outcomes[index]! == (index.isMultiple(of: 2) ? nil : .hostUnreachable),
                    "send #\(index)")
            }
            let delivered = await collect(dealer, count: 10)
            #expect(Set(delivered.map { text($0[0]) }) == Set(stride(from: 0, to: 20, by: 2).map { "#\($0)" }))
        }
    }

    @Test func pubSubPrefixesThroughAsyncSockets() async throws {
        let context = try Context()
        let publisher = try AsyncSocket(context: context, type: .pub) { try $0.bind("tcp://127.0.0.1:*") }
        let subscriber = try AsyncSocket(context: context, type: .sub) { socket in
            try socket.set(.subscribe(bytes("shard.1")))
            try socket.connect(publisher.endpoint!)
        }
        defer { publisher.close(); subscriber.close() }

        try await withTimeout {
            // Slow joiner: publish until the subscription has reached the publisher.
            let synced = Task {
                for await message in subscriber.messages where text(message[1]) == "sync" { return true }
                return false
            }
            let pinger = Task {
                while !Task.isCancelled {
                    try? await publisher.send([data("shard.1"), data("sync")])
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            #expect(await synced.value)
            pinger.cancel()
            await pinger.value
            for topic in ["shard.2", "shard.1", "shard.12", "metrics"] {
                try await publisher.send([data(topic), data("data")])
            }
            try await publisher.send([data("shard.1"), data("end")])
            var topics: [String] = []
            for await message in subscriber.messages {
                if text(message[1]) == "end" { break }
                if text(message[1]) == "data" { topics.append(text(message[0])) }
            }
            #expect(topics == ["shard.1", "shard.12"])
        }
    }

    /// The inbound buffer and both high-water marks fill, then `send` suspends;
    /// nothing is dropped, and every message arrives once the consumer reads.
    @Test(arguments: ["inproc", "tcp"])
    func highWaterMarksSuspendSendersInsteadOfDropping(transport: String) async throws {
        let context = try Context()
        // tcp adds kernel socket buffers (megabytes on loopback) to the
        // pipeline, so it sends big messages to fill them quickly.
        let (total, payload) = transport == "inproc" ? (200, 16) : (120, 256 * 1024)
        let receiver = try AsyncSocket(context: context, type: .pull, inboundCapacity: 4) { socket in
            try socket.set(.receiveHighWaterMark(5))
            try socket.bind(transport == "inproc" ? inprocName() : "tcp://127.0.0.1:*")
        }
        let sender = try AsyncSocket(context: context, type: .push, outboundCapacity: 8) { socket in
            try socket.set(.sendHighWaterMark(5))
            try socket.connect(receiver.endpoint!)
        }
        defer { receiver.close(); sender.close() }

        let accepted = Counter()
        let producer = Task {
            for index in 0..<total {
                var message = Data(count: payload)
                message.replaceSubrange(0..<4, with: withUnsafeBytes(of: UInt32(index).bigEndian) { Data($0) })
                try await sender.send([message])
                accepted.increment()
            }
        }
        // Let the pipeline fill up: the producer must be stuck well short of the end.
        var lastCount = -1
        for _ in 0..<50 {
            try await Task.sleep(for: .milliseconds(40))
            if accepted.value == lastCount { break }
            lastCount = accepted.value
        }
        let stalledAt = accepted.value
        #expect(stalledAt > 0)
        #expect(stalledAt < total, "send never suspended: \(stalledAt) of \(total) accepted")
        if transport == "inproc" {
            // inproc has no kernel buffers: 5 + 5 in the pipe, 4 in the inbound
            // buffer, one in the owner thread's hands, a few in flight.
            #expect(stalledAt <= 20, "accepted \(stalledAt)")
        }

        // Now read everything: every message arrives once, in order.
        let received = try await withTimeout(60, "draining") {
            await collect(receiver, count: total)
        }
        #expect(received.count == total)
        let indices = received.map { frames in
            frames[0].prefix(4).reduce(0) { $0 << 8 | Int($1) }
        }
        #expect(indices == Array(0..<total))
        #expect(received.allSatisfy { $0.count == 1 && $0[0].count == payload })
        try await withTimeout(60, "producer") { try await producer.value }
        #expect(accepted.value == total)
    }

    @Test func manyConcurrentSendersDeliverEveryMessageExactlyOnce() async throws {
        let context = try Context()
        let router = try AsyncSocket(context: context, type: .router, inboundCapacity: 64) { socket in
            try socket.bind("tcp://127.0.0.1:*")
        }
        let dealer = try AsyncSocket(context: context, type: .dealer, outboundCapacity: 32) { socket in
            try socket.set(.sendHighWaterMark(50))
            try socket.connect(router.endpoint!)
        }
        defer { router.close(); dealer.close() }

        let tasks = 16, perTask = 250
        let received = try await withTimeout(60, "concurrent senders") {
            async let collected = collect(router, count: tasks * perTask)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for sequence in 0..<perTask {
                            try await dealer.send([data("\(task)"), data("\(sequence)")])
                        }
                    }
                }
                try await group.waitForAll()
            }
            return await collected
        }
        #expect(received.count == tasks * perTask)
        var seen = Set<String>()
        var lastPerTask = [Int](repeating: -1, count: tasks)
        var inOrder = true
        for message in received {
            let task = Int(text(message[1]))!, sequence = Int(text(message[2]))!
            seen.insert("\(task)/\(sequence)")
            if sequence != lastPerTask[task] + 1 { inOrder = false }
            lastPerTask[task] = sequence
        }
        #expect(seen.count == tasks * perTask, "duplicates or losses")
        #expect(inOrder, "each sender's messages arrive in its order")
    }

    @Test func closeEndsMessagesAndMakesSendThrowClosed() async throws {
        let context = try Context()
        let socket = try AsyncSocket(context: context, type: .dealer) { socket in
            // Nobody listens there, and `immediate` queues nothing for a
            // connection that is not up: sends wait.
            try socket.set(.immediate(true))
            try socket.connect("tcp://127.0.0.1:1")
        }
        try await withTimeout {
            let consumer = Task { await collect(socket, count: 1).count }
            // A send that cannot complete (no peer): close must release it.
            let stuck = Task { await zmqCode { try await socket.send([data("never sent")]) } }
            try await Task.sleep(for: .milliseconds(50))
            socket.close()
            socket.close()  // idempotent
            #expect(await consumer.value == 0)
            #expect(await stuck.value == .closed)
            #expect(await zmqCode { try await socket.send([data("late")]) } == .closed)
            #expect(socket.isClosed)
            #expect(socket.failure == nil)
            var iterator = socket.messages.makeAsyncIterator()
            #expect(await iterator.next() == nil)
            await socket.closeAndWait()
        }
    }

    @Test func bufferedMessagesSurviveCloseThenTheSequenceEnds() async throws {
        let context = try Context()
        let endpoint = inprocName()
        let pull = try AsyncSocket(context: context, type: .pull) { try $0.bind(endpoint) }
        let push = try AsyncSocket(context: context, type: .push) { try $0.connect(endpoint) }
        defer { push.close() }
        try await withTimeout {
            for index in 0..<3 { try await push.send([data("\(index)")]) }
            // Wait until the owner thread has buffered all three.
            var iterator = pull.messages.makeAsyncIterator()
            #expect(await iterator.next().map(texts) == ["0"])
            while await Self.bufferedCount(pull) < 2 { try await Task.sleep(for: .milliseconds(5)) }
            pull.close()
            #expect(await iterator.next().map(texts) == ["1"])
            #expect(await iterator.next().map(texts) == ["2"])
            #expect(await iterator.next() == nil)
        }
    }

    static func bufferedCount(_ socket: AsyncSocket) async -> Int {
        socket.bufferedMessageCount
    }

    @Test func contextShutdownEndsAsyncSockets() async throws {
        let context = try Context()
        let socket = try AsyncSocket(context: context, type: .router) { socket in
            try socket.set(.routerMandatory(true))
            try socket.bind("tcp://127.0.0.1:*")
        }
        try await withTimeout {
            let consumer = Task { await collect(socket, count: 1).count }
            try await Task.sleep(for: .milliseconds(20))
            context.shutdown()
            #expect(await consumer.value == 0)
            await socket.closeAndWait()
            #expect(socket.failure?.code == .terminated)
            #expect(await zmqCode { try await socket.send([data("x"), data("y")]) } == .terminated)
        }
    }

    @Test func configureErrorsAreThrownFromInit() throws {
        let context = try Context()
        do {
            _ = try AsyncSocket(context: context, type: .router) { socket in
                try socket.bind("tcp://127.0.0.1:not-a-port")
            }
            Issue.record("init did not throw")
        } catch let error as ZMQError {
            #expect(error.code == .invalidArgument)
            #expect(error.description.contains("tcp://127.0.0.1:not-a-port"))
        }
        struct Custom: Error {}
        #expect(throws: Custom.self) {
            _ = try AsyncSocket(context: context, type: .dealer) { _ in throw Custom() }
        }
    }

    @Test func socketErrorsReachTheSender() async throws {
        let context = try Context()
        let subscriber = try AsyncSocket(context: context, type: .sub) { try $0.bind(inprocName()) }
        defer { subscriber.close() }
        try await withTimeout {
            #expect(await zmqCode { try await subscriber.send([data("x")]) } == .notSupported)
            #expect(await zmqCode { try await subscriber.send([] as [Data]) } == .invalidArgument)
        }
    }

    @Test func cancellingAWaitingConsumerLosesNoMessage() async throws {
        let context = try Context()
        let endpoint = inprocName()
        let pull = try AsyncSocket(context: context, type: .pull) { try $0.bind(endpoint) }
        let push = try AsyncSocket(context: context, type: .push) { try $0.connect(endpoint) }
        defer { pull.close(); push.close() }
        try await withTimeout {
            let waiting = Task { await collect(pull, count: 1) }
            try await Task.sleep(for: .milliseconds(20))
            waiting.cancel()
            #expect(await waiting.value.isEmpty)
            try await push.send([data("kept")])
            #expect(await collect(pull, count: 1).map { texts($0) } == [["kept"]])
        }
    }

    @Test func cancellingAQueuedSendWithdrawsIt() async throws {
        let context = try Context()
        // No peer and `immediate`: nothing can be sent. With an outbound
        // capacity of 1 the owner thread holds the first message; the second
        // waits in line, where cancellation can still withdraw it.
        let socket = try AsyncSocket(context: context, type: .dealer, outboundCapacity: 1) { socket in
            try socket.set(.immediate(true))
            try socket.connect("tcp://127.0.0.1:1")
        }
        try await withTimeout {
            let first = Task { await zmqCode { try await socket.send([data("first")]) } }
            try await Task.sleep(for: .milliseconds(30))
            let second = Task { () -> (any Error)? in
                do { try await socket.send([data("second")]); return nil } catch { return error }
            }
            try await Task.sleep(for: .milliseconds(30))
            second.cancel()
            #expect(await second.value is CancellationError)
            socket.close()
            #expect(await first.value == .closed)
        }
    }

    @Test func droppingTheLastReferenceClosesTheSocket() async throws {
        let context = try Context()
        var socket: AsyncSocket? = try AsyncSocket(context: context, type: .pull) { try $0.bind("tcp://127.0.0.1:*") }
        let messages = socket!.messages
        let endpoint = socket!.endpoint!
        socket = nil
        try await withTimeout {
            for await _ in messages { Issue.record("no message expected") }
        }
        // The port is free again once the owner thread has closed the socket.
        let rebound = try Socket(context: context, type: .pull)
        var bound = false
        for _ in 0..<100 where !bound {
            bound = (try? rebound.bind(endpoint)) != nil
            if !bound { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(bound)
    }

    /// `post` from a plain thread: messages keep their order, and a poster
    /// whose messages are not being accepted (no peer, high-water mark 1) is
    /// held back at the window instead of queueing without bound.
    @Test func postFromAThreadKeepsOrderAndHoldsBackWhileNoPeerTakesMessages() async throws {
        let context = try Context()
        // A free port, found with a plain socket: a ZeroMQ socket's close
        // returns before its I/O thread stops listening, and the dealer
        // could connect to that listener, send the first messages into it
        // and lose them as it goes (seen once, under load).
        let endpoint = "tcp://127.0.0.1:\(try Self.freePort())"
        let dealer = try AsyncSocket(context: context, type: .dealer) { socket in
            try socket.set(.routingID(bytes("poster")))
            try socket.set(.sendHighWaterMark(1))
            try socket.connect(endpoint)
        }
        defer { dealer.close() }
        let posted = Mutex(0)
        let finished = DispatchSemaphore(value: 0)
        let poster = Thread {
            for index in 0..<40 {
                try? dealer.post([data("#\(index)")])
                posted.withLock { $0 += 1 }
            }
            finished.signal()
        }
        poster.start()
        try await Task.sleep(for: .milliseconds(300))
        let early = posted.withLock { $0 }
        #expect(early < 40, "with nobody taking messages the poster must be held back, yet it posted all 40")
        #expect(early >= 16, "the window lets 16 posts through before it holds back; posted \(early)")

        let router = try AsyncSocket(context: context, type: .router) { try $0.bind(endpoint) }
        defer { router.close() }
        try await withTimeout {
            let received = await collect(router, count: 40)
            #expect(received.map { text($0[1]) } == (0..<40).map { "#\($0)" })
            try await dealer.send([data("after")])
            let last = await collect(router, count: 1)
            #expect(texts(last.first) == ["poster", "after"])
        }
        #expect(finished.wait(timeout: .now() + 5) == .success)
    }

    /// A loopback TCP port nothing listens on: bound by a plain socket,
    /// read, and closed (which frees it at once).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func postAfterCloseThrowsClosed() throws {
        let context = try Context()
        let dealer = try AsyncSocket(context: context, type: .dealer) { try $0.connect("tcp://127.0.0.1:9") }
        dealer.close()
        #expect(throws: ZMQError.self) { try dealer.post([data("late")]) }
        do { try dealer.post([data("late")]) } catch let error as ZMQError {
            #expect(error.code == .closed)
        } catch { Issue.record("unexpected error \(error)") }
    }

    /// An actor that hands replies over with `submit` may be running on a
    /// cancelled task (a timer that cancelled itself): the reply must still
    /// go out, and `accepted` must hear of it.
    @Test func submitFromACancelledTaskIsStillSent() async throws {
        let context = try Context()
        let router = try AsyncSocket(context: context, type: .router) { try $0.bind("tcp://127.0.0.1:*") }
        let dealer = try AsyncSocket(context: context, type: .dealer) { socket in
            try socket.set(.routingID(bytes("submitter")))
            try socket.connect(router.endpoint!)
        }
        defer { router.close(); dealer.close() }
        let accepted = DispatchSemaphore(value: 0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return dealer.submit([data("from a cancelled task")]) { error in
                if error == nil { accepted.signal() }
            }.map { "\($0)" }
        }
        #expect(await task.value == nil)
        try await withTimeout {
            let received = await collect(router, count: 1)
            #expect(texts(received.first) == ["submitter", "from a cancelled task"])
        }
        #expect(accepted.wait(timeout: .now() + 5) == .success)
    }

    /// `intercept` sees every message on the owner thread first: what it
    /// takes never reaches `messages`, the rest arrive there in order, and
    /// it may answer with `submit` from that thread, whose answers go out
    /// without a wake-up byte in the owner's own pipe (the loop takes them
    /// before it polls again; without that they would wait for the next
    /// message, and this test for good).
    @Test func interceptTakesMessagesOnTheOwnerThread() async throws {
        let context = try Context()
        let taken = Mutex<[String]>([])
        let routerBox = Mutex<AsyncSocket?>(nil)
        let router = try AsyncSocket(
            context: context, type: .router,
            intercept: { frames in
                guard text(frames.last!).hasPrefix("inline") else { return false }
                taken.withLock { $0.append(text(frames.last!) + (Thread.isMainThread ? " main" : "")) }
                // Answer from the owner thread itself: submit never waits.
                let refused = routerBox.withLock { $0 }?.submit([frames[0], data("echo " + text(frames.last!))]) { _ in }
                return refused == nil
            }
        ) { try $0.bind("tcp://127.0.0.1:*") }
        routerBox.withLock { $0 = router }
        let dealer = try AsyncSocket(context: context, type: .dealer) { socket in
            try socket.set(.routingID(bytes("d")))
            try socket.connect(router.endpoint!)
        }
        defer { router.close(); dealer.close() }
        try await withTimeout {
            for m in ["inline 1", "stream 1", "inline 2", "stream 2"] { try await dealer.send([data(m)]) }
            let streamed = await collect(router, count: 2)
            #expect(streamed.map { texts($0) } == [["d", "stream 1"], ["d", "stream 2"]])
            let echoes = await collect(dealer, count: 2)
            #expect(echoes.map { texts($0) } == [["echo inline 1"], ["echo inline 2"]])
            #expect(router.wakeUpsWritten == 0)
        }
        #expect(taken.withLock { $0 } == ["inline 1", "inline 2"])
        #expect(router.bufferedMessageCount == 0)
    }
    /// Work `intercept` defers runs on the owner thread after the message is
    /// handled: for a lone message (none other waiting), its last job is told
    /// to run there and any before it to go elsewhere (a search's shards:
    /// one here, the rest in parallel); several messages read in one batch
    /// each defer a job told to go elsewhere, so that requests that come
    /// together are not run one after another on the socket's thread. Off
    /// the owner thread, deferring is refused. Work run there may `post`
    /// without waiting for room.
    @Test func deferredWorkRunsAloneOnTheOwnerThreadOrGoesElsewhere() async throws {
        let context = try Context()
        let routerBox = Mutex<AsyncSocket?>(nil)
        let outcomes = Mutex<[String]>([])
        let firstOfBatch = DispatchSemaphore(value: 0)
        let router = try AsyncSocket(
            context: context, type: .router,
            intercept: { frames in
                let body = text(frames.last!)
                let owner = pthread_self()
                guard let socket = routerBox.withLock({ $0 }) else { return false }
                var deferred = true
                for job in body == "pair" ? ["pair a", "pair b"] : [body] {
                    deferred =
                        deferred
                        && socket.deferUntilRead { here in
                            let onOwner = pthread_equal(owner, pthread_self()) != 0
                            outcomes.withLock { $0.append("\(job) \(here ? "here" : "elsewhere")\(onOwner ? "" : " off the owner thread")") }
                            // Work run here answers with `post`, past its window of
                            // 16 unaccepted messages: only this thread could make room,
                            // so on it `post` must not wait.
                            if job == "single" {
                                for k in 0..<20 { try? socket.post([frames[0], data("answer \(k)")]) }
                            }
                        }
                }
                // The batch's first message holds the owner thread until the
                // rest are queued behind it, so one read takes them all (over
                // inproc a message is in the router's queue once `send` returns).
                if body == "batch 1" { _ = firstOfBatch.wait(timeout: .now() + 5) }
                return deferred
            }
        ) { try $0.bind("inproc://deferred-work") }
        routerBox.withLock { $0 = router }
        let dealer = try AsyncSocket(context: context, type: .dealer) { socket in
            try socket.set(.routingID(bytes("d")))
            try socket.connect("inproc://deferred-work")
        }
        defer { router.close(); dealer.close() }
        #expect(router.deferUntilRead { _ in outcomes.withLock { $0.append("off the owner thread") } } == false)
        try await withTimeout {
            try await dealer.send([data("single")])
            let answers = await collect(dealer, count: 20)
            #expect(answers.map { texts($0) } == (0..<20).map { ["answer \($0)"] })
            try await dealer.send([data("pair")])
            while outcomes.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(5)) }
            for m in ["batch 1", "batch 2", "batch 3"] { try await dealer.send([data(m)]) }
            firstOfBatch.signal()
            while outcomes.withLock({ $0.count }) < 6 { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(
            outcomes.withLock { $0 } == [
                "single here", "pair a elsewhere", "pair b here",
                "batch 1 elsewhere", "batch 2 elsewhere", "batch 3 elsewhere",
            ])
    }
    /// A task that prefers the socket's executor runs on the socket's own
    /// thread (the one `intercept` runs on), across its suspensions: its
    /// request leaves and its answer resumes it there. Once the socket has
    /// closed, such a task still runs, elsewhere.
    @Test func tasksPreferringTheSocketsExecutorRunOnItsThread() async throws {
        let context = try Context()
        let ownerThread = Mutex<UInt>(0)
        let router = try AsyncSocket(context: context, type: .router) { try $0.bind("inproc://executor-test") }
        let dealer = try AsyncSocket(
            context: context, type: .dealer,
            intercept: { _ in
                ownerThread.withLock { $0 = UInt(bitPattern: Int(bitPattern: pthread_self())) }
                return false
            }
        ) { socket in
            try socket.set(.routingID(bytes("d")))
            try socket.connect("inproc://executor-test")
        }
        defer { router.close(); dealer.close() }
        try await withTimeout {
            // The dealer's thread records itself when the first answer arrives.
            try await dealer.send([data("hello")])
            let hello = try #require(await collect(router, count: 1).first)
            try await router.send([hello[0], data("welcome")])
            #expect(await collect(dealer, count: 1).map { texts($0) } == [["welcome"]])
            let owner = ownerThread.withLock { $0 }
            #expect(owner != 0)
            let threads = try await withTaskExecutorPreference(dealer.executor) { () async throws -> [UInt] in
                var seen = [UInt(bitPattern: Int(bitPattern: pthread_self()))]
                for k in 0..<3 {
                    try await dealer.send([data("request \(k)")])
                    seen.append(UInt(bitPattern: Int(bitPattern: pthread_self())))
                    let request = try #require(await collect(router, count: 1).first)
                    try await router.send([request[0], data("answer \(k)")])
                    _ = await collect(dealer, count: 1)
                    seen.append(UInt(bitPattern: Int(bitPattern: pthread_self())))
                }
                return seen
            }
            #expect(threads.count == 7 && threads.allSatisfy { $0 == owner })
        }
        dealer.close()
        let after = await withTaskExecutorPreference(dealer.executor) { () async -> Int in
            await Task.yield()
            return 42
        }
        #expect(after == 42)
    }
}
