import Foundation
import Items
import Logging
import QueryPlan
import SQLite

/// What a connection reads once per change of the data, each with the data
/// it is of (see ``ShardStore/heldWhileTheDataIsSame(_:_:)``).
final class UniverseCache {
    struct Version: Equatable {
        var data: Int64
        var changes: Int
    }
    /// Every item's id (see ``ShardStore/universe(_:)``), and the
    /// removal-log mark of the data they are of (nil: none to patch from).
    var held: (Version, [Int64])?
    var heldMark: ChangeMark?
    /// Times the ids were read whole, and patched (for tests and figures).
    var universeReads = 0
    var universePatches = 0
    /// Every item with an expiry, soonest first (see ``ShardStore/expiredIDs(now:)``).
    var expiries: (Version, [(expires: Double, id: Int64)])?
    /// Every item whose entity has a priority (see ``ShardStore/entityPriorities()``).
    var priorities: (Version, [Int64: Double])?
    /// Every domain's items, patched at each change rather than read again
    /// (see ``DomainIndex``).
    var domains: (Version, DomainIndex)?
    /// The items a split's purge under way leaves in (see ``ShardStore/slotScope()``).
    var kept: (Version, ItemScope?)?
    /// The items the map a request was routed by leaves in, and that map's
    /// filter (see ``ShardStore/routedSlots``).
    var routed: (Version, SlotFilter, ItemScope)?
    /// Custom ranking attributes' values by item (see ``SortColumn``), each
    /// with the data it is of and that data's removal-log mark (nil: none
    /// to patch from).
    var sortColumns: [Int64: (version: Version, mark: ChangeMark?, column: SortColumn)] = [:]
    /// Times a sort column was patched rather than read whole (for tests).
    var sortColumnPatches = 0
    static let maxSortColumns = 8
    /// Search filters' conditions and their items (see ``ShardStore/conditionIDs(_:_:)``).
    var conditions = ConditionIDs()
    /// Every item in a custom ranking's order (see ``CustomOrder``).
    var customOrders = CustomOrders()
}

/// State of one query evaluation.
final class QueryContext {
    let isCancelled: () -> Bool
    /// Relevance per item, summed over the query's word leaves; nil when the
    /// query does not sort by relevance.
    var scores: [Int64: Double]?
    var universe: [Int64]?
    var polls = 0

    init(isCancelled: @escaping () -> Bool, wantsScores: Bool) {
        self.isCancelled = isCancelled
        self.scores = wantsScores ? [:] : nil
    }

    /// Cheap enough for inner loops: asks the callback every 256th call.
    func checkCancelled() throws {
        polls &+= 1
        if polls & 255 == 0, isCancelled() { throw StoreError(.cancelled, "the query was cancelled") }
    }
}

