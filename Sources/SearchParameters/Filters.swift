import Foundation
import Items
import QueryPlan

/// One refinement condition, before it becomes a predicate: what a facet UI
/// adds and removes, and what the `filters` grammar's leaves are.
package enum FilterCondition: Sendable, Hashable {
    /// `attr:value`: the attribute has this value (a facet value, matched
    /// ignoring case, as Algolia does, and diacritics; numbers and booleans by value).
    case facet(attribute: String, value: String)
    /// `_tags:value` or a bare `value`: matched case-sensitively.
    case tag(String)
    /// `attr op number`; `!=` is `.not` of `=`.
    case numeric(attribute: String, op: String, value: Double)
    /// `attr:lo TO hi`, both ends included.
    case range(attribute: String, lower: Double, upper: Double)

    package var attribute: String {
        switch self {
        case .facet(let a, _), .numeric(let a, _, _), .range(let a, _, _): a
        case .tag: "_tags"
        }
    }

    var isNumeric: Bool {
        switch self {
        case .numeric, .range: true
        case .facet, .tag: false
        }
    }

    /// The condition as a plan predicate.
    package var predicate: QueryPlan.Predicate {
        switch self {
        case .facet(let attribute, let value):
            let text = QueryPlan.Predicate.text(
                TextTest(
                    attribute: .named(attribute), pattern: TextPattern(literal: value),
                    options: [.caseInsensitive, .diacriticInsensitive]))
            // A facet value that reads as a number or a boolean also matches
            // the attribute's numeric or boolean value (`inStock:true`, `year:2024`).
            if let n = Double(value), n.isFinite {
                return .or([text, .range(RangeTest(attribute: attribute, lower: Bound(n, inclusive: true), upper: Bound(n, inclusive: true)))])
            }
            if value.lowercased() == "true" || value.lowercased() == "false" {
                let b: Double = value.lowercased() == "true" ? 1 : 0
                return .or([text, .range(RangeTest(attribute: attribute, lower: Bound(b, inclusive: true), upper: Bound(b, inclusive: true)))])
            }
            return text
        case .tag(let value):
            return .text(TextTest(attribute: .named("_tags"), pattern: TextPattern(literal: value)))
        case .numeric(let attribute, let op, let value):
            var r = RangeTest(attribute: attribute)
            switch op {
            case "<": r.upper = Bound(value, inclusive: false)
            case "<=": r.upper = Bound(value, inclusive: true)
            case ">": r.lower = Bound(value, inclusive: false)
            case ">=": r.lower = Bound(value, inclusive: true)
            case "!=":
                return .not(.range(RangeTest(attribute: attribute, lower: Bound(value, inclusive: true), upper: Bound(value, inclusive: true))))
            default: r.lower = Bound(value, inclusive: true); r.upper = Bound(value, inclusive: true)
            }
            return .range(r)
        case .range(let attribute, let lower, let upper):
            return .range(RangeTest(attribute: attribute, lower: Bound(lower, inclusive: true), upper: Bound(upper, inclusive: true)))
        }
    }
}

/// A filter in Algolia's shape: an AND of groups, each an OR of (possibly
/// negated) conditions. Every refinement parameter — `filters`,
/// `facetFilters`, `numericFilters` — comes down to this, which is what lets
/// the coordinator drop one facet's own refinements for its disjunctive counts.
package struct FilterGroup: Sendable {
    package var conditions: [(condition: FilterCondition, negated: Bool)] { zip(items, negations).map { ($0, $1) } }
    var items: [FilterCondition]
    var negations: [Bool]
    /// A group that is a predicate already (a geo box), with the attributes it reads.
    var raw: QueryPlan.Predicate?
    var rawAttributes: Set<String> = []

    package init(_ conditions: [(FilterCondition, Bool)]) {
        items = conditions.map(\.0)
        negations = conditions.map(\.1)
    }

    static func raw(_ p: QueryPlan.Predicate, attributes: Set<String>) -> FilterGroup {
        var g = FilterGroup([])
        g.raw = p
        g.rawAttributes = attributes
        return g
    }

    /// The attributes the group looks at.
    package var attributes: Set<String> { raw == nil ? Set(items.map(\.attribute)) : rawAttributes }

    package var predicate: QueryPlan.Predicate {
        if let raw { return raw }
        let ps = zip(items, negations).map { c, negated in negated ? QueryPlan.Predicate.not(c.predicate) : c.predicate }
        return ps.count == 1 ? ps[0] : .or(ps)
    }
}

