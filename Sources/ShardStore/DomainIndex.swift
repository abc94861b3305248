import Foundation
import SQLite
import Synchronization

/// Every domain a shard holds with its items' ids, kept per shard (shared by
/// a process's read-only connections: see ``SharedColumns``) so that a
/// domain condition is a lookup in memory rather than a read of the
/// domain's rows and a sort at every query. Keyed requests need it: an app's
/// scope is the condition `domain(["@APP"])` on every query and search its
/// keys make (see `TenantScope`), and an app holds up to the whole shard.
///
/// Kept current with each commit rather than read again: item ids are never
/// reused and come from the `meta` counter `items.nextid` (see
/// ``ShardStore/nextItemID()``), so the items written since the index was
/// current are those at or above the counter it last saw, read by id range
/// with their domains and appended (they sort after every id held). Items
/// removed since (deleted, replaced, moved to another domain, purged) come
/// from the shard's ``RemovalLog`` and are taken out, in a new index (one
/// being read is never changed). When the log does not
/// reach back to the index's mark (or the shard has none), removals show as
/// fewer items than held plus added, and the index is read again, as it is
/// when the content was replaced from a copy (a new `items.epoch`) or when
/// the shard has no counter yet.
///
/// Domains compare as SQLite compares them (their UTF-8 bytes), so answers
/// are the ones the `items_domain` range gives: `org.debian` covers itself
/// and `org.debian.games`, not `org.debiantools`.
final class DomainIndex: Sendable {
    /// The distinct domains, sorted by their UTF-8 bytes.
    private let domains: [[UInt8]]
    /// Each domain's item ids, sorted, aligned with ``domains``.
    private let members: [[Int64]]
    /// Items held.
    let count: Int
    /// The shard's `items.nextid` when last current: every item id below it
    /// is accounted for, and every item stored since has an id at or above it.
    let watermark: Int64
    /// The shard's `items.epoch` when read.
    let epoch: String
    /// The shard's removal log when last current (nil: the shard had none).
    let mark: ChangeMark?
    /// Per domain asked, its items and its subdomains', as ids and bits: an
    /// app asks for the same scope at every request. The one part that
    /// changes once built, so that connections can share an index (see
    /// ``SharedColumns``).
    private let scopes: Mutex<[[UInt8]: ItemScope]>
    /// Domains whose ids ``scopes`` keeps at most: the apps that share a
    /// shard, and clients' own domain tests, without holding every one asked.
    static let maxScopes = 1_024

    /// An index's domains and members while they are read.
    struct Builder {
        var domains: [[UInt8]] = []
        var members: [[Int64]] = []
        var count = 0

        /// Adds one item: rows come ordered by domain, then id.
        mutating func append(_ domain: UnsafeBufferPointer<UInt8>, _ id: Int64) {
            if domains.isEmpty || !domains[domains.count - 1].elementsEqual(domain) {
                domains.append(Array(domain))
                members.append([])
            }
            members[members.count - 1].append(id)
            count += 1
        }
    }

    init(_ built: Builder, watermark: Int64, epoch: String, mark: ChangeMark?, scopes: [[UInt8]: ItemScope] = [:]) {
        domains = built.domains
        members = built.members
        count = built.count
        self.watermark = watermark
        self.epoch = epoch
        self.mark = mark
        self.scopes = Mutex(scopes)
    }

    /// This index with the items `removed` names left out (sorted; ids not
    /// held are passed over) and the items stored since it was current put
    /// in (`added`, in id order, every id at or above ``watermark``), as a
    /// new index: connections may still read this one. Nil when the shard's
    /// `total` items are not those, so that some removal went unseen.
    func patched(
        removed: [Int64], added: [(domain: [UInt8], id: Int64)], total: Int, watermark: Int64, mark: ChangeMark?
    ) -> DomainIndex? {
        var next = Builder(domains: domains, members: members, count: count)
        var scopes = self.scopes.withLock { $0 }
        if !removed.isEmpty {
            let gone = IDBits(removed)
            var held = 0
            // Only the groups holding a removed id are written: the others
            // stay shared with this index rather than copied.
            for g in next.members.indices.reversed() where next.members[g].contains(where: gone.contains) {
                let before = next.members[g].count
                next.members[g].removeAll { gone.contains($0) }
                held += before - next.members[g].count
                if next.members[g].isEmpty {
                    next.members.remove(at: g)
                    next.domains.remove(at: g)
                }
            }
            if held > 0 {
                for scope in Array(scopes.keys) { scopes[scope]!.remove(gone) }
            }
            next.count -= held
        }
        guard total == next.count + added.count else { return nil }
        for (domain, id) in added {
            let at = Self.lowerBound(domain, in: next.domains)
            if at == next.domains.count || next.domains[at] != domain {
                next.domains.insert(domain, at: at)
                next.members.insert([], at: at)
            }
            next.members[at].append(id)
        }
        for scope in Array(scopes.keys) {
            let within = added.lazy.filter { Self.domain($0.domain, isWithin: scope) }.map(\.id)
            if !within.isEmpty { scopes[scope]!.append(Array(within)) }
        }
        next.count += added.count
        return DomainIndex(next, watermark: watermark, epoch: epoch, mark: mark, scopes: scopes)
    }

