import Foundation
import Items

/// Which attributes a test looks at.
public enum AttributeSelector: Sendable, Hashable {
    /// One attribute by name.
    case named(String)
    /// Every text attribute that is searchable by default: Spotlight's `*` and `**`.
    case allText

    public var name: String? {
        if case .named(let n) = self { return n }
        return nil
    }
}

/// The `c`, `d`, `w` and `t` modifiers of a Spotlight comparison.
public struct TextOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `c`: fold case with Unicode rules.
    public static let caseInsensitive = TextOptions(rawValue: 1)
    /// `d`: ignore diacritics (é = e).
    public static let diacriticInsensitive = TextOptions(rawValue: 2)
    /// `w`: match whole words; a lowercase-to-uppercase change is also a word boundary.
    public static let wordBased = TextOptions(rawValue: 4)
    /// `t`: match tokens: every word of the value given must occur among the
    /// attribute's words, in any order (full-text search semantics).
    public static let tokenized = TextOptions(rawValue: 8)

    /// The modifier letters, in `cdwt` order.
    public var letters: String {
        var s = ""
        if contains(.caseInsensitive) { s += "c" }
        if contains(.diacriticInsensitive) { s += "d" }
        if contains(.wordBased) { s += "w" }
        if contains(.tokenized) { s += "t" }
        return s
    }

    public init?(letters: some StringProtocol) {
        var o = TextOptions()
        for ch in letters {
            switch ch {
            case "c": o.insert(.caseInsensitive)
            case "d": o.insert(.diacriticInsensitive)
            case "w": o.insert(.wordBased)
            case "t": o.insert(.tokenized)
            default: return nil
            }
        }
        self = o
    }
}

/// A text value with `*` wildcards.
///
/// Kept structured so that an escaped `\*` stays a literal star everywhere
/// downstream; written on the wire in the query-string form (`*` wildcard,
/// `\*` and `\\` literal).
public struct TextPattern: Sendable, Hashable, CustomStringConvertible {
    public enum Part: Sendable, Hashable {
        case literal(String)
        /// `*`: any run of characters, including none.
        case anyRun
    }

    public private(set) var parts: [Part]

    public init(parts: [Part]) {
        // Normalise: merge adjacent literals and adjacent stars.
        var out: [Part] = []
        for p in parts {
            switch (out.last, p) {
            case (.literal(let a)?, .literal(let b)): out[out.count - 1] = .literal(a + b)
            case (.anyRun?, .anyRun): continue
            case (_, .literal(let s)) where s.isEmpty: continue
            default: out.append(p)
            }
        }
        self.parts = out
    }

    /// A pattern with no wildcards.
    public init(literal: String) { self.init(parts: [.literal(literal)]) }

    /// Parses the wire form: `*` is a wildcard, `\` escapes the next character.
    public init(wire: String) {
        var parts: [Part] = []
        var lit = ""
        var escaped = false
        for ch in wire {
            if escaped {
                lit.append(ch); escaped = false
            } else if ch == "\\" {
                escaped = true
            } else if ch == "*" {
                parts.append(.literal(lit)); lit = ""; parts.append(.anyRun)
            } else {
                lit.append(ch)
            }
        }
        if escaped { lit.append("\\") }
        parts.append(.literal(lit))
        self.init(parts: parts)
    }

    public var wire: String {
        parts.map { part -> String in
            switch part {
            case .anyRun: return "*"
            case .literal(let s):
                var out = ""
                for ch in s {
                    if ch == "*" || ch == "\\" { out.append("\\") }
                    out.append(ch)
                }
                return out
            }
        }.joined()
    }

    public var description: String { wire }

    /// Only `*`: matches any value at all.
    public var isMatchAll: Bool { parts == [.anyRun] }
    public var hasWildcards: Bool { parts.contains(.anyRun) }
    /// The literal runs, in order.
    public var literals: [String] {
        parts.compactMap { if case .literal(let s) = $0 { s } else { nil } }
    }
}

/// A text comparison: `attr == "value"cdwt`.
public struct TextTest: Sendable, Hashable {
    public var attribute: AttributeSelector
    public var pattern: TextPattern
    public var options: TextOptions
    public init(attribute: AttributeSelector, pattern: TextPattern, options: TextOptions = []) {
        self.attribute = attribute
        self.pattern = pattern
        self.options = options
    }
}

/// One end of a numeric range.
public struct Bound: Sendable, Hashable {
    public var value: Double
    public var inclusive: Bool
    public init(_ value: Double, inclusive: Bool) {
        self.value = value
        self.inclusive = inclusive
    }
}

/// A numeric test on numbers, dates (seconds since the reference date) and
/// booleans (0 and 1). Comparisons, equality and `InRange` all lower to this.
public struct RangeTest: Sendable, Hashable {
    public var attribute: String
    public var lower: Bound?
    public var upper: Bound?
    public init(attribute: String, lower: Bound? = nil, upper: Bound? = nil) {
        self.attribute = attribute
        self.lower = lower
        self.upper = upper
    }

