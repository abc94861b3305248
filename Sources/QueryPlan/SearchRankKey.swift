extension SearchRanking {
    /// The criteria ``compare(_:_:plan:)`` takes first when a search has
    /// words — words matched, typos, proximity, attribute, whole-value
    /// exactness, exact words — as one integer that orders as they do
    /// (smaller first); nil when a value is out of the bits it gets (the
    /// caller then compares ranks whole).
    ///
    /// Why: a shard picks its window out of hundreds or thousands of
    /// candidates, and comparing ranks field by field, each read out of an
    /// array of structs holding an array, would be a fifth of a two-word
    /// search: integers compare in one instruction.
    /// Only candidates equal on all six go on to ``compareAfterPrimary(_:_:plan:)``.
    public static func primaryKey(_ r: SearchRank) -> UInt64? {
        guard r.words >= 0, r.words < 256, r.typos >= 0, r.typos < 256, r.proximity >= 0, r.proximity < 256,
            r.attribute >= 0, r.attribute < 65_536, r.exactAttribute >= 0, r.exactAttribute < 65_536,
            r.exactWords >= 0, r.exactWords < 256
        else { return nil }
        return UInt64(255 - r.words) << 56 | UInt64(r.typos) << 48 | UInt64(r.proximity) << 40
            | UInt64(r.attribute) << 24 | UInt64(r.exactAttribute) << 8 | UInt64(255 - r.exactWords)
    }

    /// What ``compare(_:_:plan:)`` compares, with words, once the
    /// ``primaryKey(_:)`` criteria tie: the custom ranking, then distance.
    public static func compareAfterPrimary(_ a: SearchRank, _ b: SearchRank, plan: SearchPlan) -> Int {
        let c = compareCustom(a, b, plan)
        return c != 0 ? c : compareDistance(a, b)
    }

    /// Whether ``compareAfterPrimary(_:_:plan:)`` can tell any of `ranks`
    /// apart: false when none has a distance and all have the same custom
    /// values (none, or the defaults: the default ranking's entity priority
    /// is 0 for every item without an entity, so that, with custom values
    /// merely present, every tie on the primary key would be compared again).
    public static func afterPrimaryMatters(_ ranks: [SearchRank]) -> Bool {
        guard let first = ranks.first?.custom else { return false }
        return ranks.contains { r in r.geoDistance != nil || r.custom != first }
    }
}
