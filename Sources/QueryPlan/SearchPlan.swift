import Foundation
import Items

/// One key of a custom ranking (Algolia's `customRanking`: `desc(popularity)`).
public struct CustomRank: Sendable, Hashable {
    /// An attribute name, or ``CustomRank/entityPriority`` for the priority of
    /// the item's app entity.
    public var attribute: String
    public var ascending: Bool
    public init(attribute: String, ascending: Bool) {
        self.attribute = attribute
        self.ascending = ascending
    }

    /// The pseudo-attribute naming an item's entity priority.
    public static let entityPriority = "entity.priority"
    /// Without a `customRanking` parameter: entity priority, then `rankingHint`, both higher first.
    public static let defaults = [
        CustomRank(attribute: entityPriority, ascending: false),
        CustomRank(attribute: "rankingHint", ascending: false),
    ]
}

/// Another word a query word matches (a synonym, a plural): a whole token
/// equal to ``word`` counts as the query word, with no typo, for every
/// criterion; for `exact` only when ``exact`` is set (Algolia's
/// `alternativesAsExact`).
///
/// Or a phrase (a synonym of several words: "ny" for "new york"): the
/// words of ``phrase``, each a whole token equal to it (no typo, no
/// prefix), at consecutive positions of one value, count as the query word
/// met at the phrase's first and last positions (so proximity to the words
/// before and after it is measured from its ends), with no typo. Algolia:
/// "the engine considers multi-word synonyms as a phrase": "NY" finds "New
/// York Times", not "new company in York".
public struct WordAlternative: Sendable, Hashable {
    /// Folded, one token; for a phrase, its words joined by spaces (so
    /// that it equals no token).
    public var word: String
    /// Whether a match counts for the `exact` criterion (words matched
    /// whole, and a value that is the whole query).
    public var exact: Bool
    /// A phrase's folded words (at least two); empty for one word.
    public var phrase: [String]
    /// The typos a match counts for (0, 1 or 2): Algolia's alternative
    /// corrections (`altcorrection1`, `altcorrection2`) rank "as words with
    /// one or two typos", below the word itself.
    public var typos: Int
    public init(_ word: String, exact: Bool = true, typos: Int = 0) {
        self.word = word
        self.exact = exact
        phrase = []
        self.typos = min(max(typos, 0), 2)
    }

    /// A phrase of folded words; one word makes a word's alternative.
    public init(phrase words: [String], exact: Bool = true, typos: Int = 0) {
        word = words.joined(separator: " ")
        self.exact = exact
        phrase = words.count > 1 ? words : []
        self.typos = min(max(typos, 0), 2)
    }

    public var isPhrase: Bool { !phrase.isEmpty }

    /// The wire form: a word's text when exact with no typo, else `{word,
    /// exact, typos}`; a phrase as `{phrase: [words], exact, typos}`
    /// (`exact` written when false, `typos` when not 0: a plan without
    /// phrases or corrections is the JSON it was before they existed).
    public var json: JSONValue {
        if !isPhrase, exact, typos == 0 { return .string(word) }
        var o: [String: JSONValue] = isPhrase ? ["phrase": .array(phrase.map { .string($0) })] : ["word": .string(word)]
        if !exact { o["exact"] = .bool(false) }
        if typos > 0 { o["typos"] = .number(Double(typos)) }
        return .object(o)
    }

    public init(json a: JSONValue, path: String) throws(PlanDecodingError) {
        if let w = a.stringValue {
            self.init(w)
            return
        }
        let exact = a["exact"]?.boolValue ?? true
        let typos = a["typos"]?.intValue ?? 0
        guard (0...2).contains(typos) else { throw PlanDecodingError(path: path, message: "expected typos of 0, 1 or 2") }
        if let list = a["phrase"]?.arrayValue {
            let words = list.compactMap(\.stringValue)
            guard words.count == list.count, words.count > 1, words.count <= Self.maxPhraseWords,
                !words.contains(where: { $0.isEmpty || $0.contains(" ") })
            else {
                throw PlanDecodingError(path: path, message: "expected a phrase of 2 to \(Self.maxPhraseWords) words without spaces")
            }
            self.init(phrase: words, exact: exact, typos: typos)
            return
        }
        guard let w = a["word"]?.stringValue else {
            throw PlanDecodingError(path: path, message: "expected a word, {word, exact} or {phrase, exact}")
        }
        self.init(w, exact: exact, typos: typos)
    }

    /// The most words a phrase holds (its progress through a text is one bit a word).
    public static let maxPhraseWords = 64
}