extension ShardStore {
    /// Evaluates a query plan and streams the matches.
    ///
    /// `onBatch` gets up to `query.batchSize` results at a time, in the
    /// requested order (unordered queries come in storage order), and the
    /// call returns how many results were delivered in all (at most
    /// `query.limit`; use ``count(matching:isCancelled:)`` for the full count).
    ///
    /// The indexes only propose candidates; every text comparison is settled
    /// by `TextMatcher` on the stored value, lazily, so a query with a limit
    /// checks only as many candidates as it needs. The whole evaluation reads
    /// one snapshot. `isCancelled` is polled between items and, through an
    /// SQLite progress handler, inside long statements; a cancelled query
    /// throws `StoreError` `.cancelled`.
    ///
    /// `rawItems`: results carry their item as JSON text
    /// (``StoredResult/rawItem``) rather than as a tree, for a caller that
    /// only writes them out (a query worker).
    @discardableResult
    package func run(
        _ query: Query, rawItems: Bool = false, isCancelled: @escaping () -> Bool = { false },
        onBatch: ([StoredResult]) throws -> Void
    ) throws -> Int {
        rawResults = rawItems
        defer { rawResults = false }
        guard query.batchSize >= 1 else { throw StoreError(.invalidQuery, "batchSize must be at least 1, not \(query.batchSize)") }
        if let limit = query.limit, limit < 0 { throw StoreError(.invalidQuery, "limit must not be negative") }
        if query.after != nil, query.sort.isEmpty { throw StoreError(.invalidQuery, "a cursor ('after') needs sort keys to resume by") }
        if query.limit == 0 { return 0 }
        let started = ContinuousClock.now
        db.setProgressHandler(every: 4000) { isCancelled() }
        defer { db.setProgressHandler(nil) }
        do {
            let delivered = try db.transaction(.deferred) { () -> Int in
                try reloadIfChanged()
                let whole = try compile(query.predicate.simplified())
                let sortNames = try query.sort.map { key -> Int64?? in
                    guard case .attribute(let name, _) = key else { return .none }
                    return .some(try searchableNameID(name))
                }
                let wantsScores = query.sort.contains(.relevance)
                let context = QueryContext(isCancelled: isCancelled, wantsScores: wantsScores)
                // A keyed request's app scope (and any domain condition at
                // the top) is settled by the domain index, once, rather than
                // checked item by item.
                let (scope, node) = try scoped(whole, context)
                if query.sort.isEmpty,
                    let delivered = try streamWordMatches(node, query, context, within: scope, onBatch: onBatch)
                        ?? streamSubstringMatches(node, query, context, within: scope, onBatch: onBatch)
                {
                    return delivered
                }
                let found = try candidates(node, exact: false, context)
                var ids = try found.ids(within: scope, universe: universe(context))
                ids = IDs.subtract(ids, try expiredIDs(now: Date()))
                // Sort keys live in arrays aligned with `ids`: dictionary lookups
                // inside the comparator cost more than the sort itself.
                var keys: [[SortValue]] = []
                if !query.sort.isEmpty {
                    if wantsScores { try addPriorities(to: context, ids: ids) }
                    keys = Array(repeating: [], count: ids.count)
                    for (k, key) in query.sort.enumerated() {
                        switch key {
                        case .relevance:
                            let scores = context.scores ?? [:]
                            for (i, id) in ids.enumerated() { keys[i].append(.number(scores[id] ?? 0)) }
                        case .attribute:
                            let values = try attributeSortValues(ids: ids, name: sortNames[k] ?? nil, context)
                            for (i, id) in ids.enumerated() { keys[i].append(values[id] ?? .missing) }
                        case .identifier:
                            let values = try identifierSortValues(ids: ids, context)
                            for (i, id) in ids.enumerated() { keys[i].append(values[id] ?? .missing) }
                        }
                    }
                    let ascending = query.sort.map { key in
                        switch key {
                        case .attribute(_, let asc): asc
                        case .relevance: false
                        case .identifier: true
                        }
                    }
                    var order = Array(ids.indices)
                    order.sort { a, b in
                        for k in ascending.indices {
                            let c = SortValue.compare(keys[a][k], keys[b][k], ascending: ascending[k])
                            if c != 0 { return c < 0 }
                        }
                        return ids[a] < ids[b]
                    }
                    if let after = query.after {
                        // A cursor: keep what sorts strictly after the previous page's last result.
                        let bound = after.map(SortValue.init(json:))
                        order.removeAll { position in
                            for k in ascending.indices {
                                let c = SortValue.compare(keys[position][k], k < bound.count ? bound[k] : .missing, ascending: ascending[k])
                                if c != 0 { return c < 0 }
                            }
                            return true
                        }
                    }
                    ids = order.map { ids[$0] }
                    keys = order.map { keys[$0] }
                }
                let loadNames = node.names, loadDomain = node.mentionsDomain
                var batcher = ResultBatcher(limit: query.limit, batchSize: query.batchSize)
                let fetch = query.fetchAttributes.map(FetchList.init)
                for (position, id) in ids.enumerated() {
                    try context.checkCancelled()
                    if !found.exact {
                        guard node.evaluate(try load(id, names: loadNames, domain: loadDomain)) else { continue }
                    }
                    guard var result = try fetchResult(id, attributes: fetch) else { continue }
                    if !query.sort.isEmpty { result.sortValues = keys[position].map(\.json) }
                    if wantsScores { result.score = context.scores?[id] ?? 0 }
                    if try batcher.add(result, isCancelled: isCancelled, onBatch: onBatch) { break }
                }
                return try batcher.finish(onBatch: onBatch)
            }
            logger.debug(
                "ran query",
                metadata: [
                    "query.results": "\(delivered)", "query.duration": "\(ContinuousClock.now - started)",
                ])
            return delivered
        } catch {
            let wrapped = StoreError.wrap(error, "query failed")
            if (wrapped as? StoreError)?.code == .cancelled {
                logger.debug("query cancelled", metadata: ["query.duration": "\(ContinuousClock.now - started)"])
            }
            throw wrapped
        }
    }

