import Foundation
import Items
import QueryPlan
import SpotlightQuery
import Testing

/// Foundation has a `Predicate` too; here the name means the plan's.
typealias Predicate = QueryPlan.Predicate

/// One attribute value of a test item.
enum V: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral
{
    case text(String)
    case number(Double)
    case list([V])

    init(stringLiteral s: String) { self = .text(s) }
    init(integerLiteral n: Int) { self = .number(Double(n)) }
    init(floatLiteral d: Double) { self = .number(d) }
    init(booleanLiteral b: Bool) { self = .number(b ? 1 : 0) }
    init(arrayLiteral elements: V...) { self = .list(elements) }

    /// A date, stored as the plan stores dates: seconds since 2001-01-01 UTC.
    static func date(_ iso: String) -> V { .number(seconds(iso)) }

    var elements: [V] {
        if case .list(let l) = self { return l.flatMap(\.elements) }
        return [self]
    }
}

/// A small in-memory item, enough to walk a parsed predicate over.
struct TestItem: Sendable {
    var name: String
    var attributes: [String: V]
    init(_ name: String, _ attributes: [String: V]) {
        self.name = name
        self.attributes = attributes
    }

    func values(_ selector: AttributeSelector) -> [V] {
        switch selector {
        case .named(let n): return attributes[n]?.elements ?? []
        case .allText:
            // The store's reading of `*`: every text value of the item.
            return attributes.values.flatMap(\.elements).filter { if case .text = $0 { true } else { false } }
        }
    }
}

/// Evaluates a plan over one item with the plan's own pieces: `TextMatcher`
/// for text `RangeTest.contains` and `TextRangeTest.contains` for ranges. Only the boolean structure
/// is walked here; no matching is reimplemented.
func evaluate(_ p: Predicate, _ item: TestItem) -> Bool {
    switch p {
    case .all: return true
    case .none: return false
    case .and(let ps): return ps.allSatisfy { evaluate($0, item) }
    case .or(let ps): return ps.contains { evaluate($0, item) }
    case .not(let q): return !evaluate(q, item)
    case .exists(let s): return !item.values(s).isEmpty
    case .text(let t):
        let matcher = TextMatcher(t)
        return item.values(t.attribute).contains { v in
            switch v {
            case .text(let s): matcher.matches(s)
            case .number(let d): matcher.matches(canonicalText(d))
            case .list: false
            }
        }
    case .range(let r):
        return item.values(.named(r.attribute)).contains { v in
            if case .number(let d) = v { r.contains(d) } else { false }
        }
    case .textRange(let r):
        return item.values(.named(r.attribute)).contains { v in
            if case .text(let s) = v { r.contains(s) } else { false }
        }
    case .domain, .exactDomain, .geo, .regex, .identifier, .every: return false
    }
}

/// 2026-11-22T15:30:00Z, a Sunday afternoon: the clock of every `$time` test.
let fixedNow = ISODate.parse("2026-11-22T15:30:00Z")!
let parser = SpotlightQueryParser(now: fixedNow)

func seconds(_ iso: String) -> Double {
    guard let d = ISODate.parse(iso) else { fatalError("bad test date \(iso)") }
    return d.timeIntervalSinceReferenceDate
}

/// The names of the items that a query matches.
func matching(
    _ query: String, _ items: [TestItem], using p: SpotlightQueryParser = parser,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Set<String> {
    do {
        let predicate = try p.parse(query)
        return Set(items.filter { evaluate(predicate, $0) }.map(\.name))
    } catch {
        Issue.record("\(query): \(error)", sourceLocation: sourceLocation)
        return []
    }
}

/// One text attribute per item, named by its own value: handy for tables of
/// strings that must or must not match.
func titled(_ attribute: String, _ values: [String]) -> [TestItem] {
    values.map { TestItem($0, [attribute: .text($0)]) }
}

/// Parses or records the error; for checking the plan's shape.
func plan(
    _ query: String, using p: SpotlightQueryParser = parser,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Predicate? {
    do { return try p.parse(query) } catch {
        Issue.record("\(query): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Parses, expecting failure; returns the error.
func failure(
    _ query: String, using p: SpotlightQueryParser = parser,
    sourceLocation: SourceLocation = #_sourceLocation
) -> SpotlightQueryError? {
    do {
        let p = try p.parse(query)
        Issue.record("\(query) parsed as \(p), expected an error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

func text(_ attribute: String, _ wire: String, _ options: TextOptions = []) -> Predicate {
    .text(TextTest(attribute: .named(attribute), pattern: TextPattern(wire: wire), options: options))
}

func range(_ attribute: String, _ lower: Bound?, _ upper: Bound?) -> Predicate {
    .range(RangeTest(attribute: attribute, lower: lower, upper: upper))
}
