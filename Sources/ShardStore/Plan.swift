import Foundation
import Items
import QueryPlan

/// Attribute names a leaf looks at, resolved to `names` ids.
enum NameSet {
    /// One attribute; nil when the shard has never stored it (the leaf matches nothing).
    case one(Int64?)
    /// Every text attribute searchable by default (`*`, `**`): declared text
    /// attributes that say so, standard text attributes, and undeclared custom
    /// attributes (their text values only).
    case allText([Int64])

    var ids: [Int64] {
        switch self {
        case .one(let id): id.map { [$0] } ?? []
        case .allText(let ids): ids
        }
    }

    var isAllText: Bool {
        if case .allText = self { return true }
        return false
    }
}

/// A text comparison, with its matcher built once per query.
final class TextLeaf {
    let test: TextTest
    let matcher: TextMatcher
    let names: NameSet
    init(test: TextTest, names: NameSet) {
        self.test = test
        self.matcher = TextMatcher(test)
        self.names = names
    }
}

/// A `Predicate` resolved against one shard: names to ids, matchers built.
indirect enum Node {
    case all
    case none
    case and([Node])
    case or([Node])
    case not(Node)
    case exists(NameSet)
    case text(TextLeaf)
    case range(Int64?, RangeTest)
    case textRange(Int64?, TextRangeTest)
    case domain([String])
    case geo(Int64?, GeoTest)
    case regex(RegexLeaf)
    case identifier(Set<String>)
    /// Every value of the attribute satisfies the node (a leaf on that attribute).
    case every(Int64?, Node)

    /// The attributes whose values decide this node; nil when the node needs
    /// many (`*`), and loading the whole item is cheaper than picking.
    var names: Set<Int64>? {
        switch self {
        case .all, .none, .domain, .identifier: return []
        case .and(let ns), .or(let ns):
            var out = Set<Int64>()
            for n in ns {
                guard let s = n.names else { return nil }
                out.formUnion(s)
            }
            return out
        case .not(let n): return n.names
        case .exists(let set): return set.isAllText ? nil : Set(set.ids)
        case .text(let leaf): return leaf.names.isAllText ? nil : Set(leaf.names.ids)
        case .range(let id, _), .geo(let id, _): return id.map { [$0] } ?? []
        case .textRange(let id, _): return id.map { [$0] } ?? []
        case .regex(let leaf): return leaf.names.isAllText ? nil : Set(leaf.names.ids)
        case .every(_, let n): return n.names
        }
    }

    /// Whether the node reads the item's row (its domain or unique identifier).
    var mentionsDomain: Bool {
        switch self {
        case .domain, .identifier: true
        case .and(let ns), .or(let ns): ns.contains { $0.mentionsDomain }
        case .not(let n), .every(_, let n): n.mentionsDomain
        default: false
        }
    }
}

/// One stored value, as loaded to check an item against a plan.
struct LoadedValue {
    var kind: ValueKind
    var text: String?
    var num: Double?
    /// A location's coordinates (kind 4); nil only until ``ShardStore/load``
    /// has filled in those of a shard written before rows kept them.
    var location: Location?
}

/// An item's values by attribute id.
struct LoadedItem {
    var values: [Int64: [LoadedValue]] = [:]
    var domain: String = ""
    /// Loaded with the domain.
    var uid: String = ""
}