    /// An unsorted query that is one `w`/`t` comparison over every text
    /// attribute (`** == "word"cdw`, the common search box query), or an AND
    /// of such comparisons (two words typed): its candidates are exactly the
    /// word-index matches of all their words, which FTS5 yields in rowid
    /// order — the order results come in anyway — so they are checked and
    /// fetched as they are stepped, and a query with a limit stops after its
    /// last result instead of first collecting every match of a common word.
    /// Nil when this does not apply (the caller takes the general path, which
    /// gives the same results).
    func streamWordMatches(
        _ node: Node, _ query: Query, _ context: QueryContext, within scope: ItemScope?,
        onBatch: ([StoredResult]) throws -> Void
    ) throws -> Int? {
        let leaves: [TextLeaf]
        switch node {
        case .text(let leaf): leaves = [leaf]
        case .and(let nodes):
            leaves = nodes.compactMap { if case .text(let leaf) = $0 { leaf } else { nil } }
            guard leaves.count == nodes.count else { return nil }
        default: return nil
        }
        var terms: [WordTerm] = []
        for leaf in leaves {
            let options = leaf.test.options
            guard leaf.names.isAllText, options.contains(.wordBased) || options.contains(.tokenized) else { return nil }
            terms += Self.wordTerms(leaf.test.pattern, camelCase: options.contains(.wordBased))
        }
        guard !terms.isEmpty else { return nil }
        let s = try db.prepare("SELECT rowid FROM words WHERE words MATCH ? ORDER BY rowid")
        try s.bind("(" + terms.map(\.fts).joined(separator: " AND ") + ")", at: 0)
        let expired = Set(try expiredIDs(now: Date()))
        // Most matches need no check at all (see WordCheck): when every
        // comparison comes down to a trusted term.
        let trusted = hasWordCheck ? leaves.map { WordCheck.trustedTerm($0.test, schema: schema) } : []
        let trustedTerms = trusted.contains { $0 == nil } ? [] : trusted.compactMap { $0 }
        // One read gives what decides the check and the result.
        let row = try db.prepare(
            trustedTerms.isEmpty
                ? "SELECT json FROM items WHERE id = ?"
                : "SELECT json, wordcheck FROM items WHERE id = ?")
        defer { try? row.reset() }
        let fetch = query.fetchAttributes.map(FetchList.init)
        var batcher = ResultBatcher(limit: query.limit, batchSize: query.batchSize)
        let inScope = scope?.bits
        var first = true
        defer { try? s.reset() }
        while true {
            do {
                guard try s.step() else { break }
            } catch {
                // FTS5 refuses some terms; the general path scans instead.
                if first, error.message.contains("phrase queries are not supported") { return nil }
                throw error
            }
            first = false
            try context.checkCancelled()
            let id = s.int64(at: 0)
            if expired.contains(id) || inScope?.contains(id) == false { continue }
            try row.reset()
            try row.bind(id, at: 0)
            guard try row.step() else { continue }
            let stored = trustedTerms.isEmpty ? WordCheck.always : row.string(at: 1)
            if trustedTerms.isEmpty || trustedTerms.contains(where: { WordCheck.needsCheck(stored, term: $0) }) {
                guard node.evaluate(try load(id, names: nil, domain: false)) else { continue }
            }
            guard let result = try storedResult(row, column: 0, attributes: fetch) else { continue }
            if try batcher.add(result, isCancelled: context.isCancelled, onBatch: onBatch) { break }
        }
        return try batcher.finish(onBatch: onBatch)
    }

