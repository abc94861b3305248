/// The criteria ``SearchRanking/compare(_:_:plan:)`` takes first when a
/// search has words, packed into one integer that orders as they do
/// (smaller first), and the rest of the comparison for ties on it.
///
/// Why: a shard picks its window out of hundreds or thousands of
/// candidates, and comparing ranks field by field, each read out of an
/// array of structs holding an array, would be a fifth of a two-word
/// search: integers compare in one instruction.
///
/// Which criteria: the textual ones (words, typo, proximity, attribute,
/// exact — 64 bits between them) that lead the plan's order, in that order,
/// up to the first criterion that is not textual (`geo` with a point,
/// `custom`, `asc()`/`desc()`); from there on, every criterion is compared
/// by ``compareRest(_:_:plan:)``. Limelight's own order packs all five
/// (custom ranking and distance come after them); Algolia's default packs
/// `typo` alone when there is a point (`geo` is second) and all five when
/// there is none; a ranking that starts with `desc(price)` packs none.
public struct SearchRankKey: Sendable {
    /// The criteria packed, in order.
    public let packed: [RankCriterion]
    /// What is compared on a tie of keys, in order.
    public let rest: [RankCriterion]
    /// Whether ``rest`` holds a textual criterion (ranks that tie on the key
    /// may then differ on it).
    let restIsTextual: Bool

    public init(plan: SearchPlan) {
        let order = plan.effectiveRanking
        let lead = order.prefix { $0.isTextual }
        packed = Array(lead)
        rest = Array(order.dropFirst(lead.count))
        restIsTextual = rest.contains { $0.isTextual }
    }

    /// Limelight's own order with words.
    public static let limelight = SearchRankKey(plan: SearchPlan(words: ["a"]))

    /// The key of `r`; nil when a value is out of the bits it gets (the
    /// caller then compares ranks whole).
    public func key(_ r: SearchRank) -> UInt64? {
        var k: UInt64 = 0
        for c in packed {
            switch c {
            case .words:
                guard r.words >= 0, r.words < 256 else { return nil }
                k = k << 8 | UInt64(255 - r.words)
            case .typo:
                guard r.typos >= 0, r.typos < 256 else { return nil }
                k = k << 8 | UInt64(r.typos)
            case .proximity:
                guard r.proximity >= 0, r.proximity < 256 else { return nil }
                k = k << 8 | UInt64(r.proximity)
            case .attribute:
                guard r.attribute >= 0, r.attribute < 65_536 else { return nil }
                k = k << 16 | UInt64(r.attribute)
            case .exact:
                guard r.exactAttribute >= 0, r.exactAttribute < 65_536, r.exactWords >= 0, r.exactWords < 256 else { return nil }
                k = k << 24 | UInt64(r.exactAttribute) << 8 | UInt64(255 - r.exactWords)
            default:
                return nil
            }
        }
        return k
    }

    /// What ``SearchRanking/compare(_:_:plan:)`` compares once the keys tie.
    public func compareRest(_ a: SearchRank, _ b: SearchRank, plan: SearchPlan) -> Int {
        if plan.ranking == nil {
            // Limelight's own: custom ranking, then exact distance.
            let c = SearchRanking.compareCustom(a, b, plan)
            return c != 0 ? c : SearchRanking.compareDistance(a, b)
        }
        return SearchRanking.compare(a, b, ranking: rest, plan: plan)
    }

    /// Whether ``compareRest(_:_:plan:)`` can tell any of `ranks` apart:
    /// false when the rest is not textual, none has a distance and all have
    /// the same custom values (none, or the defaults: the default ranking's
    /// entity priority is 0 for every item without an entity, so that, with
    /// custom values merely present, every tie on the key would be compared again).
    public func restMatters(_ ranks: [SearchRank]) -> Bool {
        if restIsTextual { return !ranks.isEmpty }
        guard let first = ranks.first?.custom else { return false }
        return ranks.contains { r in r.geoDistance != nil || r.custom != first }
    }
}

extension SearchRanking {
    /// Limelight's own order's key (``SearchRankKey/limelight``).
    public static func primaryKey(_ r: SearchRank) -> UInt64? { SearchRankKey.limelight.key(r) }

    /// What Limelight's own order compares, with words, once the
    /// ``primaryKey(_:)`` criteria tie: the custom ranking, then distance.
    public static func compareAfterPrimary(_ a: SearchRank, _ b: SearchRank, plan: SearchPlan) -> Int {
        let c = compareCustom(a, b, plan)
        return c != 0 ? c : compareDistance(a, b)
    }

    /// ``SearchRankKey/restMatters(_:)`` of Limelight's own order.
    public static func afterPrimaryMatters(_ ranks: [SearchRank]) -> Bool { SearchRankKey.limelight.restMatters(ranks) }
}