extension Node {
    /// The definition of a match, over one item's stored values. Indexes only
    /// ever narrow down which items this runs on.
    func evaluate(_ item: LoadedItem) -> Bool {
        switch self {
        case .all: return true
        case .none: return false
        case .and(let ns): return ns.allSatisfy { $0.evaluate(item) }
        case .or(let ns): return ns.contains { $0.evaluate(item) }
        case .not(let n): return !n.evaluate(item)
        case .exists(let names):
            switch names {
            case .one(let id): return id.map { !(item.values[$0]?.isEmpty ?? true) } ?? false
            case .allText(let ids):
                return ids.contains { id in item.values[id]?.contains { $0.kind.isText } ?? false }
            }
        case .text(let leaf):
            return leaf.matches(item)
        case .range(let id, let test):
            guard let id, let values = item.values[id] else { return false }
            return values.contains { $0.kind.isNumeric && test.contains($0.num ?? .nan) }
        case .textRange(let id, let test):
            guard let id, let values = item.values[id] else { return false }
            return values.contains { $0.kind.isText && test.contains($0.text ?? "") }
        case .domain(let domains):
            return domains.contains { DomainIdentifier.domain(item.domain, isWithin: $0) }
        case .geo(let id, let test):
            guard let id, let values = item.values[id] else { return false }
            return test.matches(values.lazy.compactMap { $0.kind == .location ? $0.location : nil })
        case .regex(let leaf):
            return leaf.matches(item)
        case .identifier(let ids):
            return ids.contains(item.uid)
        case .every(let id, let n):
            guard let id, let values = item.values[id] else { return true }
            return values.allSatisfy { value in
                var one = item
                one.values = [id: [value]]
                return n.evaluate(one)
            }
        }
    }
}

/// A regular-expression comparison, compiled once per query.
final class RegexLeaf {
    let test: RegexTest
    let matcher: RegexMatcher
    let names: NameSet
    init(test: RegexTest, names: NameSet) throws {
        self.test = test
        do { self.matcher = try RegexMatcher(test) } catch {
            throw StoreError(.invalidQuery, error.description)
        }
        self.names = names
    }

    /// As for text: any value matches; numbers as canonical text when the
    /// attribute is named; `*` looks at text values only.
    func matches(_ item: LoadedItem) -> Bool {
        for id in names.ids {
            for v in item.values[id] ?? [] where matches(v, numbers: !names.isAllText) { return true }
        }
        return false
    }

    func matches(_ value: LoadedValue, numbers: Bool) -> Bool {
        if value.kind.isText { return matcher.matches(value.text ?? "") }
        if numbers, value.kind == .number, let n = value.num { return matcher.matches(canonicalText(n)) }
        return false
    }
}

extension TextLeaf {
    /// Lists match when any element does; a number is compared as its
    /// canonical text, and only when the attribute is named (numbers are not
    /// text attributes, so `*` never reaches them); dates, booleans and
    /// locations never match text.
    func matches(_ item: LoadedItem) -> Bool {
        switch names {
        case .one(let id):
            guard let id, let values = item.values[id] else { return false }
            return values.contains { matches($0, numbers: true) }
        case .allText(let ids):
            // Any attribute will do, so try short values first: a title settles
            // most items without running the matcher over a long description.
            var texts: [String] = []
            for id in ids {
                for v in item.values[id] ?? [] where v.kind.isText { texts.append(v.text ?? "") }
            }
            texts.sort { $0.utf8.count < $1.utf8.count }
            return texts.contains { matcher.matches($0) }
        }
    }

    func matches(_ value: LoadedValue, numbers: Bool) -> Bool {
        if value.kind.isText { return matcher.matches(value.text ?? "") }
        if numbers, value.kind == .number, let n = value.num { return matcher.matches(canonicalText(n)) }
        return false
    }
}

// MARK: Sorted id sets

/// Item ids found by the indexes for part of a plan.
struct Candidates {
    /// Sorted and unique; nil means every item of the shard.
    var ids: [Int64]?
    /// True when every id matches (no `TextMatcher` check is still owed) and,
    /// for a universe, when every item does.
    var exact: Bool

    static let everything = Candidates(ids: nil, exact: true)
    static let nothing = Candidates(ids: [], exact: true)

    /// The candidate ids inside an app's `scope` (nil: no scope), the
    /// shard's `universe` read only when neither narrows them.
    func ids(within scope: ItemScope?, universe: @autoclosure () throws -> [Int64]) rethrows -> [Int64] {
        guard let scope else { return try ids ?? universe() }
        return ids.map(scope.filter) ?? scope.ids
    }
}

