import ControlPlane
import Foundation
import Testing

/// The etcd backend against a real 3-member etcd cluster on loopback.
@Suite(.serialized) struct EtcdControlPlaneTests {
    @Test func theContractOnARealCluster() async throws {
        let cluster = try EtcdCluster()
        defer { cluster.stop() }
        _ = try await cluster.waitForLeader()
        let store = try EtcdControlPlane(members: cluster.urls)
        try await StoreContract.compareAndSwap(store, prefix: "/t/")
        try await StoreContract.prefixes(store, prefix: "/t/")
        try await StoreContract.revokedLease(store, prefix: "/t/")
        try await StoreContract.poll(store, prefix: "/t/")
        // A bad lease is etcd's refusal, named.
        let refusal = await #expect(throws: ControlPlaneError.self) { try await store.put("/t/x", Data(), lease: 12345) }
        #expect(refusal?.code == .refused)
    }

    @Test func aLeaseNotKeptAliveLapsesAndTakesItsKey() async throws {
        let cluster = try EtcdCluster()
        defer { cluster.stop() }
        _ = try await cluster.waitForLeader()
        let store = try EtcdControlPlane(members: cluster.urls)
        // Timed from before the grant: the lease's time runs from when etcd
        // granted it, so the key lives at least its TTL past this instant
        // however long the grant and the first writes took on a busy machine.
        let start = ContinuousClock.now
        // Long enough that the put and the first read, on a loaded machine
        // with three members syncing to disk, come well within it.
        let lease = try await store.grantLease(ttlSeconds: 5)
        try await store.put("/t/leased", Data("x".utf8), lease: lease.id)
        #expect(try await store.get("/t/leased")?.lease == lease.id)
        while try await store.get("/t/leased") != nil {
            #expect(start.duration(to: .now) < .seconds(20), "the key outlived its lease by far")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(start.duration(to: .now) > .milliseconds(4500))
        #expect(try await store.keepAlive(lease.id) == 0)
    }

    /// The leader is killed while a client keeps swapping a counter: the
    /// client moves to another member, and every swap it was told succeeded
    /// is in the final value (none lost, none counted twice).
    @Test func theLeaderKilledWhileAClientKeepsWriting() async throws {
        let cluster = try EtcdCluster()
        defer { cluster.stop() }
        let first = try await cluster.waitForLeader()
        // The leader listed first, so that the client's first member is the one killed.
        let order = [first] + (0..<3).filter { $0 != first }
        let store = try EtcdControlPlane(members: order.map { cluster.urls[$0] }, timeout: .seconds(1))
        let key = "/t/counter"
        var acknowledged: [Int] = []
        var failures = 0
        var killed = false
        let start = ContinuousClock.now
        while acknowledged.count < 200, start.duration(to: .now) < .seconds(60) {
            if acknowledged.count == 50, !killed {
                cluster.kill(first)
                killed = true
            }
            do {
                let kv = try await store.get(key)
                let n = Int(kv?.string ?? "0") ?? 0
                let t = try await store.commit(
                    Transaction(if: [.unchanged(key, since: kv?.modRevision ?? 0)], then: [.put(key, Data(String(n + 1).utf8))]))
                if t.succeeded { acknowledged.append(n + 1) }
            } catch {
                failures += 1
            }
        }
        #expect(killed && acknowledged.count == 200, "only \(acknowledged.count) swaps in a minute (\(failures) failed calls)")
        let leader = try await cluster.waitForLeader()
        #expect(leader != first)
        let final = Int(try await store.get(key)?.string ?? "") ?? -1
        #expect(Set(acknowledged).count == acknowledged.count, "a value was acknowledged twice")
        // A swap resent after a timeout may have been applied the first time
        // (and then fail its compare): the final value is at least every
        // acknowledged one, and exactly the last acknowledged one here, as
        // nothing was written after it.
        #expect(final == acknowledged.last)
        #expect(acknowledged == acknowledged.sorted())
    }
}