/// The `filters` grammar, as Algolia documents it:
///
/// - `attr:value` (a facet; `value` unquoted — letters, digits, `.`, `-`,
///   `_` — or in single or double quotes with `\` escapes), `attr:lo TO hi`,
///   `attr < n` and `<=`, `=`, `!=`, `>=`, `>`; `_tags:value` or a bare
///   `value` for a tag; `attr:true`.
/// - `AND`, `OR`, `NOT` (in capitals), and parentheses.
/// - Algolia's combination rules, each an error here that names the offset:
///   an OR may not contain an AND (`(A AND B) OR C`); parentheses may not
///   wrap an AND (`(A AND (B OR C))`); `NOT` negates one filter, never a
///   group; and one OR may not mix numeric conditions with facet or tag
///   conditions (`price < 10 OR category:Book`).
package struct FilterExpressionParser {
    let text: [Character]
    var i = 0
    let parameter: String

    package init(_ text: String, parameter: String = "filters") {
        self.text = Array(text)
        self.parameter = parameter
    }

    func error(_ message: String, at position: Int? = nil) -> SearchParametersError {
        SearchParametersError(.badFilter, message, parameter: parameter, position: position ?? i)
    }

    /// The groups of an expression (empty text: no filter).
    package mutating func parse() throws(SearchParametersError) -> [FilterGroup] {
        skipSpaces()
        if i == text.count { return [] }
        var groups: [FilterGroup] = []
        var bareOr: Int?
        while true {
            skipSpaces()
            let start = i
            let group = try orGroup(topLevel: true)
            if group.items.count > 1, text[start] != "(" { bareOr = bareOr ?? start }
            groups.append(group)
            skipSpaces()
            if i == text.count { break }
            guard keyword("AND") else {
                throw error("expected AND, OR or the end of the filter, found '\(String(text[i...].prefix(12)))'")
            }
        }
        if groups.count > 1, let at = bareOr {
            throw error("an OR combined with AND needs parentheses: (A OR B) AND C", at: at)
        }
        return groups
    }

    /// `A`, `A OR B OR …`, or a parenthesized OR.
    mutating func orGroup(topLevel: Bool) throws(SearchParametersError) -> FilterGroup {
        skipSpaces()
        let start = i
        var conditions: [(FilterCondition, Bool)] = []
        if i < text.count, text[i] == "(" {
            i += 1
            let inner = try orGroup(topLevel: false)
            skipSpaces()
            if peekKeyword("AND") { throw error("parentheses may only group ORs: (A AND B) is not supported", at: i) }
            guard i < text.count, text[i] == ")" else { throw error("expected ')' to close the '(' at \(start)") }
            i += 1
            conditions = inner.conditions.map { ($0.condition, $0.negated) }
        } else {
            conditions.append(try negatable())
        }
        while true {
            skipSpaces()
            let at = i
            guard keyword("OR") else { break }
            skipSpaces()
            if i < text.count, text[i] == "(" { throw error("an OR may not contain parentheses: (A AND B) OR C is not supported", at: i) }
            _ = at
            conditions.append(try negatable())
        }
        let group = FilterGroup(conditions)
        let numeric = group.items.map(\.isNumeric)
        if numeric.contains(true), numeric.contains(false) {
            throw error("one OR may not mix numeric conditions with facet or tag conditions", at: start)
        }
        return group
    }

    mutating func negatable() throws(SearchParametersError) -> (FilterCondition, Bool) {
        skipSpaces()
        if keyword("NOT") {
            skipSpaces()
            if i < text.count, text[i] == "(" { throw error("NOT negates one filter, not a group in parentheses") }
            return (try condition(), true)
        }
        return (try condition(), false)
    }

    mutating func condition() throws(SearchParametersError) -> FilterCondition {
        skipSpaces()
        let start = i
        guard let first = try value() else { throw error("expected a filter such as attribute:value") }
        skipSpaces()
        guard i < text.count else { return .tag(first) }
        if text[i] == ":" {
            i += 1
            skipSpaces()
            let valueAt = i
            guard let v = try value() else { throw error("expected a value after '\(first):'") }
            skipSpaces()
            if keyword("TO") {
                skipSpaces()
                let hiAt = i
                guard let hi = try value() else { throw error("expected a number after TO") }
                guard let lo = Double(v) else { throw error("'\(v)' is not a number: both ends of a range must be numbers", at: valueAt) }
                guard let h = Double(hi) else { throw error("'\(hi)' is not a number: both ends of a range must be numbers", at: hiAt) }
                return .range(attribute: first, lower: lo, upper: h)
            }
            return first == "_tags" ? .tag(v) : .facet(attribute: first, value: v)
        }
        for op in ["<=", ">=", "!=", "<", ">", "="] where matches(op) {
            i += op.count
            skipSpaces()
            let numberAt = i
            guard let v = try value() else { throw error("expected a number after '\(op)'") }
            guard let n = Double(v), n.isFinite else { throw error("'\(v)' is not a number", at: numberAt) }
            return .numeric(attribute: first, op: op, value: n)
        }
        _ = start
        return .tag(first)
    }

    /// An unquoted run of letters, digits, `.`, `-`, `_`, or a quoted string.
    mutating func value() throws(SearchParametersError) -> String? {
        guard i < text.count else { return nil }
        let q = text[i]
        if q == "\"" || q == "'" {
            let start = i
            i += 1
            var out = ""
            while i < text.count, text[i] != q {
                if text[i] == "\\", i + 1 < text.count { i += 1 }
                out.append(text[i])
                i += 1
            }
            guard i < text.count else { throw error("unterminated quoted value", at: start) }
            i += 1
            return out
        }
        var out = ""
        while i < text.count, text[i].isLetter || text[i].isNumber || text[i] == "." || text[i] == "-" || text[i] == "_" {
            out.append(text[i])
            i += 1
        }
        return out.isEmpty ? nil : out
    }

    mutating func skipSpaces() { while i < text.count, text[i].isWhitespace { i += 1 } }

    func matches(_ s: String) -> Bool {
        let cs = Array(s)
        return i + cs.count <= text.count && Array(text[i..<(i + cs.count)]) == cs
    }

    func peekKeyword(_ k: String) -> Bool {
        guard matches(k) else { return false }
        let end = i + k.count
        return end == text.count || !(text[end].isLetter || text[end].isNumber || text[end] == "_")
    }

    mutating func keyword(_ k: String) -> Bool {
        guard peekKeyword(k) else { return false }
        i += k.count
        return true
    }
}