enum IDs {
    /// The position of `id` in `sorted`, nil when it is not there.
    static func index(of id: Int64, in sorted: [Int64]) -> Int? {
        var lo = 0, hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < id { lo = mid + 1 } else { hi = mid }
        }
        return lo < sorted.count && sorted[lo] == id ? lo : nil
    }

    static func sortedUnique(_ ids: [Int64]) -> [Int64] {
        // Most lists come sorted already (FTS5 and index scans return rowid order).
        if zip(ids, ids.dropFirst()).allSatisfy({ $0 < $1 }) { return ids }
        var ids = ids
        ids.sort()
        var out: [Int64] = []
        out.reserveCapacity(ids.count)
        for id in ids where out.last != id { out.append(id) }
        return out
    }

    static func intersect(_ a: [Int64], _ b: [Int64]) -> [Int64] {
        var out: [Int64] = []
        out.reserveCapacity(min(a.count, b.count))
        common(a, b) { i, _ in out.append(a[i]) }
        return out
    }

    /// Calls `body(i, j)`, in order, for every `a[i] == b[j]` (both sorted,
    /// without repeats). Steps through both together; when one list is
    /// over 4 times the other, steps through the short one and gallops
    /// through the long one from where the last id was found instead.
    ///
    /// Why: ranking marks a search's matches (hundreds) in each of its words'
    /// lists (a common word's holds tens of thousands), several lists per
    /// word: stepping through the long lists was most of that work.
    @inline(__always)
    static func common(_ a: [Int64], _ b: [Int64], _ body: (Int, Int) -> Void) {
        if a.count > 4 * b.count { return common(b, a) { j, i in body(i, j) } }
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var i = 0, j = 0
                if b.count > 4 * a.count {
                    while i < a.count, j < b.count {
                        j = gallop(b, from: j, to: a[i])
                        if j < b.count, b[j] == a[i] { body(i, j); j += 1 }
                        i += 1
                    }
                    return
                }
                while i < a.count, j < b.count {
                    if a[i] < b[j] { i += 1 } else if a[i] > b[j] { j += 1 } else { body(i, j); i += 1; j += 1 }
                }
            }
        }
    }

    /// The first index at or after `from` whose id is not below `x`: steps
    /// of 1, 2, 4… from `from`, then halving.
    @inline(__always)
    static func gallop(_ ids: UnsafeBufferPointer<Int64>, from: Int, to x: Int64) -> Int {
        var lo = from, step = 1
        var hi = from
        while hi < ids.count, ids[hi] < x {
            lo = hi + 1
            hi = lo + step
            step &<<= 1
        }
        hi = min(hi, ids.count)
        while lo < hi {
            let mid = (lo + hi) >> 1
            if ids[mid] < x { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The ids in `a` or `b` (both sorted, without repeats). An empty side
    /// gives the other back as it is, sharing its storage: a word's misspelt
    /// forms are often found nowhere, and copying its exact list into the
    /// union would be 6% of a two-word search.
    static func union(_ a: [Int64], _ b: [Int64]) -> [Int64] {
        if a.isEmpty { return b }
        if b.isEmpty { return a }
        return [Int64](unsafeUninitializedCapacity: a.count + b.count) { out, written in
            var k = 0
            a.withUnsafeBufferPointer { a in
                b.withUnsafeBufferPointer { b in
                    var i = 0, j = 0
                    while i < a.count, j < b.count {
                        let x = a[i], y = b[j]
                        if x <= y {
                            out[k] = x
                            i += 1
                            if x == y { j += 1 }
                        } else {
                            out[k] = y
                            j += 1
                        }
                        k += 1
                    }
                    while i < a.count { out[k] = a[i]; i += 1; k += 1 }
                    while j < b.count { out[k] = b[j]; j += 1; k += 1 }
                }
            }
            written = k
        }
    }

    static func subtract(_ a: [Int64], _ b: [Int64]) -> [Int64] {
        if a.isEmpty || b.isEmpty { return a }
        var out: [Int64] = []
        out.reserveCapacity(a.count)
        var j = 0
        for x in a {
            while j < b.count, b[j] < x { j += 1 }
            if j < b.count, b[j] == x { continue }
            out.append(x)
        }
        return out
    }
}