/// Parameter search (Algolia's `SearchParameters`) as every shard evaluates
/// it: the query language parses into this, the coordinator sends it to a
/// query worker per shard, and merges what they return by ``SearchRanking``.
///
/// Filters are ordinary ``Predicate``s, so refinements are evaluated by the
/// same code as every other query language.
public struct SearchPlan: Sendable, Hashable {
    /// The folded query words, in order; empty for an empty query (every item
    /// that passes the filters matches).
    public var words: [String]
    /// Per query word, the other words it matches (``WordAlternative``):
    /// empty when no word has any (the plan then costs what it did without
    /// them), else one list per word. The coordinator fills them (synonyms,
    /// plurals); shards only match them.
    public var alternatives: [[WordAlternative]] = []
    /// Whether the last word also matches as a prefix (as-you-type); false
    /// when the typed query ends with a space, since the word is then complete.
    public var prefixLast: Bool
    public var typos: TypoPolicy
    /// Every refinement, ANDed.
    public var filter: Predicate
    /// Attributes to count values of, over the whole matching set.
    public var facets: [String]
    /// For each disjunctive facet, the filter without that facet's own
    /// refinements: its counts are those of the result it would have if none
    /// of its values were picked.
    public var disjunctiveFilters: [String: Predicate]
    /// Facets counted under another name: name in ``facets`` → the attribute
    /// counted. An alias with a disjunctive filter lets one search count an
    /// attribute both over the matches and over that filter (Algolia's
    /// InstantSearch asks both in one `/queries` call, which the REST API
    /// answers with one search).
    public var facetAliases: [String: String] = [:]
    /// A pseudo-facet: named in ``facets``, its counts are, for each
    /// disjunctive facet of ``facets``, how many items match that facet's
    /// filter (and the words), keyed by the facet's name. Counts add up over
    /// shards as facet counts do, so they travel as one.
    public static let disjunctiveSetSizes = "\u{1}disjunctiveSetSizes"
    /// Values of each facet the answer lists, most frequent first.
    public var maxValuesPerFacet: Int
    /// Attributes free text is searched in, best first; empty for the default
    /// order (title, displayName, keywords, contentDescription, then every
    /// other text attribute searchable by default).
    public var searchableAttributes: [String]
    public var customRanking: [CustomRank]
    /// A point to measure `_geoDistance` from; without query words, hits are
    /// ordered by it.
    public var around: Location?
    /// Metres from `around` beyond which items do not match (the filter holds
    /// the latitude/longitude box around the circle; shards measure the rest).
    public var aroundRadius: Double?
    /// How coarsely an explicit ranking's `geo` criterion compares distances
    /// (Algolia's `aroundPrecision`); nil for groups of 10 m.
    public var aroundPrecision: GeoPrecision?
    /// How many of the best hits a shard returns: the end of the page asked for.
    public var window: Int
    /// Attributes each hit carries; nil for all.
    public var fetchAttributes: [String]?
    /// Vector ranking fused with the lexical one (see ``HybridRanking``);
    /// nil for words alone.
    public var semantic: SemanticPlan?
    /// The ranking formula, criteria in order (Algolia's `ranking`); nil for
    /// Limelight's own order (``RankCriterion/limelight``, distance then
    /// custom ranking without words).
    public var ranking: [RankCriterion]?
    /// Only the best hits per value of an attribute; nil for every hit.
    public var distinct: DistinctPlan?

    public init(
        words: [String] = [], prefixLast: Bool = true, typos: TypoPolicy = TypoPolicy(),
        filter: Predicate = .all, facets: [String] = [], disjunctiveFilters: [String: Predicate] = [:],
        maxValuesPerFacet: Int = 100, searchableAttributes: [String] = [],
        customRanking: [CustomRank] = CustomRank.defaults, around: Location? = nil,
        window: Int = 20, fetchAttributes: [String]? = nil
    ) {
        self.words = words
        self.prefixLast = prefixLast
        self.typos = typos
        self.filter = filter
        self.facets = facets
        self.disjunctiveFilters = disjunctiveFilters
        self.maxValuesPerFacet = maxValuesPerFacet
        self.searchableAttributes = searchableAttributes
        self.customRanking = customRanking
        self.around = around
        self.window = window
        self.fetchAttributes = fetchAttributes
    }

    /// The default order of searchable attributes; the others follow.
    public static let defaultAttributeOrder = ["title", "displayName", "keywords", "contentDescription"]
}

