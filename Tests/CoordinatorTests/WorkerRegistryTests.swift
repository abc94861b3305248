import Foundation
import Testing
import WireProtocol

@testable import Coordinator

/// The worker registry's decisions, without processes: who may register,
/// whom a registration replaces, who is silent, and which query worker
/// takes a shard's part.
@Suite("Worker registry")
struct WorkerRegistryTests {
    static let t0 = ContinuousClock.now
    static let d0 = Date(timeIntervalSince1970: 1_000_000)

    static func route(_ name: String) -> [Data] { [Data(name.utf8)] }

    static func record(
        _ id: String, _ role: Body.Register.Role, shards: [Int], route: String? = nil, pid: Int? = nil,
        at: ContinuousClock.Instant = t0
    ) -> WorkerRecord {
        WorkerRecord(id: id, role: role, shards: shards, route: Self.route(route ?? id), lastSeen: at, host: nil, pid: pid, registeredAt: d0)
    }

    @Test func registrationsNamingNoShardOrAMissingOneAreRefused() {
        let registry = WorkerRegistry()
        let none = registry.admit(Body.Register(role: .indexer, worker: "i1", shards: []), route: Self.route("i1"), shardCount: 4)
        #expect(none == .refuse(WireError(code: "invalid_message", message: "a worker must serve at least one shard")))
        guard
            case .refuse(let e) = registry.admit(
                Body.Register(role: .indexer, worker: "i1", shards: [1, 4, -1]), route: Self.route("i1"), shardCount: 4)
        else {
            Issue.record("a shard the cluster lacks was admitted")
            return
        }
        #expect(e.code == "bad_shard")
        #expect(e.message.hasPrefix("shards 4,-1 do not exist"))
        #expect(
            registry.admit(Body.Register(role: .indexer, worker: "i1", shards: [0, 3]), route: Self.route("i1"), shardCount: 4)
                == .register(replacing: nil))
    }

    /// The same id from a new connection or a new process replaces the old
    /// worker (whose work is then retried); the same process again does not.
    @Test func aWorkerRegisteringAgainFromElsewhereReplacesTheOld() {
        var registry = WorkerRegistry()
        registry.register(Self.record("i1", .indexer, shards: [0], pid: 10))
        let again = Body.Register(role: .indexer, worker: "i1", shards: [0], pid: 10)
        #expect(registry.admit(again, route: Self.route("i1"), shardCount: 2) == .register(replacing: nil))
        #expect(
            registry.admit(again, route: Self.route("elsewhere"), shardCount: 2)
                == .register(replacing: WorkerRegistry.Replaced(worker: "i1", reason: "re-registered from a new connection")))
        let restarted = Body.Register(role: .indexer, worker: "i1", shards: [0], pid: 11)
        #expect(
            registry.admit(restarted, route: Self.route("i1"), shardCount: 2)
                == .register(replacing: WorkerRegistry.Replaced(worker: "i1", reason: "restarted (pid 10 → 11)")))
    }

    @Test func liveWorkersPerShardFollowRegistrationsAndLosses() {
        var registry = WorkerRegistry()
        registry.register(Self.record("q2", .query, shards: [0, 1]))
        registry.register(Self.record("q1", .query, shards: [1]))
        registry.register(Self.record("i1", .indexer, shards: [0]))
        #expect(registry.liveIDs(.query, shard: 1) == ["q1", "q2"])
        #expect(registry.liveIDs(.indexer, shard: 1) == [])
        #expect(registry.servedShards(shardCount: 2) == [0])
        registry.register(Self.record("i2", .indexer, shards: [1]))
        #expect(registry.servedShards(shardCount: 2) == [0, 1])

        let lost = registry.forget("q2", reason: "no heartbeat", at: Self.d0)
        #expect(lost?.id == "q2")
        #expect(registry.liveIDs(.query, shard: 0) == [])
        #expect(registry.liveIDs(.query, shard: 1) == ["q1"])
        #expect(registry.servedShards(shardCount: 2) == [1])
        #expect(registry.byRoute[Self.route("q2")] == nil)
        #expect(registry.lost["q2"]?.reason == "no heartbeat")
        // Forgetting twice changes nothing; registering again clears the loss.
        #expect(registry.forget("q2", reason: "again", at: Self.d0) == nil)
        registry.register(Self.record("q2", .query, shards: [0]))
        #expect(registry.lost["q2"] == nil)
        #expect(registry.liveIDs(.query, shard: 0) == ["q2"])
    }

    @Test func lostWorkersAreKeptForAnHourThenPruned() {
        var registry = WorkerRegistry()
        registry.register(Self.record("q1", .query, shards: [0]))
        _ = registry.forget("q1", reason: "gone", at: Self.d0)
        registry.pruneLost(at: Self.d0.addingTimeInterval(LostWorker.keepSeconds - 1))
        #expect(registry.lost["q1"] != nil)
        registry.pruneLost(at: Self.d0.addingTimeInterval(LostWorker.keepSeconds + 1))
        #expect(registry.lost["q1"] == nil)
    }

    /// Only messages from a registered connection count as heard; the sweep
    /// names whoever was not heard within the limit, never the local worker.
    @Test func theSweepNamesSilentWorkersButNotTheLocalOne() {
        var registry = WorkerRegistry()
        registry.register(Self.record("i1", .indexer, shards: [0]))
        registry.register(Self.record("q1", .query, shards: [0]))
        registry.register(
            WorkerRecord(
                id: "local", role: .query, shards: [0], route: LocalQueryWorker.route, lastSeen: Self.t0,
                host: "local", pid: nil, registeredAt: Self.d0))
        let later = Self.t0 + .seconds(5)
        #expect(registry.heard(route: Self.route("q1"), at: later) == "q1")
        #expect(registry.heard(route: Self.route("stranger"), at: later) == nil)
        #expect(registry.silent(at: later, limit: .seconds(3)) == ["i1"])
        #expect(registry.silent(at: later, limit: .seconds(6)) == [])
    }

    @Test func heartbeatsKeepTheirStatus() {
        var registry = WorkerRegistry()
        registry.register(Self.record("i1", .indexer, shards: [0]))
        registry.report(WorkerStatus(uptimeSeconds: 5, handled: 3, errors: 0), of: "i1")
        #expect(registry.workers["i1"]?.status?.handled == 3)
        registry.report(WorkerStatus(uptimeSeconds: 5, handled: 3, errors: 0), of: "nobody")
        #expect(registry.workers["nobody"] == nil)
    }

    /// A shard's parts go round robin over its query workers, never to one
    /// already tried for the part, nor to one whose replica is not fresh.
    @Test func queryWorkersAreTakenRoundRobinSkippingTriedAndStaleOnes() {
        var registry = WorkerRegistry()
        for id in ["qa", "qb", "qc"] { registry.register(Self.record(id, .query, shards: [0])) }
        var picked: [String] = []
        for _ in 0..<6 { picked.append(registry.nextQueryWorker(shard: 0, tried: [], isFresh: { _ in true })?.id ?? "-") }
        #expect(Set(picked) == ["qa", "qb", "qc"])
        #expect(picked[0] != picked[1] && picked[1] != picked[2])

        for _ in 0..<4 {
            #expect(registry.nextQueryWorker(shard: 0, tried: ["qa"], isFresh: { $0 != "qb" })?.id == "qc")
        }
        #expect(registry.nextQueryWorker(shard: 0, tried: ["qa", "qc"], isFresh: { $0 != "qb" }) == nil)
        #expect(!registry.hasQueryWorker(shard: 0, tried: ["qa", "qc"], isFresh: { $0 != "qb" }))
        #expect(registry.hasQueryWorker(shard: 0, tried: ["qa", "qc"], isFresh: { _ in true }))
        #expect(registry.nextQueryWorker(shard: 1, tried: [], isFresh: { _ in true }) == nil)
    }
}
