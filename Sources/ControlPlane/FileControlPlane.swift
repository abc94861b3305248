import Foundation
import LimelightConcurrency

#if canImport(Glibc)
    import Glibc
#endif

/// The control plane of one host: one JSON file, read and changed under an
/// exclusive `flock` on a lock file beside it, and replaced atomically (a
/// temporary file, fsync, rename), so that any process on the host sees
/// whole transactions and a crash leaves the last one whole.
///
/// Revisions, versions and leases behave as etcd's do, so the same
/// decisions run over either backend. A lease lapses by the wall clock (the
/// processes sharing the file share the clock); the keys of a lapsed lease
/// are removed by the next call that takes the lock, before it reads.
/// Every call runs on the store's own thread: `flock` and file I/O block.
package final class FileControlPlane: ControlPlaneStore {
    package let path: String
    let thread = DedicatedThread(label: "limelight.control-plane.file")
    /// The wall clock, in seconds; a parameter so that tests can make leases lapse.
    let now: @Sendable () -> Double

    package init(path: String, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.path = path
        self.now = now
    }

    deinit { thread.stop() }

    package var name: String { "file://\(path)" }

    /// What the file holds.
    struct Contents: Codable {
        struct Entry: Codable {
            var value: Data
            var create: Int
            var mod: Int
            var version: Int
            var lease: Int64
        }
        struct LeaseEntry: Codable {
            var ttl: Int
            var expires: Double
        }
        var revision = 0
        var nextLease: Int64 = 1
        var keys: [String: Entry] = [:]
        var leases: [String: LeaseEntry] = [:]
    }

    package func range(_ key: String, prefix: Bool) async throws(ControlPlaneError) -> RangeResult {
        try await locked { c in
            let found = c.keys.filter { prefix ? $0.key.hasPrefix(key) : $0.key == key }
                .map {
                    KeyValue(
                        key: $0.key, value: $0.value.value, createRevision: $0.value.create, modRevision: $0.value.mod, version: $0.value.version,
                        lease: $0.value.lease)
                }
                .sorted { $0.key < $1.key }
            return RangeResult(revision: c.revision, values: found)
        }
    }

    package func commit(_ t: Transaction) async throws(ControlPlaneError) -> TransactionResult {
        try await locked { c throws(ControlPlaneError) in
            let holds = t.compares.allSatisfy { cmp in
                cmp.holds(
                    for: c.keys[cmp.key].map {
                        KeyValue(key: cmp.key, value: $0.value, createRevision: $0.create, modRevision: $0.mod, version: $0.version)
                    })
            }
            let ops = holds ? t.success : t.failure
            for case .put(_, _, let lease) in ops where lease != 0 && c.leases[String(lease)] == nil {
                throw ControlPlaneError(.refused, "lease \(lease) not found (it lapsed or was revoked)")
            }
            if !ops.isEmpty { c.revision += 1 }
            for op in ops {
                switch op {
                case .put(let key, let value, let lease):
                    let old = c.keys[key]
                    c.keys[key] = Contents.Entry(
                        value: value, create: old?.create ?? c.revision, mod: c.revision, version: (old?.version ?? 0) + 1, lease: lease)
                case .delete(let key):
                    c.keys.removeValue(forKey: key)
                }
            }
            return TransactionResult(succeeded: holds, revision: c.revision)
        }
    }

    package func grantLease(ttlSeconds: Int) async throws(ControlPlaneError) -> Lease {
        let now = self.now
        return try await locked { c in
            let id = c.nextLease
            c.nextLease += 1
            c.leases[String(id)] = Contents.LeaseEntry(ttl: ttlSeconds, expires: now() + Double(ttlSeconds))
            return Lease(id: id, ttlSeconds: ttlSeconds)
        }
    }

    package func keepAlive(_ lease: Int64) async throws(ControlPlaneError) -> Int {
        let now = self.now
        return try await locked { c in
            guard var l = c.leases[String(lease)] else { return 0 }
            l.expires = now() + Double(l.ttl)
            c.leases[String(lease)] = l
            return l.ttl
        }
    }

    package func revoke(_ lease: Int64) async throws(ControlPlaneError) {
        try await locked { c in
            guard c.leases.removeValue(forKey: String(lease)) != nil else { return }
            Self.dropKeys(of: [lease], from: &c)
        }
    }

    /// Removes the keys of `leases` as one change (one revision), as etcd does.
    static func dropKeys(of leases: Set<Int64>, from c: inout Contents) {
        let doomed = c.keys.filter { leases.contains($0.value.lease) }.map(\.key)
        guard !doomed.isEmpty else { return }
        c.revision += 1
        for k in doomed { c.keys.removeValue(forKey: k) }
    }

    /// Runs `body` on the file's contents under the lock, after lapsed leases
    /// are dropped, and writes the file back when anything changed.
    func locked<T: Sendable>(_ body: @escaping @Sendable (inout Contents) throws(ControlPlaneError) -> T) async throws(ControlPlaneError) -> T {
        let path = self.path, now = self.now
        do {
            return try await thread.run { () throws -> T in
                let fd = open(path + ".lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw ControlPlaneError(.io, "cannot open \(path).lock: \(String(cString: strerror(errno)))") }
                defer { close(fd) }
                while flock(fd, LOCK_EX) != 0 {
                    guard errno == EINTR else { throw ControlPlaneError(.io, "cannot lock \(path).lock: \(String(cString: strerror(errno)))") }
                }
                defer { flock(fd, LOCK_UN) }
                var contents = try Self.read(path)
                let before = contents.revision, leasesBefore = contents.leases.count, nextBefore = contents.nextLease
                let expiresBefore = contents.leases.mapValues(\.expires)
                let t = now()
                let lapsed = Set(contents.leases.filter { $0.value.expires <= t }.compactMap { Int64($0.key) })
                for id in lapsed { contents.leases.removeValue(forKey: String(id)) }
                Self.dropKeys(of: lapsed, from: &contents)
                let result = try body(&contents)
                if contents.revision != before || contents.leases.count != leasesBefore || contents.nextLease != nextBefore
                    || contents.leases.mapValues(\.expires) != expiresBefore
                {
                    try Self.write(contents, to: path)
                }
                return result
            }
        } catch let e as ControlPlaneError {
            throw e
        } catch {
            throw ControlPlaneError(.io, "\(path): \(error)")
        }
    }

    static func read(_ path: String) throws(ControlPlaneError) -> Contents {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return Contents() }
        do { return try JSONDecoder().decode(Contents.self, from: data) } catch {
            throw ControlPlaneError(.badResponse, "\(path) is not a control-plane file: \(error)")
        }
    }

    static func write(_ c: Contents, to path: String) throws(ControlPlaneError) {
        let tmp = path + ".tmp"
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(c)
            let fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ControlPlaneError(.io, "cannot write \(tmp): \(String(cString: strerror(errno)))") }
            let written = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd)
            close(fd)
            guard written == data.count, synced == 0 else { throw ControlPlaneError(.io, "cannot write \(tmp): \(String(cString: strerror(errno)))") }
            guard rename(tmp, path) == 0 else { throw ControlPlaneError(.io, "cannot replace \(path): \(String(cString: strerror(errno)))") }
        } catch let e as ControlPlaneError {
            throw e
        } catch {
            throw ControlPlaneError(.io, "cannot encode \(path): \(error)")
        }
    }
}