    /// Counts every item that matches `predicate` (expired ones excepted),
    /// checking each candidate: the figure a paginating client shows as the
    /// number of hits.
    package func count(matching predicate: QueryPlan.Predicate, isCancelled: @escaping () -> Bool = { false }) throws -> Int {
        db.setProgressHandler(every: 4000) { isCancelled() }
        defer { db.setProgressHandler(nil) }
        do {
            return try db.transaction(.deferred) {
                try reloadIfChanged()
                let context = QueryContext(isCancelled: isCancelled, wantsScores: false)
                let (scope, node) = try scoped(try compile(predicate.simplified()), context)
                let found = try candidates(node, exact: true, context)
                let ids = try found.ids(within: scope, universe: universe(context))
                return IDs.subtract(ids, try expiredIDs(now: Date())).count
            }
        } catch {
            throw StoreError.wrap(error, "count failed")
        }
    }

    // MARK: Compiling

    func searchableNameID(_ name: String) throws -> Int64? {
        if let spec = schema.spec(for: name), !spec.searchable {
            throw StoreError(.attributeNotSearchable, "'\(name)' is declared not searchable, so queries cannot name it")
        }
        return nameIDs[name]
    }

    func isDefaultText(_ name: String) -> Bool {
        guard let spec = schema.spec(for: name) else { return true }
        return spec.type == .text && spec.searchable && spec.searchableByDefault
    }

    func compile(_ predicate: QueryPlan.Predicate) throws -> Node {
        func resolve(_ selector: AttributeSelector) throws -> NameSet {
            switch selector {
            case .named(let name): return .one(try searchableNameID(name))
            case .allText:
                if let ids = defaultTextIDs { return .allText(ids) }
                let ids = names.filter { isDefaultText($0.value) }.map(\.key).sorted()
                defaultTextIDs = ids
                return .allText(ids)
            }
        }
        func node(_ p: QueryPlan.Predicate) throws -> Node {
            switch p {
            case .all: return .all
            case .none: return .none
            case .and(let ps): return .and(try ps.map(node))
            case .or(let ps): return .or(try ps.map(node))
            case .not(let q): return .not(try node(q))
            case .exists(let s): return .exists(try resolve(s))
            case .text(let t): return .text(TextLeaf(test: t, names: try resolve(t.attribute)))
            case .range(let r): return .range(try searchableNameID(r.attribute), r)
            case .textRange(let r): return .textRange(try searchableNameID(r.attribute), r)
            case .domain(let ds): return .domain(ds)
            case .exactDomain(let ds): return try exactDomainNode(ds)
            case .geo(let g): return .geo(try searchableNameID(g.attribute), g)
            case .regex(let r): return .regex(try RegexLeaf(test: r, names: try resolve(r.attribute)))
            case .identifier(let ids): return .identifier(Set(ids))
            case .every(let q):
                guard let name = q.attributeNames.first, q.attributeNames.count == 1 else {
                    throw StoreError(.invalidQuery, "'every' needs a test of one named attribute")
                }
                return .every(try searchableNameID(name), try node(q))
            }
        }
        return try node(predicate)
    }

    // MARK: Candidates

