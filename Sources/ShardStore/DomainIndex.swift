import Foundation
import SQLite

/// Every domain a shard holds with its items' ids, kept by one connection so
/// that a domain condition is a lookup in memory rather than a read of the
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
/// from the shard's ``RemovalLog`` and are taken out. When the log does not
/// reach back to the index's mark (or the shard has none), removals show as
/// fewer items than held plus added, and the index is read again, as it is
/// when the content was replaced from a copy (a new `items.epoch`) or when
/// the shard has no counter yet.
///
/// Domains compare as SQLite compares them (their UTF-8 bytes), so answers
/// are the ones the `items_domain` range gives: `org.debian` covers itself
/// and `org.debian.games`, not `org.debiantools`.
final class DomainIndex {
    /// The distinct domains, sorted by their UTF-8 bytes.
    private var domains: [[UInt8]] = []
    /// Each domain's item ids, sorted, aligned with ``domains``.
    private var members: [[Int64]] = []
    /// Items held.
    private(set) var count = 0
    /// The shard's `items.nextid` when last current: every item id below it
    /// is accounted for, and every item stored since has an id at or above it.
    private(set) var watermark: Int64 = 0
    /// The shard's `items.epoch` when read.
    private(set) var epoch = ""
    /// The shard's removal log when last current (nil: the shard had none).
    private(set) var mark: ChangeMark?
    /// The data it is current for (``ShardStore/dataSeen``).
    var version: UniverseCache.Version
    /// Per domain asked, its items and its subdomains', as ids and bits: an
    /// app asks for the same scope at every request.
    private var scopes: [[UInt8]: ItemScope] = [:]
    /// Domains whose ids ``scopes`` keeps at most: the apps that share a
    /// shard, and clients' own domain tests, without holding every one asked.
    static let maxScopes = 1_024

    /// An empty index; ``append(_:_:)`` fills it.
    init(watermark: Int64, epoch: String, mark: ChangeMark?, version: UniverseCache.Version) {
        self.watermark = watermark
        self.epoch = epoch
        self.mark = mark
        self.version = version
    }

    /// Adds one item while the index is read: rows come ordered by domain,
    /// then id.
    func append(_ domain: UnsafeBufferPointer<UInt8>, _ id: Int64) {
        if domains.isEmpty || !domains[domains.count - 1].elementsEqual(domain) {
            domains.append(Array(domain))
            members.append([])
        }
        members[members.count - 1].append(id)
        count += 1
    }

    /// Adds items stored since the index was current: `rows` in id order,
    /// every id at or above ``watermark``.
    func add(_ rows: [(domain: [UInt8], id: Int64)], watermark: Int64, mark: ChangeMark?, version: UniverseCache.Version) {
        for (domain, id) in rows {
            let at = Self.lowerBound(domain, in: domains)
            if at == domains.count || domains[at] != domain {
                domains.insert(domain, at: at)
                members.insert([], at: at)
            }
            members[at].append(id)
        }
        for scope in Array(scopes.keys) {
            let within = rows.lazy.filter { Self.domain($0.domain, isWithin: scope) }.map(\.id)
            if !within.isEmpty { scopes[scope]!.append(Array(within)) }
        }
        count += rows.count
        self.watermark = watermark
        self.mark = mark
        self.version = version
    }

    /// Removes the items `removed` names (sorted; ids not held are passed
    /// over) and returns how many it held: the items deleted since the
    /// index was current, from the shard's ``RemovalLog``.
    @discardableResult
    func remove(_ removed: [Int64]) -> Int {
        guard !removed.isEmpty else { return 0 }
        let gone = IDBits(removed)
        var held = 0
        for g in members.indices.reversed() {
            let before = members[g].count
            members[g].removeAll { gone.contains($0) }
            held += before - members[g].count
            if members[g].isEmpty {
                members.remove(at: g)
                domains.remove(at: g)
            }
        }
        if held > 0 {
            for scope in Array(scopes.keys) { scopes[scope]!.remove(gone) }
        }
        count -= held
        return held
    }

    /// The ids of the items of `domain` and of all its subdomains, sorted.
    func ids(within domain: String) -> [Int64] { scope(within: domain).ids }

    /// The items of `domain` and of all its subdomains.
    func scope(within domain: String) -> ItemScope {
        let key = Array(domain.utf8)
        if let held = scopes[key] { return held }
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
        if scopes.count >= Self.maxScopes { scopes = [:] }
        let scope = ItemScope(ids)
        scopes[key] = scope
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

    /// Leaves out the ids `gone` holds.
    mutating func remove(_ gone: IDBits) {
        let before = ids.count
        ids.removeAll { gone.contains($0) }
        guard ids.count < before else { return }
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
    func currentDomainIndex() throws -> DomainIndex? {
        let version = dataSeen
        if let index = universeCache.domains, index.version == version { return index }
        guard pendingItemID == nil else { return nil }
        guard let next = try db.prepare("SELECT value FROM meta WHERE key = 'items.nextid'").scalar()?.string.flatMap({ Int64($0) }) else {
            universeCache.domains = nil
            return nil
        }
        let epoch = try itemsEpoch()
        let mark = try changeMark()
        if let index = universeCache.domains, index.epoch == epoch, index.watermark <= next {
            let s = try db.prepare("SELECT domain, id FROM items WHERE id >= ? ORDER BY id")
            try s.bind(index.watermark, at: 0)
            defer { try? s.reset() }
            var added: [(domain: [UInt8], id: Int64)] = []
            while try s.step() { added.append((s.withUTF8(at: 0, Array.init) ?? [], s.int64(at: 1))) }
            // Items removed since: from the removal log when it reaches back
            // to the index's mark; otherwise none is patched, and any
            // removal shows in the count below.
            if let old = index.mark, let mark, let removed = try removed(since: old, upTo: mark) { index.remove(removed) }
            let total = try db.prepare("SELECT count(*) FROM items").scalar()?.int64 ?? 0
            if total == Int64(index.count + added.count) {
                index.add(added, watermark: next, mark: mark, version: version)
                return index
            }
        }
        // Ordered by the domain index itself: no sort.
        domainIndexReads += 1
        let index = DomainIndex(watermark: next, epoch: epoch, mark: mark, version: version)
        let s = try db.prepare("SELECT domain, id FROM items INDEXED BY items_domain ORDER BY domain, id")
        defer { try? s.reset() }
        while try s.step() {
            let id = s.int64(at: 1)
            s.withUTF8(at: 0) { index.append($0, id) }
        }
        universeCache.domains = index
        return index
    }
}