/// Sums over the numeric values of a facet, so that shards' figures add up.
public struct FacetStats: Sendable, Hashable {
    public var min: Double
    public var max: Double
    public var sum: Double
    /// Values summed (for the average).
    public var count: Int
    public init(min: Double, max: Double, sum: Double, count: Int) {
        self.min = min
        self.max = max
        self.sum = sum
        self.count = count
    }

    public mutating func merge(_ o: FacetStats) {
        min = Swift.min(min, o.min)
        max = Swift.max(max, o.max)
        sum += o.sum
        count += o.count
    }
}

/// The ranking criteria of one hit, in Algolia's tie-breaking order, and the
/// one comparison that shards sort by and the coordinator merges by.
///
/// Every criterion is a property of the item and the query alone — no term
/// statistics — so an item ranks the same whichever shard holds it, and
/// shards need no global-statistics phase to agree.
public struct SearchRank: Sendable, Hashable {
    /// Query words matched (all of them: every word must match).
    public var words: Int
    /// Typos summed over the words, each word counted at its best match.
    public var typos: Int
    /// Sum over consecutive query words of the distance between them in the
    /// text (1 when adjacent), each capped at 8 and 8 when they are in
    /// different attributes; 0 for one word.
    public var proximity: Int
    /// Where the best match is, as Algolia's `firstMatchedWord`: the
    /// position of the attribute in the searchable attributes' order × 1000,
    /// plus 0 when a query word is the attribute value's first word and 1
    /// otherwise ("emacs" for "emcas" before "cxref-emacs").
    public var attribute: Int

    public static func attribute(_ rank: Int, atStart: Bool) -> Int { rank * 1000 + (atStart ? 0 : 1) }
    /// Position, in the searchable attributes' order, of the best attribute
    /// whose whole value is the query (``noExactAttribute`` when none is):
    /// the package named `vim` for "vim" beats one that merely depends on vim.
    public var exactAttribute: Int
    /// Query words matched as whole words (not as a prefix nor with typos).
    public var exactWords: Int
    /// The custom ranking values, in the plan's order (null when missing).
    public var custom: [JSONValue]
    /// Metres from the plan's `around` point; nil without one.
    public var geoDistance: Double?
    /// Cosine similarity of the item's vector and the query's, when the
    /// search is semantic and the item has a vector.
    public var semanticScore: Double?
    /// Whether the item matched the query's words and is among its shard's
    /// best `window` by them; false for a hit sent only for its semantic score.
    public var lexical: Bool = true
    /// The hit's value of the plan's ``SearchPlan/distinct`` attribute (its
    /// first, for a list), by which the merge keeps the best per value; nil
    /// without distinct or when the item has none (each such hit is its own group).
    public var distinctValue: JSONValue?

    public static let noExactAttribute = 1_000

    public init(
        words: Int = 0, typos: Int = 0, proximity: Int = 0, attribute: Int = 0, exactAttribute: Int = noExactAttribute,
        exactWords: Int = 0, custom: [JSONValue] = [], geoDistance: Double? = nil
    ) {
        self.words = words
        self.typos = typos
        self.proximity = proximity
        self.attribute = attribute
        self.exactAttribute = exactAttribute
        self.exactWords = exactWords
        self.custom = custom
        self.geoDistance = geoDistance
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "words": .number(Double(words)), "typos": .number(Double(typos)), "proximity": .number(Double(proximity)),
            "attribute": .number(Double(attribute)), "exactAttribute": .number(Double(exactAttribute)),
            "exactWords": .number(Double(exactWords)), "custom": .array(custom),
        ]
        if let geoDistance { o["geoDistance"] = .number(geoDistance) }
        if let semanticScore { o["semanticScore"] = .number(semanticScore) }
        if !lexical { o["lexical"] = .bool(false) }
        if let distinctValue { o["distinct"] = distinctValue }
        return .object(o)
    }

    public init(json: JSONValue) throws(PlanDecodingError) {
        guard case .object(let o) = json else { throw PlanDecodingError(path: "rank", message: "expected an object") }
        defer {
            semanticScore = o["semanticScore"]?.doubleValue
            lexical = o["lexical"]?.boolValue ?? true
            distinctValue = o["distinct"]
        }
        func int(_ k: String) -> Int { o[k]?.intValue ?? 0 }
        self.init(
            words: int("words"), typos: int("typos"), proximity: int("proximity"), attribute: int("attribute"),
            exactAttribute: o["exactAttribute"]?.intValue ?? SearchRank.noExactAttribute, exactWords: int("exactWords"),
            custom: o["custom"]?.arrayValue ?? [],
            geoDistance: o["geoDistance"]?.doubleValue)
    }
}

