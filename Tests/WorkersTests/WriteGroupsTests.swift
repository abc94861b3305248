import Foundation
import Items
import Logging
import ShardStore
import Synchronization
import Testing
import WireProtocol

@testable import Workers

/// A shard's writes that wait together commit in one transaction: which
/// writes go together, what each is answered, and that each keeps its own
/// outcome and its acknowledgement follows the commit (a real shard file and
/// a real indexer's group path; only the answers' way out is the test's).
@Suite struct WriteGroupsTests {
    static let logger = Logger(label: "limelight.workers.tests", factory: { _ in SwiftLogNoOpLogHandler() })

    static func items(_ uids: [String], summary: Bool = false) -> [JSONValue] {
        uids.map { uid in
            var attributes: [String: JSONValue] = ["title": .string("title of \(uid)")]
            if summary { attributes["summary"] = .string("a summary of \(uid) to embed") }
            return .object(["uniqueIdentifier": .string(uid), "domainIdentifier": .string("org.group"), "attributes": .object(attributes)])
        }
    }

    static func write(_ id: String, shard: Int, items: Int = 1, sequence: Int? = nil, epoch: Int? = nil) -> WaitingWrite {
        var w = Body.Write(shard: shard, items: Self.items((0..<items).map { "\(id)-\($0)" }))
        w.sequence = sequence
        w.epoch = epoch
        return WaitingWrite(id: id, write: w)
    }

    @Test func aGroupIsTheOldestWritesShardInOrderAndOthersWait() {
        var queue = WriteQueue()
        for (id, shard) in [("a1", 1), ("b1", 2), ("a2", 1), ("c1", 3), ("a3", 1), ("b2", 2)] {
            queue.add(Self.write(id, shard: shard))
        }
        #expect(queue.takeGroup(maxWrites: 10, maxItems: 100).map(\.id) == ["a1", "a2", "a3"])
        #expect(queue.waiting.map(\.id) == ["b1", "c1", "b2"])
        #expect(queue.takeGroup(maxWrites: 10, maxItems: 100).map(\.id) == ["b1", "b2"])
        #expect(queue.takeGroup(maxWrites: 10, maxItems: 100).map(\.id) == ["c1"])
        #expect(queue.takeGroup(maxWrites: 10, maxItems: 100).isEmpty)
    }

    @Test func aGroupStopsAtItsBoundsAndNoLaterWriteOfTheShardPassesTheFirstLeft() {
        var queue = WriteQueue()
        queue.add(Self.write("a1", shard: 1, items: 3))
        queue.add(Self.write("a2", shard: 1, items: 3))
        queue.add(Self.write("b1", shard: 2, items: 1))
        queue.add(Self.write("a3", shard: 1, items: 5))
        queue.add(Self.write("a4", shard: 1, items: 1))
        // a3 would pass 8 items; a4 would fit but must not go before it.
        #expect(queue.takeGroup(maxWrites: 10, maxItems: 8).map(\.id) == ["a1", "a2"])
        #expect(queue.waiting.map(\.id) == ["b1", "a3", "a4"])
        var byCount = WriteQueue()
        for id in ["a1", "a2", "a3"] { byCount.add(Self.write(id, shard: 1)) }
        #expect(byCount.takeGroup(maxWrites: 2, maxItems: 100).map(\.id) == ["a1", "a2"])
        // The oldest goes alone when it is larger than the bound.
        var large = WriteQueue()
        large.add(Self.write("big", shard: 1, items: 20))
        large.add(Self.write("small", shard: 1, items: 1))
        #expect(large.takeGroup(maxWrites: 10, maxItems: 8).map(\.id) == ["big"])
    }

    @Test func aGroupThatDidNotCommitRefusesEveryWrite() {
        struct Lost: Error {}
        let writes = [Self.write("w1", shard: 4, sequence: 1), Self.write("w2", shard: 4, sequence: 1)]
        let answers = GroupAnswers.answers(writes, .failure(Lost()))
        #expect(answers.count == 2)
        for answer in answers {
            guard case .error(let e) = answer else {
                Issue.record("acknowledged a write of a group that did not commit: \(answer)")
                continue
            }
            #expect(e.code == "store_failed")
        }
    }

