import Foundation
import Items

/// One criterion of a ranking formula (Algolia's `ranking` setting), applied
/// in order by the tie-breaking comparison: each decides only between hits
/// that tie on the ones before it.
public enum RankCriterion: Sendable, Hashable {
    /// Fewer typos first.
    case typo
    /// Nearer the plan's `around` point first, in the groups of the plan's
    /// ``SearchPlan/aroundPrecision`` (10 m by default); nothing without a point.
    case geo
    /// More query words matched first (every word must match, so this
    /// decides only between lexical hits and hits sent for their semantic score).
    case words
    /// Algolia's score of optional filters; Limelight has none, so it ties.
    case filters
    /// Query words nearer each other first.
    case proximity
    /// A match in an earlier searchable attribute first (see ``SearchRank/attribute``).
    case attribute
    /// The whole value being the query, then more words matched exactly.
    case exact
    /// The plan's ``SearchPlan/customRanking``, in order.
    case custom
    /// `asc(attribute)` / `desc(attribute)` in the formula (a standard
    /// replica's sort): the attribute's value, at this place in the order.
    case sort(CustomRank)

    /// Algolia's default formula, which an Algolia index ranks by unless its
    /// `ranking` setting says otherwise.
    public static let algolia: [RankCriterion] = [.typo, .geo, .words, .filters, .proximity, .attribute, .exact, .custom]

    /// Limelight's own order for a search with words (docs/design.md): the
    /// order of a plan whose ``SearchPlan/ranking`` is nil. Without words, a
    /// nil ranking is distance, then custom ranking.
    public static let limelight: [RankCriterion] = [.words, .typo, .proximity, .attribute, .exact, .custom, .geo]

    /// Parses one entry of a `ranking` list: a criterion's name, or
    /// `asc(attribute)` / `desc(attribute)`; nil for anything else.
    public init?(name: String) {
        switch name {
        case "typo": self = .typo
        case "geo": self = .geo
        case "words": self = .words
        case "filters": self = .filters
        case "proximity": self = .proximity
        case "attribute": self = .attribute
        case "exact": self = .exact
        case "custom": self = .custom
        default:
            let asc = name.hasPrefix("asc(") && name.hasSuffix(")")
            let desc = name.hasPrefix("desc(") && name.hasSuffix(")")
            guard asc || desc else { return nil }
            let attribute = String(name.dropFirst(asc ? 4 : 5).dropLast())
            guard !attribute.isEmpty else { return nil }
            self = .sort(CustomRank(attribute: attribute, ascending: asc))
        }
    }

    public var name: String {
        switch self {
        case .typo: "typo"
        case .geo: "geo"
        case .words: "words"
        case .filters: "filters"
        case .proximity: "proximity"
        case .attribute: "attribute"
        case .exact: "exact"
        case .custom: "custom"
        case .sort(let k): (k.ascending ? "asc(" : "desc(") + k.attribute + ")"
        }
    }

    /// Whether the criterion compares what the query's words matched (and
    /// so ties on every hit of a search without words).
    var isTextual: Bool {
        switch self {
        case .typo, .words, .proximity, .attribute, .exact: true
        default: false
        }
    }
}

/// Only the best few hits per value of an attribute (Algolia's `distinct`
/// with `attributeForDistinct`).
public struct DistinctPlan: Sendable, Hashable {
    public var attribute: String
    /// Hits kept per value (`distinct: true` is 1).
    public var count: Int
    public init(attribute: String, count: Int) {
        self.attribute = attribute
        self.count = count
    }

    /// The facet under which a shard sends, with distinct, how many of its
    /// matches hold each value of the attribute (every value, uncapped), and
    /// under ``missingKey`` how many hold none: added up over shards, its
    /// values are the groups (one value on two shards is one group). Never
    /// answered as a facet.
    public static let groupsFacet = "\u{1}distinct"
    public static let missingKey = "\u{1}"

    /// How many groups the merged ``groupsFacet`` counts make: one per
    /// value, and one per match without a value.
    public static func groups(_ counts: [String: Int]) -> Int {
        counts.count - (counts[missingKey] == nil ? 0 : 1) + (counts[missingKey] ?? 0)
    }

    /// Of `order` (best first), the first `perGroup` of each key, grouped
    /// (each group's in order, groups in the order of their best), for the
    /// first `groups` groups; a nil key is a group of its own.
    public static func pick<Key: Hashable>(_ order: [Int], keys: (Int) -> Key?, perGroup: Int, groups: Int) -> [[Int]] {
        var out: [[Int]] = []
        var place: [Key: Int] = [:]
        for i in order {
            guard let key = keys(i) else {
                if out.count < groups { out.append([i]) }
                continue
            }
            if let g = place[key] {
                if out[g].count < perGroup { out[g].append(i) }
            } else if out.count < groups {
                place[key] = out.count
                out.append([i])
            }
        }
        return out
    }
}

extension SearchPlan {
    /// What every hit's ``SearchRank/custom`` holds, in order: the custom
    /// ranking's values, then those of the ranking's `asc()`/`desc()` criteria.
    public var rankValues: [CustomRank] {
        guard let ranking else { return customRanking }
        var out = customRanking
        for case .sort(let k) in ranking { out.append(k) }
        return out
    }