    /// Every item's id, sorted. Kept per connection while the data is the
    /// same (no other connection's commit, no change of its own since):
    /// an empty query, a filter's negation or a search with no words starts
    /// from it, and reading every id is most of an empty search (the
    /// InstantSearch page's first request).
    func universe(_ context: QueryContext) throws -> [Int64] {
        if let u = context.universe { return u }
        let version = dataSeen
        if let (held, ids) = universeCache.held, held == version {
            context.universe = ids
            return ids
        }
        // Taken from another connection of the process that has them for
        // this data (see ``SharedColumns``), or patched with the changes
        // since (see ``RemovalLog``) when the log reaches back to the ids
        // held: the removed ones left out, the ones stored since appended
        // (they sort after every id held).
        let mark = try changeMark()
        let shares = sharesColumns
        if shares, let mark, let ids = SharedColumns.shared.columns(path: path, mark: mark)?.universe {
            searchCache.columnsTaken += 1
            universeCache.held = (version, ids)
            universeCache.heldMark = mark
            context.universe = ids
            return ids
        }
        var u: [Int64] = []
        var from: Int64?
        if let (_, ids) = universeCache.held, let old = universeCache.heldMark, let mark, let removed = try removed(since: old, upTo: mark) {
            if removed.isEmpty {
                u = ids
            } else {
                let gone = IDBits(removed)
                u = ids.filter { !gone.contains($0) }
            }
            from = old.watermark
            universeCache.universePatches += 1
        } else {
            universeCache.universeReads += 1
        }
        let s = try db.prepare(from == nil ? Self.everyIDSQL : Self.idsSinceSQL)
        if let from { try s.bind(from, at: 0) }
        defer { try? s.reset() }
        while try s.step() { u.append(s.int64(at: 0)) }
        if from == nil { u.sort() }
        universeCache.held = (version, u)
        universeCache.heldMark = mark
        if shares, let mark { SharedColumns.shared.publish(path: path, mark: mark) { $0.universe = u } }
        context.universe = u
        return u
    }

    /// Every item's id, unsorted: read from the domain index and sorted by
    /// the caller, since SQLite would scan the table in id order, and its
    /// pages hold each item's JSON, tens of times the index's bytes (a disk
    /// read per item or two on a shard larger than the page cache).
    static let everyIDSQL = "SELECT id FROM items INDEXED BY items_domain"
    /// The ids from `?` on, sorted: a range of the table.
    static let idsSinceSQL = "SELECT id FROM items WHERE id >= ? ORDER BY id"

    /// The data as this connection sees it: another connection's commit,
    /// or a change of its own, moves it.
    var dataSeen: UniverseCache.Version { UniverseCache.Version(data: dataVersion, changes: db.totalChanges) }

    /// What `slot` holds while the data is the one it was read from;
    /// otherwise `read()`, kept there with the data it is of.
    func heldWhileTheDataIsSame<T>(
        _ slot: ReferenceWritableKeyPath<UniverseCache, (UniverseCache.Version, T)?>,
        _ read: () throws -> T
    ) rethrows -> T {
        let version = dataSeen
        if let (held, value) = universeCache[keyPath: slot], held == version { return value }
        let value = try read()
        universeCache[keyPath: slot] = (version, value)
        return value
    }

    /// The items past their expiry at `now`, sorted. The items that expire
    /// at all are read once per change of the data (as ``universe(_:)``'s
    /// ids): every search asks, and a statement per search is a cost the
    /// common case (nothing expires) need not pay.
    func expiredIDs(now: Date) throws -> [Int64] {
        let expiries = try heldWhileTheDataIsSame(\.expiries) {
            // Through the expiry index: the few items that have one.
            let s = try db.prepare("SELECT expires, id FROM items WHERE expires IS NOT NULL")
            defer { try? s.reset() }
            var e: [(expires: Double, id: Int64)] = []
            while try s.step() { e.append((s.double(at: 0), s.int64(at: 1))) }
            return e.sorted { $0.expires < $1.expires }
        }
        let t = now.timeIntervalSinceReferenceDate
        return expiries.prefix { $0.expires <= t }.map(\.id).sorted()
    }