public enum SearchRanking {
    /// True when `a` ranks before `b`: by the plan's ``SearchPlan/ranking``
    /// when it has one; else with query words: typos, proximity, attribute,
    /// exactness (whole value, then exact words), custom ranking, distance;
    /// without: distance first when there is a point, then custom ranking.
    /// Ties go to the smaller unique identifier, so the order is total and
    /// the same on every shard and in the merge.
    public static func precedes(_ a: SearchRank, _ aID: String, _ b: SearchRank, _ bID: String, plan: SearchPlan) -> Bool {
        let c = compare(a, b, plan: plan)
        return c != 0 ? c < 0 : aID < bID
    }

    /// `precedes` without the identifiers: negative when `a` ranks before
    /// `b`, positive after, 0 when they tie on every criterion. One call
    /// where a sort that breaks ties by something else than identifiers
    /// would make two of `precedes`.
    public static func compare(_ a: SearchRank, _ b: SearchRank, plan: SearchPlan) -> Int {
        if let ranking = plan.ranking { return compare(a, b, ranking: ranking, plan: plan) }
        // Straight-line comparisons: this runs inside sorts of thousands of hits.
        if plan.words.isEmpty {
            let d = compareDistance(a, b)
            if d != 0 { return d }
            return compareCustom(a, b, plan)
        }
        if a.words != b.words { return a.words > b.words ? -1 : 1 }
        if a.typos != b.typos { return a.typos < b.typos ? -1 : 1 }
        if a.proximity != b.proximity { return a.proximity < b.proximity ? -1 : 1 }
        if a.attribute != b.attribute { return a.attribute < b.attribute ? -1 : 1 }
        if a.exactAttribute != b.exactAttribute { return a.exactAttribute < b.exactAttribute ? -1 : 1 }
        if a.exactWords != b.exactWords { return a.exactWords > b.exactWords ? -1 : 1 }
        let c = compareCustom(a, b, plan)
        if c != 0 { return c }
        return compareDistance(a, b)
    }

    static func compareDistance(_ a: SearchRank, _ b: SearchRank) -> Int {
        switch (a.geoDistance, b.geoDistance) {
        case (let x?, let y?): return x < y ? -1 : x > y ? 1 : 0
        case (nil, .some): return 1
        case (.some, nil): return -1
        default: return 0
        }
    }

    /// The custom ranking's values (see ``compareValue(at:_:_:ascending:)``).
    static func compareCustom(_ a: SearchRank, _ b: SearchRank, _ plan: SearchPlan) -> Int {
        compareCustom(a, b, plan.customRanking, from: 0)
    }
}

// MARK: - Wire form