    /// One bad write (its items need an embedder this indexer cannot load,
    /// so it fails as a whole) among good ones: it is refused alone, the
    /// others are stored and acknowledged, and each acknowledgement leaves
    /// only once its items are committed, seen from another connection.
    @Test func aBadWriteIsRefusedAloneAndAcknowledgementsFollowTheCommit() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-groups-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = shardPath(data: dir, shard: 0)
        do {
            let setup = try ShardStore(path: path, logger: Self.logger)
            try setup.declare([], semantic: [("summary", true)])
        }
        var configuration = IndexerConfiguration(data: dir, shards: [0], workerID: "group-test")
        // Nothing listens there: the link is never used, answers go to the test.
        configuration.coordinator = "tcp://127.0.0.1:9"
        configuration.modelDirectory = dir + "/no-model-here"
        let indexer = try IndexerService(configuration: configuration, logger: Self.logger)
        defer { indexer.shutdown() }

        // Unnumbered, as an older coordinator sends them: a numbered write
        // after a refused one would be a gap (``numberedChangesInAGroupKeepTheirRules``).
        let bad = WaitingWrite(id: "w2", write: Body.Write(shard: 0, items: Self.items(["bad-0", "bad-1"], summary: true)))
        let writes = [Self.write("w1", shard: 0, items: 2), bad, Self.write("w3", shard: 0, items: 2), Self.write("w4", shard: 0, items: 2)]
        let reader = try ShardStore(path: path, mode: .readOnly, logger: Self.logger)
        let seen = Mutex<[(id: String, answer: Body, visible: Int)]>([])
        await indexer.applyGroup(writes, shard: 0) { id, answer in
            let visible = (try? reader.count()) ?? -1
            seen.withLock { $0.append((id, answer, visible)) }
        }
        let answers = seen.withLock { $0 }
        #expect(answers.map(\.id) == ["w1", "w2", "w3", "w4"])
        for a in answers {
            // Every answer leaves after the commit: the other connection sees all six items stored.
            #expect(a.visible == 6, "answer to \(a.id) sent before its items were visible")
        }
        for a in answers where a.id != "w2" {
            guard case .writeAck(let ack) = a.answer else {
                Issue.record("\(a.id) not acknowledged: \(a.answer)")
                continue
            }
            #expect(ack.results.allSatisfy { $0.status == .stored })
        }
        if case .error(let e) = answers[1].answer {
            #expect(e.code == "store_failed")
        } else {
            Issue.record("the bad write was acknowledged: \(answers[1].answer)")
        }
        #expect(try reader.count() == 6)
    }

    /// Within a group the numbered changes keep the rules they have one at a
    /// time: a change after a refused one is a gap, a resent one is skipped,
    /// and a change of an older coordinator epoch is refused.
    @Test func numberedChangesInAGroupKeepTheirRules() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-groups-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ShardStore(path: dir + "/s.sqlite", logger: Self.logger)
        struct Boom: Error {}
        func change(_ uid: String, _ sequence: Int, epoch: Int? = nil, fail: Bool = false) -> (ShardStore) throws -> Applied<Int> {
            { s in
                try IndexerService.sequenced(s, sequence: sequence, epoch: epoch) { s in
                    let n = try s.write(Self.items([uid])).count
                    if fail { throw Boom() }
                    return n
                }
            }
        }
        let results = try store.group([
            change("a", 1, epoch: 2), change("a-again", 1), change("b", 2, fail: true), change("c", 3),
            change("b", 2, epoch: 1), change("b", 2, epoch: 2),
        ])
        func describe(_ r: Result<Applied<Int>, any Error>) -> String {
            switch r {
            case .success(.done(let n)): "done \(n)"
            case .success(.skipped): "skipped"
            case .success(.gap(let have)): "gap \(have)"
            case .success(.staleEpoch(let have)): "stale \(have)"
            case .success(.awaitingRegistration): "awaiting registration"
            case .failure: "failed"
            }
        }
        #expect(results.map(describe) == ["done 1", "skipped", "failed", "gap 1", "stale 2", "done 1"])
        let reader = try ShardStore(path: dir + "/s.sqlite", mode: .readOnly, logger: Self.logger)
        #expect(try reader.sequence() == 2)
        #expect(try reader.coordinatorEpoch() == 2)
        #expect(try reader.count() == 2)
    }
}
