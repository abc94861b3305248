import ControlPlane
import Foundation
import Testing

/// What both backends must do alike: transactions that compare and swap,
/// prefixes, leases that lapse or are revoked, and polling for a change.
enum StoreContract {
    static func data(_ s: String) -> Data { Data(s.utf8) }

    /// Two writers read the same revision; only the first swap wins.
    static func compareAndSwap(_ store: any ControlPlaneStore, prefix: String) async throws {
        let key = prefix + "cas"
        let first = try await store.commit(Transaction(if: [.absent(key)], then: [.put(key, data("1"))]))
        #expect(first.succeeded)
        let again = try await store.commit(Transaction(if: [.absent(key)], then: [.put(key, data("x"))]))
        #expect(!again.succeeded, "a second create of the same key must fail")
        let read = try #require(try await store.get(key))
        #expect(read.string == "1" && read.version == 1 && read.modRevision == first.revision)
        let a = try await store.commit(Transaction(if: [.unchanged(key, since: read.modRevision)], then: [.put(key, data("2"))]))
        let b = try await store.commit(
            Transaction(if: [.unchanged(key, since: read.modRevision)], then: [.put(key, data("3"))], else: [.put(prefix + "lost", data("b"))]))
        #expect(a.succeeded && !b.succeeded)
        let now = try #require(try await store.get(key))
        #expect(now.string == "2" && now.version == 2 && now.createRevision == read.createRevision)
        #expect(try await store.get(prefix + "lost")?.string == "b", "the failure branch runs when a compare fails")
        // A transaction is all or nothing: compares on two keys, one failing.
        let both = try await store.commit(
            Transaction(if: [.unchanged(key, since: now.modRevision), .absent(prefix + "lost")], then: [.put(key, data("4"))]))
        #expect(!both.succeeded)
        #expect(try await store.get(key)?.string == "2")
        let deleted = try await store.commit(Transaction(if: [Compare(key, .value(data("2")))], then: [.delete(key)]))
        #expect(deleted.succeeded)
        #expect(try await store.get(key) == nil)
    }

    static func prefixes(_ store: any ControlPlaneStore, prefix: String) async throws {
        for k in ["a/1", "a/2", "a/3", "b/1"] { try await store.put(prefix + k, data(k)) }
        let a = try await store.range(prefix + "a/", prefix: true)
        #expect(a.values.map(\.key) == ["a/1", "a/2", "a/3"].map { prefix + $0 })
        #expect(a.revision >= a.values.map(\.modRevision).max() ?? 0)
        #expect(try await store.range(prefix + "a/", prefix: false).values.isEmpty)
    }

    /// A key under a revoked lease goes at once; a lapsed lease cannot be renewed or used.
    static func revokedLease(_ store: any ControlPlaneStore, prefix: String) async throws {
        let lease = try await store.grantLease(ttlSeconds: 30)
        try await store.put(prefix + "leased", data("x"), lease: lease.id)
        #expect(try await store.get(prefix + "leased")?.lease == lease.id)
        #expect(try await store.keepAlive(lease.id) > 0)
        try await store.revoke(lease.id)
        #expect(try await store.get(prefix + "leased") == nil)
        #expect(try await store.keepAlive(lease.id) == 0)
        await #expect(throws: ControlPlaneError.self) { try await store.put(prefix + "late", data("y"), lease: lease.id) }
    }

    static func poll(_ store: any ControlPlaneStore, prefix: String) async throws {
        let before = try await store.range(prefix + "w/", prefix: true)
        let writer = Task {
            try await Task.sleep(for: .milliseconds(300))
            try await store.put(prefix + "w/k", data("v"))
        }
        // The bound is far above the write's usual few milliseconds: on a
        // loaded machine a three-member etcd may hold an election first.
        let changed = try await store.poll(prefix: prefix + "w/", changedFrom: before, every: .milliseconds(50), timeout: .seconds(30))
        try await writer.value
        #expect(changed?.values.map(\.string) == ["v"])
        let quiet = try await store.poll(
            prefix: prefix + "w/", changedFrom: try #require(changed), every: .milliseconds(50), timeout: .milliseconds(300))
        #expect(quiet == nil)
    }
}

@Suite struct FileControlPlaneTests {
    func tempFile() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-cp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent("control-plane.json").path
    }

    @Test func theContract() async throws {
        let store = FileControlPlane(path: try tempFile())
        try await StoreContract.compareAndSwap(store, prefix: "/t/")
        try await StoreContract.prefixes(store, prefix: "/t/")
        try await StoreContract.revokedLease(store, prefix: "/t/")
        try await StoreContract.poll(store, prefix: "/t/")
    }

    @Test func aLeaseLapsesByTheClockAndTakesItsKeys() async throws {
        let clock = Clock()
        let path = try tempFile()
        let store = FileControlPlane(path: path, now: { clock.now })
        let lease = try await store.grantLease(ttlSeconds: 3)
        try await store.put("/t/leased", Data("x".utf8), lease: lease.id)
        try await store.put("/t/kept", Data("y".utf8))
        clock.advance(2)
        #expect(try await store.keepAlive(lease.id) == 3)
        clock.advance(2.5)
        #expect(try await store.get("/t/leased") != nil, "renewed at 2 s, it lives until 5 s")
        clock.advance(1)
        #expect(try await store.get("/t/leased") == nil)
        #expect(try await store.get("/t/kept") != nil)
        #expect(try await store.keepAlive(lease.id) == 0)
        // Another process (another store on the same file) sees the same.
        #expect(try await FileControlPlane(path: path, now: { clock.now }).get("/t/leased") == nil)
    }

    /// The lock is the kernel's: a transaction waits while another process holds it. The holder
    /// marks the moment just before it lets go, so the check is an order of events, not a duration
    /// a loaded machine could stretch.
    @Test func anotherProcessHoldingTheLockMakesATransactionWait() async throws {
        let path = try tempFile()
        let store = FileControlPlane(path: path)
        try await store.put("/t/k", Data("1".utf8))
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        let ready = path + ".held"
        let releasing = path + ".releasing"
        holder.arguments = [
            "-c",
            "import fcntl,time,sys\nf=open(sys.argv[1]+'.lock','a')\nfcntl.flock(f,fcntl.LOCK_EX)\nopen(sys.argv[2],'w').close()\ntime.sleep(1)\nopen(sys.argv[3],'w').close()",
            path, ready, releasing,
        ]
        try holder.run()
        while !FileManager.default.fileExists(atPath: ready) { try await Task.sleep(for: .milliseconds(20)) }
        try await store.put("/t/k", Data("2".utf8))
        let waited = FileManager.default.fileExists(atPath: releasing)
        holder.waitUntilExit()
        #expect(waited, "the put went ahead while another process held the lock")
        #expect(try await store.get("/t/k")?.string == "2")
    }

    final class Clock: @unchecked Sendable {
        // @unchecked Sendable: a lock guards `t`.
        private let lock = NSLock()
        private var t = 1_000_000.0
        var now: Double { lock.withLock { t } }
        func advance(_ s: Double) { lock.withLock { t += s } }
    }
}
