import Foundation
import WireProtocol

/// Where a domain's items live: slots to shards to replicas.
///
/// A domain's slot is `hash(domain) mod S` (``Sharding/hash(_:)``), S =
/// shards × ``slotsPerShard``, and slot s belongs to shard `s mod N`. As S is
/// a multiple of N, `slot mod N = hash mod N`: a cluster made before slots
/// existed keeps every item where it is. S is fixed when the cluster is
/// made; doubling N (``split(to:)``) splits shard i into i and i + N, and no
/// other item moves.
package struct ShardMap: Codable, Sendable, Equatable {
    package static let defaultSlotsPerShard = 1024

    /// The slot count, fixed at creation.
    package var slots: Int
    /// The shards' count now (a divisor of `slots`).
    package var shards: Int
    /// Per shard, its replicas' names (as workers register them).
    package var replicas: [[String]]
    /// Raised at every change; queries carry the epoch of the map they were planned with.
    package var epoch: Int

    package struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        package enum Code: String, Sendable { case badShardCount, notAMultiple, tooManyShards }
        package var code: Code
        package var message: String
        package init(code: Code, message: String) {
            self.code = code
            self.message = message
        }
        package var description: String { message }
    }

    /// A new map of `shards` shards with `slotsPerShard` slots each.
    package init(shards: Int, slotsPerShard: Int = ShardMap.defaultSlotsPerShard, replicas: [[String]]? = nil) throws(Invalid) {
        guard shards >= 1, slotsPerShard >= 1 else {
            throw Invalid(code: .badShardCount, message: "a cluster has at least one shard and one slot per shard")
        }
        slots = shards * slotsPerShard
        self.shards = shards
        self.replicas = replicas ?? Array(repeating: [], count: shards)
        epoch = 1
    }

    package func slot(ofDomain domain: String) -> Int { Int(Sharding.hash(domain) % UInt64(slots)) }
    package func shard(ofSlot slot: Int) -> Int { slot % shards }
    package func shard(ofDomain domain: String) -> Int { shard(ofSlot: slot(ofDomain: domain)) }

    /// The slots of `shard`, as ranges are not contiguous: `shard, shard + N, …`.
    package func slots(of shard: Int) -> StrideTo<Int> { stride(from: shard, to: slots, by: shards) }

    /// The map after splitting every shard: shard i keeps the slots s with
    /// `s mod n == i`, and shard i + N·k takes the rest of i's. `n` must be a
    /// multiple of today's count and divide the slot count; the new shards
    /// start with no replicas (they are added as copies, then caught up).
    package func split(to n: Int) throws(Invalid) -> ShardMap {
        guard n > shards, n % shards == 0 else {
            throw Invalid(code: .notAMultiple, message: "a split goes from \(shards) shards to a multiple of \(shards), not \(n)")
        }
        guard slots % n == 0 else {
            throw Invalid(code: .tooManyShards, message: "\(slots) slots cannot be shared by \(n) shards; the largest split is a divisor of \(slots)")
        }
        var next = self
        next.shards = n
        next.replicas = replicas + Array(repeating: [], count: n - shards)
        next.epoch = epoch + 1
        return next
    }

    /// Asked of the map before a split: the shard that shard `j` of the split
    /// map takes its slots from (`j mod N`), the source of its copy.
    package func source(ofNewShard j: Int) -> Int { j % shards }

    package func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    package static func decode(_ data: Data) -> ShardMap? { try? JSONDecoder().decode(Self.self, from: data) }
}

/// A shard's in-sync replicas: those holding every acknowledged change.
///
/// Elasticsearch's rule: a replica leaves the set only through a
/// control-plane transaction made before a write it missed is acknowledged,
/// so a coordinator that takes over can continue the shard from any member
/// and lose no acknowledged write. The last member never leaves: a write
/// it missed fails instead of being acknowledged.
package struct InSyncSet: Codable, Sendable, Equatable {
    package var replicas: [String]
    /// The coordinator epoch that last changed the set.
    package var epoch: Int

    package init(replicas: [String], epoch: Int) {
        self.replicas = replicas.sorted()
        self.epoch = epoch
    }

    /// What taking `replica` out means.
    package enum Removal: Sendable, Equatable {
        /// Write this set (by CAS), then acknowledge.
        case write(InSyncSet)
        /// It is not a member: nothing to write.
        case notMember
        /// It is the last member: the write must fail, not be acknowledged.
        case lastMember
    }

    package func removing(_ replica: String, epoch: Int) -> Removal {
        guard replicas.contains(replica) else { return .notMember }
        guard replicas.count > 1 else { return .lastMember }
        return .write(InSyncSet(replicas: replicas.filter { $0 != replica }, epoch: epoch))
    }

    /// The set with `replica` back in (it has caught up); nil when it is in already.
    package func adding(_ replica: String, epoch: Int) -> InSyncSet? {
        guard !replicas.contains(replica) else { return nil }
        return InSyncSet(replicas: replicas + [replica], epoch: epoch)
    }

    /// The transaction that replaces the set read at `revision` (0: none yet) by this one.
    package func replacing(key: String, readAt revision: Int) -> Transaction {
        Transaction(if: [.unchanged(key, since: revision)], then: [.put(key, encoded())])
    }

    package func encoded() -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)) ?? Data()
    }

    package static func decode(_ data: Data) -> InSyncSet? { try? JSONDecoder().decode(Self.self, from: data) }
}

extension ShardMap {
    /// What a coordinator starting with `--shards shards` makes of the map the
    /// control plane holds (`existing`, nil when there is none yet). The map
    /// agrees when it has `shards` shards, or more made from them by splits.
    package enum Bootstrap: Sendable, Equatable {
        /// No map yet: create this one (the transaction fails if another
        /// coordinator created one meanwhile; then read again).
        case create(ShardMap, Transaction)
        /// The map agrees with the flags.
        case agrees(ShardMap)
        /// The cluster has another shard count: starting would put items on
        /// the wrong shards. The message names both.
        case conflict(String)
    }

    package static func bootstrap(existing: KeyValue?, shards: Int, key: String) -> Bootstrap {
        guard let existing else {
            // A count below one is refused by the coordinator's flags first.
            guard let map = try? ShardMap(shards: max(1, shards)) else { return .conflict("a cluster has at least one shard") }
            return .create(map, Transaction(if: [.absent(key)], then: [.put(key, map.encoded())]))
        }
        guard let map = ShardMap.decode(existing.value) else {
            return .conflict("the control plane's shard map at \(key) cannot be read: \(existing.string.prefix(200))")
        }
        // A cluster made with `shards` that has been split since keeps its
        // slot count, shards × slots per shard: the map's count is the one in force.
        let splitSince = map.shards > shards && map.shards % shards == 0 && map.slots == shards * defaultSlotsPerShard
        guard map.shards == shards || splitSince else {
            return .conflict(
                "the cluster has \(map.shards) shards (the control plane's shard map, epoch \(map.epoch)), "
                    + "but this coordinator was started with --shards \(shards)")
        }
        return .agrees(map)
    }
}