extension SearchPlan {
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "words": .array(words.map { .string($0) }),
            "prefixLast": .bool(prefixLast),
            "typoTolerance": .bool(typos.enabled),
            "minWordSizefor1Typo": .number(Double(typos.minWordSizeForOneTypo)),
            "minWordSizefor2Typos": .number(Double(typos.minWordSizeForTwoTypos)),
            "filter": filter.json,
            "facets": .array(facets.map { .string($0) }),
            "disjunctiveFilters": .object(disjunctiveFilters.mapValues(\.json)),
            "maxValuesPerFacet": .number(Double(maxValuesPerFacet)),
            "searchableAttributes": .array(searchableAttributes.map { .string($0) }),
            "customRanking": .array(
                customRanking.map {
                    .object(["attribute": .string($0.attribute), "ascending": .bool($0.ascending)])
                }),
            "window": .number(Double(window)),
        ]
        if let aroundRadius { o["aroundRadius"] = .number(aroundRadius) }
        if let aroundPrecision { o["aroundPrecision"] = aroundPrecision.json }
        if let around { o["around"] = .object(["latitude": .number(around.latitude), "longitude": .number(around.longitude)]) }
        if !facetAliases.isEmpty { o["facetAliases"] = .object(facetAliases.mapValues { .string($0) }) }
        if let fetchAttributes { o["fetchAttributes"] = .array(fetchAttributes.map { .string($0) }) }
        if let semantic { o["semantic"] = semantic.json }
        if let ranking { o["ranking"] = .array(ranking.map { .string($0.name) }) }
        if let distinct { o["distinct"] = .object(["attribute": .string(distinct.attribute), "count": .number(Double(distinct.count))]) }
        if !alternatives.isEmpty { o["alternatives"] = .array(alternatives.map { list in .array(list.map(\.json)) }) }
        return .object(o)
    }

    public init(json: JSONValue) throws(PlanDecodingError) {
        guard case .object(let o) = json else { throw PlanDecodingError(path: "search", message: "expected an object") }
        func strings(_ k: String) -> [String] { o[k]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        var disjunctive: [String: Predicate] = [:]
        if case .object(let d)? = o["disjunctiveFilters"] {
            for (k, v) in d { disjunctive[k] = try Predicate(json: v, path: "search.disjunctiveFilters.\(k)") }
        }
        var custom: [CustomRank] = []
        for (i, c) in (o["customRanking"]?.arrayValue ?? []).enumerated() {
            guard let a = c["attribute"]?.stringValue else {
                throw PlanDecodingError(path: "search.customRanking[\(i)]", message: "expected {attribute, ascending}")
            }
            custom.append(CustomRank(attribute: a, ascending: c["ascending"]?.boolValue ?? false))
        }
        var around: Location?
        if let a = o["around"], let lat = a["latitude"]?.doubleValue, let lon = a["longitude"]?.doubleValue {
            around = Location(latitude: lat, longitude: lon)
        }
        self.init(
            words: strings("words"), prefixLast: o["prefixLast"]?.boolValue ?? true,
            typos: TypoPolicy(
                enabled: o["typoTolerance"]?.boolValue ?? true,
                minWordSizeForOneTypo: o["minWordSizefor1Typo"]?.intValue ?? TypoPolicy.algolia.minWordSizeForOneTypo,
                minWordSizeForTwoTypos: o["minWordSizefor2Typos"]?.intValue ?? TypoPolicy.algolia.minWordSizeForTwoTypos),
            filter: try o["filter"].map { v throws(PlanDecodingError) in try Predicate(json: v, path: "search.filter") } ?? .all,
            facets: strings("facets"), disjunctiveFilters: disjunctive,
            maxValuesPerFacet: o["maxValuesPerFacet"]?.intValue ?? 100,
            searchableAttributes: strings("searchableAttributes"), customRanking: custom, around: around,
            window: max(0, o["window"]?.intValue ?? 20),
            fetchAttributes: o["fetchAttributes"]?.arrayValue?.compactMap(\.stringValue))
        aroundRadius = o["aroundRadius"]?.doubleValue
        if let p = o["aroundPrecision"], p != .null {
            switch GeoPrecision.parse(p) {
            case .success(let precision): aroundPrecision = precision
            case .failure(let problem): throw PlanDecodingError(path: "search.aroundPrecision", message: problem.message)
            }
        }
        facetAliases = o["facetAliases"]?.objectValue?.compactMapValues(\.stringValue) ?? [:]
        if let s = o["semantic"], s != .null { semantic = try SemanticPlan(json: s) }
        if let r = o["ranking"]?.arrayValue {
            var criteria: [RankCriterion] = []
            for (i, name) in r.enumerated() {
                guard let c = name.stringValue.flatMap(RankCriterion.init(name:)) else {
                    throw PlanDecodingError(path: "search.ranking[\(i)]", message: "expected a ranking criterion")
                }
                criteria.append(c)
            }
            ranking = criteria
        }
        if let d = o["distinct"], let a = d["attribute"]?.stringValue {
            distinct = DistinctPlan(attribute: a, count: max(1, d["count"]?.intValue ?? 1))
        }
        if let lists = o["alternatives"]?.arrayValue {
            alternatives = try lists.enumerated().map { (i, list) throws(PlanDecodingError) in
                guard let list = list.arrayValue else {
                    throw PlanDecodingError(path: "search.alternatives[\(i)]", message: "expected a list of words")
                }
                return try list.enumerated().map { (k, a) throws(PlanDecodingError) in
                    try WordAlternative(json: a, path: "search.alternatives[\(i)][\(k)]")
                }
            }
            guard alternatives.isEmpty || alternatives.count == words.count else {
                throw PlanDecodingError(path: "search.alternatives", message: "expected one list per query word")
            }
        }
    }

    /// Whether some word has a phrase for alternative (``WordAlternative/phrase``).
    public var hasPhraseAlternatives: Bool { alternatives.contains { $0.contains(where: \.isPhrase) } }

    /// The alternatives of query word `w` (none when the plan has none).
    @inline(__always) public func alternatives(of w: Int) -> [WordAlternative] {
        w < alternatives.count ? alternatives[w] : []
    }
}
