import Foundation

/// One key of the control plane, with etcd's bookkeeping: the store's
/// revision when it was created and last changed, how many times it was
/// written since it was created, and the lease it lives under (0: none).
package struct KeyValue: Sendable, Equatable {
    package var key: String
    package var value: Data
    package var createRevision: Int
    package var modRevision: Int
    package var version: Int
    package var lease: Int64

    package init(key: String, value: Data, createRevision: Int, modRevision: Int, version: Int, lease: Int64 = 0) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.version = version
        self.lease = lease
    }

    package var string: String { String(decoding: value, as: UTF8.self) }
}

/// What a read returns: the keys found, sorted, and the store's revision when
/// it was read (every later change has a higher one).
package struct RangeResult: Sendable, Equatable {
    package var revision: Int
    package var values: [KeyValue]

    package init(revision: Int, values: [KeyValue]) {
        self.revision = revision
        self.values = values
    }

    package func first(_ key: String) -> KeyValue? { values.first { $0.key == key } }
}

/// A condition of a transaction, on one key (etcd's `Compare`). A key that
/// does not exist has version, create and mod revision 0 and an empty value.
package struct Compare: Sendable, Equatable {
    package enum Target: Sendable, Equatable {
        case version(Int)
        case createRevision(Int)
        case modRevision(Int)
        case value(Data)
    }
    package enum Relation: String, Sendable, Equatable {
        case equal = "EQUAL"
        case notEqual = "NOT_EQUAL"
        case greater = "GREATER"
        case less = "LESS"
    }

    package var key: String
    package var target: Target
    package var relation: Relation

    package init(_ key: String, _ target: Target, _ relation: Relation = .equal) {
        self.key = key
        self.target = target
        self.relation = relation
    }

    /// The key does not exist.
    package static func absent(_ key: String) -> Compare { Compare(key, .version(0)) }
    /// The key was last changed at `revision` (0: it does not exist).
    package static func unchanged(_ key: String, since revision: Int) -> Compare { Compare(key, .modRevision(revision)) }

    /// Whether `kv` (nil: the key does not exist) meets the condition.
    package func holds(for kv: KeyValue?) -> Bool {
        switch target {
        case .version(let n): return Self.relate(kv?.version ?? 0, n, relation)
        case .createRevision(let n): return Self.relate(kv?.createRevision ?? 0, n, relation)
        case .modRevision(let n): return Self.relate(kv?.modRevision ?? 0, n, relation)
        case .value(let v):
            let have = kv?.value ?? Data()
            switch relation {
            case .equal: return have == v
            case .notEqual: return have != v
            case .greater: return have.lexicographicallyPrecedes(v) == false && have != v
            case .less: return have.lexicographicallyPrecedes(v)
            }
        }
    }

    static func relate(_ a: Int, _ b: Int, _ r: Relation) -> Bool {
        switch r {
        case .equal: a == b
        case .notEqual: a != b
        case .greater: a > b
        case .less: a < b
        }
    }
}

/// A change a transaction makes.
package enum Operation: Sendable, Equatable {
    /// Sets the key; with a lease, the key goes when the lease lapses.
    case put(String, Data, lease: Int64 = 0)
    case delete(String)
}

/// Compares, then either every `success` operation or every `failure` one,
/// atomically: the one way the control plane is written.
package struct Transaction: Sendable, Equatable {
    package var compares: [Compare]
    package var success: [Operation]
    package var failure: [Operation]

    package init(if compares: [Compare] = [], then success: [Operation], else failure: [Operation] = []) {
        self.compares = compares
        self.success = success
        self.failure = failure
    }
}

package struct TransactionResult: Sendable, Equatable {
    /// Whether every compare held (and so `success` was applied).
    package var succeeded: Bool
    /// The store's revision after the transaction.
    package var revision: Int

    package init(succeeded: Bool, revision: Int) {
        self.succeeded = succeeded
        self.revision = revision
    }
}

/// A lease: keys put under it live while it is kept alive.
package struct Lease: Sendable, Equatable {
    package var id: Int64
    package var ttlSeconds: Int

    package init(id: Int64, ttlSeconds: Int) {
        self.id = id
        self.ttlSeconds = ttlSeconds
    }
}

/// The control plane's storage: a key-value store with etcd's semantics
/// (revisions, transactions, leases), behind which sit a local file
/// (``FileControlPlane``) and etcd (``EtcdControlPlane``). The decisions
/// made over it (``Leadership``, ``InSyncSet``, ``ShardMap``) are values;
/// the stores only do I/O.
package protocol ControlPlaneStore: Sendable {
    /// The key, or with `prefix` every key that starts with it, sorted.
    func range(_ key: String, prefix: Bool) async throws(ControlPlaneError) -> RangeResult
    func commit(_ transaction: Transaction) async throws(ControlPlaneError) -> TransactionResult
    func grantLease(ttlSeconds: Int) async throws(ControlPlaneError) -> Lease
    /// Renews the lease for its whole time to live; returns the seconds it
    /// now has, 0 when it had lapsed (or was revoked) already: its keys are gone.
    func keepAlive(_ lease: Int64) async throws(ControlPlaneError) -> Int
    /// Ends the lease now; its keys go.
    func revoke(_ lease: Int64) async throws(ControlPlaneError)
    /// What to show of the store in logs and errors.
    var name: String { get }
}

extension ControlPlaneStore {
    package func get(_ key: String) async throws(ControlPlaneError) -> KeyValue? {
        try await range(key, prefix: false).first(key)
    }

    /// Sets a key unconditionally.
    @discardableResult
    package func put(_ key: String, _ value: Data, lease: Int64 = 0) async throws(ControlPlaneError) -> Int {
        try await commit(Transaction(then: [.put(key, value, lease: lease)])).revision
    }

    /// Waits until what `prefix` holds differs from `last` (a key added,
    /// changed or removed), reading every `interval`; returns what it holds
    /// then, or nil when `timeout` passes first. Both backends are read this
    /// way, so a watcher behaves the same on either.
    package func poll(
        prefix: String, changedFrom last: RangeResult, every interval: Duration = .milliseconds(200), timeout: Duration
    ) async throws(ControlPlaneError) -> RangeResult? {
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: timeout)
        let before = last.values.map { "\($0.key)@\($0.modRevision)" }
        while clock.now < end {
            let now = try await range(prefix, prefix: true)
            if now.values.map({ "\($0.key)@\($0.modRevision)" }) != before { return now }
            do { try await Task.sleep(for: interval) } catch { return nil }
        }
        return nil
    }
}

/// Opens the store an endpoint names: `etcd://host:port,host:port/prefix`
/// (etcd's HTTP gateway) or `file:///path/to/control-plane.json`.
package func openControlPlane(_ endpoint: String, timeout: Duration = .seconds(2)) throws(ControlPlaneError) -> any ControlPlaneStore {
    if endpoint.hasPrefix("etcd://") {
        let members = endpoint.dropFirst("etcd://".count).split(separator: ",").map { "http://\($0)" }
        guard !members.isEmpty else { throw ControlPlaneError(.badEndpoint, "'\(endpoint)' names no etcd member") }
        return try EtcdControlPlane(members: members, timeout: timeout)
    }
    if endpoint.hasPrefix("file://") {
        return FileControlPlane(path: String(endpoint.dropFirst("file://".count)))
    }
    throw ControlPlaneError(.badEndpoint, "'\(endpoint)' is not a control plane: expected etcd://HOST:PORT[,HOST:PORT…] or file:///PATH")
}