    /// The order that decides, without no-ops: the ranking (or Limelight's
    /// own), without `filters`, and without `geo` when there is no point.
    public var effectiveRanking: [RankCriterion] {
        guard let ranking else { return words.isEmpty ? [.geo, .custom] : RankCriterion.limelight }
        return ranking.filter { c in
            switch c {
            case .filters: false
            case .geo: around != nil
            case .words, .typo, .proximity, .attribute, .exact: !words.isEmpty
            default: true
            }
        }
    }
}

extension SearchRanking {
    /// ``compare(_:_:plan:)`` for a plan with an explicit ranking: the
    /// criteria in the ranking's order.
    static func compare(_ a: SearchRank, _ b: SearchRank, ranking: [RankCriterion], plan: SearchPlan) -> Int {
        var sort = plan.customRanking.count
        let textual = !plan.words.isEmpty
        for criterion in ranking {
            switch criterion {
            case .typo:
                if textual, a.typos != b.typos { return a.typos < b.typos ? -1 : 1 }
            case .words:
                if textual, a.words != b.words { return a.words > b.words ? -1 : 1 }
            case .filters:
                continue
            case .proximity:
                if textual, a.proximity != b.proximity { return a.proximity < b.proximity ? -1 : 1 }
            case .attribute:
                if textual, a.attribute != b.attribute { return a.attribute < b.attribute ? -1 : 1 }
            case .exact:
                if textual, a.exactAttribute != b.exactAttribute { return a.exactAttribute < b.exactAttribute ? -1 : 1 }
                if textual, a.exactWords != b.exactWords { return a.exactWords > b.exactWords ? -1 : 1 }
            case .geo:
                // Nothing without a point (as ``SearchPlan/effectiveRanking`` drops it).
                guard plan.around != nil else { continue }
                let c = compareGeo(a, b, plan.aroundPrecision ?? .algoliaDefault)
                if c != 0 { return c }
            case .custom:
                let c = compareCustom(a, b, plan.customRanking, from: 0)
                if c != 0 { return c }
            case .sort(let key):
                let c = compareValue(at: sort, a, b, ascending: key.ascending)
                sort += 1
                if c != 0 { return c }
            }
        }
        return 0
    }

    /// Distances in the groups of `precision` (Algolia's default: a hit
    /// 0–9 m away ties with one 5 m away, and beats one 10 m away); a hit
    /// without one after every hit with one.
    static func compareGeo(_ a: SearchRank, _ b: SearchRank, _ precision: GeoPrecision) -> Int {
        switch (a.geoDistance, b.geoDistance) {
        case (let x?, let y?):
            return precision.compare(x, y)
        case (nil, .some): return 1
        case (.some, nil): return -1
        default: return 0
        }
    }

    /// The values at `from`…, one per key of `keys`.
    static func compareCustom(_ a: SearchRank, _ b: SearchRank, _ keys: [CustomRank], from: Int) -> Int {
        for (i, key) in keys.enumerated() {
            let c = compareValue(at: from + i, a, b, ascending: key.ascending)
            if c != 0 { return c }
        }
        return 0
    }

    /// Custom values at `i`: numbers compared directly, missing ones last,
    /// text by ``SortValue``'s order.
    static func compareValue(at i: Int, _ a: SearchRank, _ b: SearchRank, ascending: Bool) -> Int {
        let x = i < a.custom.count ? a.custom[i] : .null
        let y = i < b.custom.count ? b.custom[i] : .null
        if case .null = x, case .null = y { return 0 }
        if case .number(let p) = x, case .number(let q) = y {
            return p == q ? 0 : ((p < q) == ascending ? -1 : 1)
        }
        return SortValue.compare(SortValue(json: x), SortValue(json: y), ascending: ascending)
    }
}

/// One entry of the searchable attributes' order, as Algolia's
/// `searchableAttributes` writes it: `"title"`, an equal-rank group
/// `"title,alternative"` (every name of it shares one rank), or
/// `"unordered(description)"` (where in the attribute a word matched does not
/// count: a match anywhere in it ranks as one at its start).
public struct SearchableAttribute: Sendable, Hashable {
    public var name: String
    /// The attribute criterion's rank: the entry's position in the list.
    public var rank: Int
    public var unordered: Bool

    public init(name: String, rank: Int, unordered: Bool) {
        self.name = name
        self.rank = rank
        self.unordered = unordered
    }

    /// The names of `entries` (a plan's ``SearchPlan/searchableAttributes``)
    /// in order, each with its entry's rank.
    public static func parse(_ entries: [String]) -> [SearchableAttribute] {
        var out: [SearchableAttribute] = []
        for (rank, entry) in entries.enumerated() {
            for part in entry.split(separator: ",") {
                var name = part.trimmingCharacters(in: .whitespaces)
                var unordered = false
                if name.hasPrefix("unordered("), name.hasSuffix(")") {
                    name = String(name.dropFirst(10).dropLast()).trimmingCharacters(in: .whitespaces)
                    unordered = true
                } else if name.hasPrefix("ordered("), name.hasSuffix(")") {
                    name = String(name.dropFirst(8).dropLast()).trimmingCharacters(in: .whitespaces)
                }
                if !name.isEmpty { out.append(SearchableAttribute(name: name, rank: rank, unordered: unordered)) }
            }
        }
        return out
    }
}