    /// The ids of the items of `domain` and of all its subdomains, sorted.
    func ids(within domain: String) -> [Int64] { scope(within: domain).ids }

    /// The items of `domain` and of all its subdomains.
    func scope(within domain: String) -> ItemScope {
        let key = Array(domain.utf8)
        if let held = scopes.withLock({ $0[key] }) { return held }
        // The domain itself, then its subdomains: those sort from `domain.`
        // up to `domain/` ('/' follows '.').
        var groups: [Int] = []
        let own = Self.lowerBound(key, in: domains)
        if own < domains.count, domains[own] == key { groups.append(own) }
        var at = Self.lowerBound(key + [UInt8(ascii: ".")], in: domains)
        while at < domains.count, Self.domain(domains[at], isWithin: key) {
            groups.append(at)
            at += 1
        }
        let ids: [Int64]
        switch groups.count {
        case 0: ids = []
        case 1: ids = members[groups[0]]
        default:
            // One bit per id, then read out in order: every group's ids at
            // once instead of a union per group.
            let bits = IDBits(maxID: Int(max(0, watermark))) { words in
                for g in groups {
                    for id in members[g] where id >= 0 { words[Int(id) >> 6] |= 1 << UInt64(id & 63) }
                }
            }
            ids = bits.ids
        }
        let scope = ItemScope(ids)
        scopes.withLock { scopes in
            if scopes.count >= Self.maxScopes { scopes = [:] }
            scopes[key] = scope
        }
        return scope
    }

    /// The ids of the items of every domain (exactly it, not its
    /// subdomains) whose UTF-8 bytes `include` accepts, sorted.
    func ids(ofDomains include: ([UInt8]) -> Bool) -> [Int64] {
        let bits = IDBits(maxID: Int(max(0, watermark))) { words in
            for (g, domain) in domains.enumerated() where include(domain) {
                for id in members[g] where id >= 0 { words[Int(id) >> 6] |= 1 << UInt64(id & 63) }
            }
        }
        return bits.ids
    }

    /// Whether `domain` is `ancestor` or lies below it, by bytes.
    static func domain(_ domain: [UInt8], isWithin ancestor: [UInt8]) -> Bool {
        guard domain.count >= ancestor.count, domain.starts(with: ancestor) else { return false }
        return domain.count == ancestor.count || domain[ancestor.count] == UInt8(ascii: ".")
    }