    public func contains(_ x: Double) -> Bool {
        if let l = lower, l.inclusive ? x < l.value : x <= l.value { return false }
        if let u = upper, u.inclusive ? x > u.value : x >= u.value { return false }
        return true
    }
}

/// The shared query plan: every query language parses into this, and the
/// shard store evaluates it. Nothing is evaluated three times.
///
/// Multi-valued attributes match when any element matches. Negation is over
/// the whole shard: `not(p)` is every item for which `p` is false.
public indirect enum Predicate: Sendable, Hashable {
    case all
    case none
    case and([Predicate])
    case or([Predicate])
    case not(Predicate)
    /// The item has at least one value for the attribute (`attr == "*"`).
    case exists(AttributeSelector)
    case text(TextTest)
    case range(RangeTest)
    /// A text value of the attribute lies in a range of text (see ``TextRangeTest``).
    case textRange(TextRangeTest)
    /// The item's domain is one of these or lies below one of them.
    case domain([String])
    /// The item's domain is exactly one of these, not below one: a group of
    /// Spotlight's grouped results, where a subdomain is a group of its own.
    case exactDomain([String])
    /// One of the attribute's locations lies in an area (see ``GeoTest``).
    case geo(GeoTest)
    /// A regular expression matches one of the attribute's values, whole
    /// (NSPredicate's `MATCHES`; see ``RegexTest``).
    case regex(RegexTest)
    /// The item's `uniqueIdentifier` is one of these (CloudKit's `recordID`).
    case identifier([String])
    /// Every value of the one attribute the leaf names satisfies the leaf
    /// (NSPredicate's `ALL`); true for an item without the attribute, as `ALL`
    /// is over an empty collection. The leaf is made of `text`, `range`,
    /// `textRange`, `regex` and `geo` tests of one named attribute, with
    /// `and`, `or` and `not`.
    case every(Predicate)

    /// Flattens nested `and`/`or`, drops neutral elements, folds constants.
    public func simplified() -> Predicate {
        switch self {
        case .and(let ps):
            var out: [Predicate] = []
            for p in ps.map({ $0.simplified() }) {
                switch p {
                case .all: continue
                case .none: return .none
                case .and(let inner): out += inner
                default: out.append(p)
                }
            }
            return out.isEmpty ? .all : out.count == 1 ? out[0] : .and(out)
        case .or(let ps):
            var out: [Predicate] = []
            for p in ps.map({ $0.simplified() }) {
                switch p {
                case .none: continue
                case .all: return .all
                case .or(let inner): out += inner
                default: out.append(p)
                }
            }
            return out.isEmpty ? .none : out.count == 1 ? out[0] : .or(out)
        case .every(let p):
            let q = p.simplified()
            return q == .all ? .all : .every(q)
        case .not(let p):
            switch p.simplified() {
            case .all: return .none
            case .none: return .all
            case .not(let q): return q
            case let q: return .not(q)
            }
        default:
            return self
        }
    }

    /// Attribute names the predicate mentions (for validation against the schema).
    public var attributeNames: Set<String> {
        switch self {
        case .all, .none, .domain, .exactDomain: []
        case .and(let ps), .or(let ps): ps.reduce(into: Set()) { $0.formUnion($1.attributeNames) }
        case .not(let p): p.attributeNames
        case .exists(let s): s.name.map { [$0] } ?? []
        case .text(let t): t.attribute.name.map { [$0] } ?? []
        case .range(let r): [r.attribute]
        case .textRange(let r): [r.attribute]
        case .geo(let g): [g.attribute]
        case .regex(let r): r.attribute.name.map { [$0] } ?? []
        case .identifier: []
        case .every(let p): p.attributeNames
        }
    }
}

/// How results are ordered.
public enum SortKey: Sendable, Hashable {
    case attribute(String, ascending: Bool)
    /// Relevance to the query's words (BM25), best first.
    case relevance
    /// The item's `uniqueIdentifier`, ascending: the last key of a sort whose
    /// ties must be broken the same way on every shard (cursors).
    case identifier
}

/// A query as the store runs it: what matches, what to return, in what order.
public struct Query: Sendable, Hashable {
    public var predicate: Predicate
    /// Attributes to return with each item (`fetchAttributes`); `nil` returns all.
    public var fetchAttributes: [String]?
    /// Empty: unordered, delivered as found (Core Spotlight's behaviour).
    public var sort: [SortKey]
    /// At most this many results in all; `nil` for no limit.
    public var limit: Int?
    /// Results per batch (Core Spotlight's `foundItemsHandler` calls).
    public var batchSize: Int
    /// Sort values of the last result of a previous page: only results that
    /// sort strictly after them are returned (a cursor). Needs `sort`.
    public var after: [JSONValue]?

    public static let defaultBatchSize = 100

    public init(
        predicate: Predicate, fetchAttributes: [String]? = nil, sort: [SortKey] = [],
        limit: Int? = nil, batchSize: Int = Query.defaultBatchSize, after: [JSONValue]? = nil
    ) {
        self.after = after
        self.predicate = predicate
        self.fetchAttributes = fetchAttributes
        self.sort = sort
        self.limit = limit
        self.batchSize = batchSize
    }
}