    /// The priority of every item whose entity has one (not 0), read once
    /// per change of the data: the default custom ranking asks at every search.
    func entityPriorities() throws -> [Int64: Double] {
        try heldWhileTheDataIsSame(\.priorities) {
            var p: [Int64: Double] = [:]
            try db.prepare("SELECT id, priority FROM items WHERE priority != 0").forEachRow { row in
                p[row.int64(at: 0)] = row.double(at: 1)
            }
            return p
        }
    }

    /// A superset of the items matching `node` (exactly them when `exact`).
    func candidates(_ node: Node, exact needExact: Bool, _ context: QueryContext) throws -> Candidates {
        try context.checkCancelled()
        switch node {
        case .all: return .everything
        case .none: return .nothing
        case .and(let nodes):
            // An app's scope among the conditions narrows the others'
            // candidates by its bits (a test each), not by a merge with every
            // item of the app (a disjunctive facet's filter holds the scope).
            if nodes.contains(where: { if case .domain = $0 { true } else { false } }) {
                let (scope, rest) = try scoped(node, context)
                if let scope {
                    let c = try candidates(rest, exact: needExact, context)
                    return Candidates(ids: c.ids.map(scope.filter) ?? scope.ids, exact: c.exact)
                }
            }
            var ids: [Int64]?
            var exact = true
            // Exact leaves first: they are cheap and shrink what text leaves must check.
            for n in nodes {
                let c = try candidates(n, exact: needExact, context)
                exact = exact && c.exact
                if let cids = c.ids { ids = ids.map { IDs.intersect($0, cids) } ?? cids }
                if ids?.isEmpty == true { return .nothing }
            }
            return Candidates(ids: ids, exact: exact)
        case .or(let nodes):
            var ids: [Int64] = []
            var exact = true
            for n in nodes {
                let c = try candidates(n, exact: needExact, context)
                guard let cids = c.ids else {
                    if c.exact { return .everything }
                    // A universe that isn't exact still has to be checked item by item.
                    return needExact
                        ? Candidates(ids: try exactly(node, in: universe(context), context), exact: true)
                        : Candidates(ids: nil, exact: false)
                }
                exact = exact && c.exact
                ids = IDs.union(ids, cids)
            }
            return Candidates(ids: ids, exact: exact)
        case .not(let inner):
            let c = try candidates(inner, exact: true, context)
            guard let cids = c.ids else { return .nothing }
            return Candidates(ids: IDs.subtract(try universe(context), cids), exact: true)
        case .exists(let names):
            var ids: [Int64] = []
            let sql =
                names.isAllText
                ? "SELECT item FROM attrs WHERE name = ? AND key IS NOT NULL"
                : "SELECT item FROM attrs WHERE name = ?"
            for name in names.ids {
                let s = try db.prepare(sql)
                try s.bind(name, at: 0)
                try s.forEachRow { ids.append($0.int64(at: 0)) }
            }
            return Candidates(ids: IDs.sortedUnique(ids), exact: true)
        case .range(let name, let test):
            guard let name else { return .nothing }
            var sql = "SELECT item FROM attrs WHERE name = ? AND num IS NOT NULL"
            // A location's latitude is in `num` too; it is not a number.
            if try holdsLocations(name) { sql += " AND kind != 4" }
            var values: [SQLValue] = [.integer(name)]
            if let l = test.lower { sql += l.inclusive ? " AND num >= ?" : " AND num > ?"; values.append(.real(l.value)) }
            if let u = test.upper { sql += u.inclusive ? " AND num <= ?" : " AND num < ?"; values.append(.real(u.value)) }
            let s = try db.prepare(sql)
            try s.bind(values)
            return Candidates(ids: IDs.sortedUnique(try s.map { $0.int64(at: 0) }), exact: true)
        case .textRange(let name, let test):
            guard let name else { return .nothing }
            return Candidates(ids: try textRangeMatches(name: name, test, context), exact: true)
        case .domain(let domains):
            return try domainCandidates(domains, context).map { Candidates(ids: $0, exact: true) } ?? .everything
        case .identifier(let uids):
            let s = try db.prepare("SELECT id FROM items WHERE uid = ?")
            var ids: [Int64] = []
            for uid in uids {
                try s.bind(uid, at: 0)
                if try s.step() { ids.append(s.int64(at: 0)) }
                try s.reset()
            }
            return Candidates(ids: IDs.sortedUnique(ids), exact: true)
        case .regex(let leaf):
            // No index knows regular expressions: every value of the attributes is checked.
            var ids: [Int64] = []
            let s = try db.prepare("SELECT item, kind, coalesce(text, key), num FROM attrs WHERE name = ?")
            for name in leaf.names.ids {
                try s.bind(name, at: 0)
                while try s.step() {
                    try context.checkCancelled()
                    guard let kind = ValueKind(rawValue: s.int64(at: 1)) else { continue }
                    let value = LoadedValue(kind: kind, text: kind.isText ? s.string(at: 2) : nil, num: kind.isNumeric ? s.double(at: 3) : nil)
                    if leaf.matches(value, numbers: !leaf.names.isAllText) { ids.append(s.int64(at: 0)) }
                }
                try s.reset()
            }
            return Candidates(ids: IDs.sortedUnique(ids), exact: true)
        case .every:
            // Items without the attribute match too: no index narrows this down.
            return needExact
                ? Candidates(ids: try exactly(node, in: universe(context), context), exact: true)
                : Candidates(ids: nil, exact: false)
        case .geo(let name, let test):
            guard let name else { return .nothing }
            return Candidates(ids: try geoMatches(node, name: name, test, context), exact: true)
        case .text(let leaf):
            let c = try textCandidates(leaf, context)
            if needExact, !c.exact, let ids = c.ids {
                return Candidates(ids: try exactly(node, in: ids, context), exact: true)
            }
            return c
        }
    }