    /// The first position in `sorted` whose bytes are not below `key`'s.
    static func lowerBound(_ key: [UInt8], in sorted: [[UInt8]]) -> Int {
        var lo = 0, hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if sorted[mid].lexicographicallyPrecedes(key) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

/// The items of an app's scope (or of any domain condition), as sorted ids
/// and as bits: the bits test a candidate in one load, so narrowing a list
/// of candidates to the scope costs a test per candidate rather than a merge
/// with every item of the app, and a search's word bits are narrowed word by
/// word (see ``SearchRun/run()``).
struct ItemScope {
    private(set) var ids: [Int64]
    private(set) var bits: IDBits

    init(_ ids: [Int64]) {
        self.ids = ids
        bits = IDBits(ids)
    }

    /// Adds ids above every one held, in order.
    mutating func append(_ more: [Int64]) {
        ids += more
        for id in more { bits.insert(id) }
    }

    /// Leaves out the ids `gone` holds (a scope that holds none of them is
    /// not written, so it stays shared with any copy).
    mutating func remove(_ gone: IDBits) {
        guard ids.contains(where: gone.contains) else { return }
        ids.removeAll { gone.contains($0) }
        bits = IDBits(ids)
    }

    /// The items in both.
    func intersection(_ other: ItemScope) -> ItemScope {
        var out = self
        out.ids = other.bits.filter(ids)
        out.bits = bits.intersection(other.bits)
        return out
    }

    /// The items in either.
    func union(_ other: ItemScope) -> ItemScope {
        var out = self
        out.ids = IDs.union(ids, other.ids)
        out.bits = bits.union(other.bits)
        return out
    }

    /// The ids of sorted `candidates` within the scope.
    func filter(_ candidates: [Int64]) -> [Int64] { bits.filter(candidates) }
}

extension ShardStore {
    /// A plan's domain conditions at its top, apart from the rest: the items
    /// they allow (nil when there are none, or when they allow every item)
    /// and the node left to decide. Every keyed request is
    /// `and(domain(["@APP"]), …)`: taking the scope out lets the word and
    /// substring streams serve it, and spares each checked candidate a read
    /// of its domain.
    /// While a split's purge is under way, the scope leaves out the items of
    /// the slots another shard owns (``slotScope()``), whatever the node.
    func scoped(_ node: Node, _ context: QueryContext) throws -> (scope: ItemScope?, rest: Node) {
        let (scope, rest) = try domainScoped(node, context)
        guard let kept = try slotScope() else { return (scope, rest) }
        return (scope.map { $0.intersection(kept) } ?? kept, rest)
    }

    func domainScoped(_ node: Node, _ context: QueryContext) throws -> (scope: ItemScope?, rest: Node) {
        switch node {
        case .domain(let domains): return (try domainScope(domains, context), .all)
        case .and(let nodes):
            var scope: ItemScope?
            var rest: [Node] = []
            for n in nodes {
                guard case .domain(let domains) = n else { rest.append(n); continue }
                guard let items = try domainScope(domains, context) else { continue }
                scope = scope.map { $0.intersection(items) } ?? items
            }
            guard scope != nil || rest.count < nodes.count else { return (nil, node) }
            return (scope, rest.isEmpty ? .all : rest.count == 1 ? rest[0] : .and(rest))
        default: return (nil, node)
        }
    }

    /// ``domainCandidates(_:_:)`` as an ``ItemScope``.
    func domainScope(_ domains: [String], _ context: QueryContext) throws -> ItemScope? {
        if domains.count == 1, let index = try currentDomainIndex() {
            let scope = index.scope(within: domains[0])
            return scope.ids.count == index.count ? nil : scope
        }
        return try domainCandidates(domains, context).map(ItemScope.init)
    }

    /// The items within any of `domains` (each with its subdomains), sorted,
    /// or nil when that is every item of the shard: an app alone on its
    /// shard (or a single-app deployment's) is then no condition at all, and
    /// a search or query skips intersecting its candidates with the whole
    /// shard. From the connection's ``DomainIndex`` when it can hold one,
    /// else from the `items_domain` index.
    func domainCandidates(_ domains: [String], _ context: QueryContext) throws -> [Int64]? {
        var ids: [Int64] = []
        let all: Int
        if let index = try currentDomainIndex() {
            for d in domains { ids = IDs.union(ids, index.ids(within: d)) }
            all = index.count
        } else {
            for d in domains { ids += try itemIDs(inDomain: d) }
            ids = IDs.sortedUnique(ids)
            all = try universe(context).count
        }
        // Every id is an item's, so as many ids as items are all of them.
        return ids.count == all ? nil : ids
    }

    /// The connection's ``DomainIndex``, brought up to the data it reads;
    /// nil while it stores items (the id counter is in memory then) or when
    /// the shard has no id counter (one never written since ids had one).
    ///
    /// A read-only connection takes the index of its data from the
    /// process's ``SharedColumns`` when another has read or patched it, and
    /// shares its own.
    func currentDomainIndex() throws -> DomainIndex? {
        let version = dataSeen
        if let (held, index) = universeCache.domains, held == version { return index }
        guard pendingItemID == nil else { return nil }
        guard let next = try db.prepare("SELECT value FROM meta WHERE key = 'items.nextid'").scalar()?.string.flatMap({ Int64($0) }) else {
            universeCache.domains = nil
            return nil
        }
        let epoch = try itemsEpoch()
        let mark = try changeMark()
        let shares = sharesColumns
        if shares, let mark, let index = SharedColumns.shared.columns(path: path, mark: mark)?.domains {
            searchCache.columnsTaken += 1
            universeCache.domains = (version, index)
            return index
        }
        func keep(_ index: DomainIndex) -> DomainIndex {
            universeCache.domains = (version, index)
            if shares, let mark { SharedColumns.shared.publish(path: path, mark: mark) { $0.domains = index } }
            return index
        }
        if let (_, index) = universeCache.domains, index.epoch == epoch, index.watermark <= next {
            let s = try db.prepare("SELECT domain, id FROM items WHERE id >= ? ORDER BY id")
            try s.bind(index.watermark, at: 0)
            defer { try? s.reset() }
            var added: [(domain: [UInt8], id: Int64)] = []
            while try s.step() { added.append((s.withUTF8(at: 0, Array.init) ?? [], s.int64(at: 1))) }
            // Items removed since: from the removal log when it reaches back
            // to the index's mark; otherwise none is patched, and any
            // removal shows in the count.
            var removed: [Int64] = []
            if let old = index.mark, let mark, let known = try self.removed(since: old, upTo: mark) { removed = known }
            let total = try db.prepare("SELECT count(*) FROM items").scalar()?.int64 ?? 0
            if let patched = index.patched(removed: removed, added: added, total: Int(total), watermark: next, mark: mark) {
                return keep(patched)
            }
        }
        // Ordered by the domain index itself: no sort.
        domainIndexReads += 1
        var built = DomainIndex.Builder()
        let s = try db.prepare("SELECT domain, id FROM items INDEXED BY items_domain ORDER BY domain, id")
        defer { try? s.reset() }
        while try s.step() {
            let id = s.int64(at: 1)
            s.withUTF8(at: 0) { built.append($0, id) }
        }
        return keep(DomainIndex(built, watermark: next, epoch: epoch, mark: mark))
    }
}
