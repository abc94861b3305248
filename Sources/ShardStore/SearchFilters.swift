import QueryPlan

/// A search's filters' items, each top-level condition read once per search.
///
/// A search's own filter and its disjunctive facets' filters are mostly
/// conjunctions of the same conditions: InstantSearch's page with refined
/// facets gives each facet the search's filter without that facet's own
/// refinements, and every one of them holds the app's and the index's
/// scope. Read filter by filter, a refinement that holds nearly every item
/// (`priority:optional`) would be read over the whole shard once per facet;
/// here each condition's items are read once (kept by the condition, a
/// ``QueryPlan/Predicate``) and each filter is the intersection of its
/// conditions', which is what ``ShardStore/candidates(_:exact:_:)`` gives
/// for their conjunction. The domain conditions at the top stay an
/// ``ItemScope`` (see ``ShardStore/scoped(_:_:)``), with a split's purge's.
final class SearchFilters {
    private let store: ShardStore
    private let context: QueryContext
    /// Each condition's items, sorted; nil for every item of the shard.
    private var known: [QueryPlan.Predicate: [Int64]?] = [:]
    /// The scope of each set of top-level domain conditions; nil when it is every item.
    private var scopes: [[[String]]: ItemScope?] = [:]

    init(store: ShardStore, context: QueryContext) {
        self.store = store
        self.context = context
    }

    /// A filter as its domain scope (nil: none, or every item) and the items
    /// of its other conditions (nil: every item), with whether it has no
    /// other condition.
    struct Parts {
        var scope: ItemScope?
        var rest: [Int64]?
        var restIsAll: Bool

        /// The filter's items, sorted; nil for every item of the shard.
        var ids: [Int64]? {
            guard let scope else { return rest }
            return rest.map(scope.filter) ?? scope.ids
        }
    }

    func parts(_ filter: QueryPlan.Predicate) throws -> Parts {
        let conditions: [QueryPlan.Predicate]
        switch filter.simplified() {
        case .all: conditions = []
        case .and(let ps): conditions = ps
        case let p: conditions = [p]
        }
        var domains: [[String]] = []
        var others: [QueryPlan.Predicate] = []
        for p in conditions {
            if case .domain(let ds) = p { domains.append(ds) } else { others.append(p) }
        }
        let scope = try self.scope(domains)
        var lists: [[Int64]] = []
        for p in others {
            guard let ids = try ids(of: p) else { continue }
            if ids.isEmpty { return Parts(scope: scope, rest: [], restIsAll: false) }
            lists.append(ids)
        }
        // The smallest first: each intersection is then at most its size.
        lists.sort { $0.count < $1.count }
        var rest = lists.first
        for list in lists.dropFirst() {
            guard let r = rest, !r.isEmpty else { break }
            rest = IDs.intersect(r, list)
        }
        return Parts(scope: scope, rest: rest, restIsAll: others.isEmpty)
    }

    /// The filter's items, sorted; nil for every item of the shard.
    func ids(_ filter: QueryPlan.Predicate) throws -> [Int64]? { try parts(filter).ids }

    /// One condition's items, exactly; nil for every item.
    private func ids(of condition: QueryPlan.Predicate) throws -> [Int64]? {
        if let held = known[condition] { return held }
        let ids = try store.conditionIDs(condition, context)
        known[condition] = ids
        return ids
    }

    /// While a split's purge is under way, every scope leaves out the items
    /// of the slots another shard owns (``ShardStore/slotScope()``), as
    /// ``ShardStore/scoped(_:_:)`` does.
    private func scope(_ domains: [[String]]) throws -> ItemScope? {
        if let held = scopes[domains] { return held }
        var scope: ItemScope? = try store.slotScope()
        for ds in domains {
            guard let items = try store.domainScope(ds, context) else { continue }
            scope = scope.map { $0.intersection(items) } ?? items
        }
        scopes[domains] = scope
        return scope
    }
}

/// Search filters' conditions (`section:utils`, `price > 10`) and their items,
/// kept while the data is the same: InstantSearch repeats the same
/// refinements search after search, and each is otherwise a statement over
/// the attribute index that returns every item holding the value (a tenth
/// of a shard for a common facet value). Bounded in the ids it holds and
/// in its conditions (one that holds no id, or every item, still takes an
/// entry): past ``maxIDs`` or ``maxConditions`` it starts again empty; a
/// condition larger than ``maxIDs`` alone is not kept.
struct ConditionIDs {
    struct Key: Hashable {
        var condition: QueryPlan.Predicate
        /// A condition's items leave out the slots the request's map gives
        /// another shard when it holds a domain condition (``ShardStore/scoped(_:_:)``).
        var routed: SlotFilter?
    }
    static let maxIDs = 1 << 20
    static let maxConditions = 256
    private(set) var version: UniverseCache.Version?
    private var ids: [Key: [Int64]?] = [:]
    private var held = 0
    /// Conditions read, and answered from here (for tests and figures).
    private(set) var reads = 0
    private(set) var reuses = 0

    mutating func take(_ key: Key, at version: UniverseCache.Version) -> [Int64]?? {
        guard version == self.version, let found = ids[key] else { return nil }
        reuses += 1
        return .some(found)
    }

    mutating func put(_ key: Key, _ value: [Int64]?, at version: UniverseCache.Version) {
        reads += 1
        let count = value?.count ?? 0
        if version != self.version || held + count > Self.maxIDs || ids.count >= Self.maxConditions {
            ids = [:]
            held = 0
            self.version = version
        }
        guard count <= Self.maxIDs else { return }
        ids[key] = value
        held += count
    }
}

extension ShardStore {
    /// One filter condition's items, exactly (nil: every item), read once
    /// while the data is the same (``ConditionIDs``).
    func conditionIDs(_ condition: QueryPlan.Predicate, _ context: QueryContext) throws -> [Int64]? {
        let key = ConditionIDs.Key(condition: condition, routed: routedSlots)
        let version = dataSeen
        if let held = universeCache.conditions.take(key, at: version) { return held }
        let ids = try candidates(try compile(condition), exact: true, context).ids
        universeCache.conditions.put(key, ids, at: version)
        return ids
    }

    /// Filter conditions read by a statement, and taken from ``ConditionIDs``.
    package var conditionReads: (read: Int, reused: Int) { (universeCache.conditions.reads, universeCache.conditions.reuses) }
}