    /// The ids among `ids` that really match `node`.
    func exactly(_ node: Node, in ids: [Int64], _ context: QueryContext) throws -> [Int64] {
        var out: [Int64] = []
        let domain = node.mentionsDomain, names = node.names
        for id in ids {
            try context.checkCancelled()
            if node.evaluate(try load(id, names: names, domain: domain)) { out.append(id) }
        }
        return out
    }

    /// One item's stored values, for the final check: only those of `names`
    /// (nil: all), so checking a title does not read a long description.
    func load(_ id: Int64, names: Set<Int64>?, domain: Bool) throws -> LoadedItem {
        var item = LoadedItem()
        var legacyLocations = false
        func read(_ s: Statement) throws {
            while try s.step() {
                guard let kind = ValueKind(rawValue: s.int64(at: 1)) else { continue }
                var value = LoadedValue(
                    kind: kind, text: kind.isText ? s.string(at: 2) : nil,
                    num: kind.isNumeric ? s.double(at: 3) : nil)
                if kind == .location {
                    value.location = Self.storedLocation(latitude: s.isNull(at: 3) ? nil : s.double(at: 3), longitude: s.string(at: 2))
                    if value.location == nil { legacyLocations = true }
                }
                item.values[s.int64(at: 0), default: []].append(value)
            }
            try s.reset()
        }
        if let names {
            let s = try db.prepare("SELECT name, kind, coalesce(text, key), num FROM attrs WHERE item = ? AND name = ?")
            try s.bind(id, at: 0)
            for name in names {
                try s.bind(name, at: 1)
                try read(s)
            }
        } else {
            let s = try db.prepare("SELECT name, kind, coalesce(text, key), num FROM attrs WHERE item = ?")
            try s.bind(id, at: 0)
            try read(s)
        }
        if legacyLocations { try fillLegacyLocations(of: id, in: &item) }
        if domain {
            let d = try db.prepare("SELECT domain, uid FROM items WHERE id = ?")
            try d.bind(id, at: 0)
            if try d.step() {
                item.domain = d.string(at: 0) ?? ""
                item.uid = d.string(at: 1) ?? ""
            }
            try d.reset()
        }
        return item
    }
}