/// `facetFilters` and `numericFilters`: a string, or a list whose elements
/// are ANDed and whose inner lists are ORed.
enum FilterLists {
    static func groups(
        _ value: JSONValue, parameter: String, parseOne: (String, String) throws(SearchParametersError) -> (FilterCondition, Bool)
    ) throws(SearchParametersError) -> [FilterGroup] {
        switch value {
        case .string(let s): return [FilterGroup([try parseOne(s, parameter)])]
        case .array(let elements):
            var groups: [FilterGroup] = []
            for (k, e) in elements.enumerated() {
                switch e {
                case .string(let s): groups.append(FilterGroup([try parseOne(s, "\(parameter)[\(k)]")]))
                case .array(let inner):
                    var conditions: [(FilterCondition, Bool)] = []
                    for (m, x) in inner.enumerated() {
                        guard case .string(let s) = x else {
                            throw SearchParametersError(
                                .badFilter, "expected text: an OR group holds conditions, not lists", parameter: "\(parameter)[\(k)][\(m)]")
                        }
                        conditions.append(try parseOne(s, "\(parameter)[\(k)][\(m)]"))
                    }
                    if !conditions.isEmpty { groups.append(FilterGroup(conditions)) }
                default:
                    throw SearchParametersError(.badFilter, "expected text or a list of texts", parameter: "\(parameter)[\(k)]")
                }
            }
            return groups
        default:
            throw SearchParametersError(.badFilter, "expected text or a list", parameter: parameter)
        }
    }

    /// `attr:value`, `attr:-value` (negated), `attr:\-value` (a value starting with `-`).
    static func facet(_ s: String, _ parameter: String) throws(SearchParametersError) -> (FilterCondition, Bool) {
        guard let colon = s.firstIndex(of: ":") else {
            throw SearchParametersError(.badFilter, "'\(s)' is not attribute:value", parameter: parameter)
        }
        let attribute = String(s[..<colon]).trimmingCharacters(in: .whitespaces)
        var value = String(s[s.index(after: colon)...])
        var negated = false
        if value.hasPrefix("-") { negated = true; value.removeFirst() } else if value.hasPrefix("\\-") { value.removeFirst() }
        guard !attribute.isEmpty else { throw SearchParametersError(.badFilter, "'\(s)' names no attribute", parameter: parameter) }
        return (attribute == "_tags" ? .tag(value) : .facet(attribute: attribute, value: value), negated)
    }

    /// `attr op number` or `attr:lo TO hi`.
    static func numeric(_ s: String, _ parameter: String) throws(SearchParametersError) -> (FilterCondition, Bool) {
        var p = FilterExpressionParser(s, parameter: parameter)
        let groups = try p.parse()
        guard groups.count == 1, groups[0].items.count == 1, !groups[0].negations[0], groups[0].items[0].isNumeric else {
            throw SearchParametersError(
                .badFilter, "'\(s)' is not 'attribute op number' or 'attribute:low TO high' (no AND, OR or NOT here)", parameter: parameter)
        }
        return (groups[0].items[0], false)
    }
}
