import Foundation
import Items
import QueryPlan

/// Turns the syntax tree into the shared plan, applying the dialect's rules
/// on negation and quantifiers and the semantics of each operator (see
/// ``PredicateQueryParser`` for the table).
struct Lowering {
    let dialect: PredicateQueryParser.Dialect
    let now: Date

    func lower(_ s: Syntax) throws(PredicateQueryError) -> QueryPlan.Predicate {
        switch s {
        case .constant(let b): return b ? .all : .none
        case .and(let ps):
            var out: [QueryPlan.Predicate] = []
            for p in ps { out.append(try lower(p)) }
            return .and(out)
        case .or(let ps):
            var out: [QueryPlan.Predicate] = []
            for p in ps { out.append(try lower(p)) }
            return .or(out)
        case .not(let inner, let offset):
            if dialect == .cloudkit { try checkNegation(inner, offset) }
            return .not(try lower(inner))
        case .comparison(let c):
            return try comparison(c)
        }
    }

    /// CloudKit's `NOT` may not stand over `AND`, a tokenized search, the
    /// distance function or `BETWEEN`.
    func checkNegation(_ inner: Syntax, _ offset: Int) throws(PredicateQueryError) {
        func refuse(_ what: String) -> PredicateQueryError {
            PredicateQueryError(.negationNotSupported, "CloudKit does not allow NOT over \(what)", offset: offset)
        }
        switch inner {
        case .and: throw refuse("AND (negate each comparison instead)")
        case .comparison(let c):
            if c.op == .between { throw refuse("BETWEEN") }
            if isTokenized(c) { throw refuse("a tokenized search") }
            if case .function("distance", _, _) = c.lhs { throw refuse("distanceToLocation:fromLocation:") }
            if case .function("distance", _, _) = c.rhs { throw refuse("distanceToLocation:fromLocation:") }
        default: break
        }
    }

    func isTokenized(_ c: Comparison) -> Bool {
        if c.op == .tokenMatches { return true }
        if case .selfKey = c.lhs, c.op == .contains { return true }
        if case .function("tokenize", _, _) = c.lhs { return true }
        return false
    }

    func mismatch(_ message: String, _ offset: Int) -> PredicateQueryError {
        PredicateQueryError(.typeMismatch, message, offset: offset)
    }

    // MARK: Comparisons

    func comparison(_ c: Comparison) throws(PredicateQueryError) -> QueryPlan.Predicate {
        if let (q, offset) = c.quantifier, q == .all, dialect == .cloudkit {
            guard case .function("tokenize", _, _) = c.lhs else {
                throw PredicateQueryError(
                    .allNotSupported, "CloudKit queries do not support ALL (only ALL tokenize(…) IN allTokens); the nspredicate dialect has it",
                    offset: offset)
            }
        }
        // Tokenized search, the three spellings.
        if case .selfKey = c.lhs {
            guard c.op == .contains, case .value(.string(let text), _) = c.rhs else {
                throw mismatch("SELF only takes CONTAINS with a text: a tokenized search, self CONTAINS 'words'", c.opOffset)
            }
            return Self.tokens(text, all: false)
        }
        if case .key(let k, _) = c.lhs, k == "allTokens" {
            guard c.op == .tokenMatches, case .value(.string(let text), _) = c.rhs else {
                throw mismatch("allTokens takes TOKENMATCHES with a text: allTokens TOKENMATCHES[cdl] 'words'", c.opOffset)
            }
            return Self.tokens(text, all: true)
        }
        if c.op == .tokenMatches {
            throw mismatch("TOKENMATCHES applies to allTokens: allTokens TOKENMATCHES[cdl] 'words'", c.opOffset)
        }
        if case .function("tokenize", let args, let offset) = c.lhs {
            guard c.op == .in, case .key("allTokens", _) = c.rhs, let first = args.first, case .value(.string(let text), _) = first, args.count <= 2
            else {
                throw mismatch("tokenize takes a text and options, and is used as ANY|ALL tokenize(%@, 'cdl') IN allTokens", offset)
            }
            return Self.tokens(text, all: c.quantifier?.0 == .all)
        }
        // The distance function.
        if case .function("distance", let args, let offset) = c.lhs { return try distance(args, offset, c) }
        if case .function("distance", let args, let offset) = c.rhs, let m = c.op.mirrored {
            var swapped = c
            swapped.lhs = c.rhs; swapped.rhs = c.lhs; swapped.op = m
            return try distance(args, offset, swapped)
        }
        // A constant on the left: mirror it, or a list quantified over.
        if case .value(let v, let vOffset) = c.lhs {
            guard case .key(let k, let kOffset) = c.rhs else {
                if case .function("now", _, _) = c.rhs, let m = c.op.mirrored {
                    var swapped = c
                    swapped.lhs = c.rhs; swapped.rhs = c.lhs; swapped.op = m
                    return try comparison(swapped)
                }
                throw mismatch("a comparison needs a key on one side", vOffset)
            }
            switch c.op {
            case .in:
                // `'red' IN favoriteColors`: membership.
                return try quantified(c.quantifier, key: k, offset: kOffset) { (_) throws(PredicateQueryError) in
                    try equality(k, v, c, vOffset, membership: true)
                }
            case .contains:
                // `{'a', 'b'} CONTAINS color`: color IN {'a', 'b'}.
                guard case .array = v else { throw mismatch("CONTAINS with a constant on the left needs a list {…}", vOffset) }
                var swapped = c
                swapped.lhs = c.rhs; swapped.rhs = c.lhs; swapped.op = .in
                return try comparison(swapped)
            default:
                guard let m = c.op.mirrored else {
                    throw mismatch("\(c.op.rawValue) needs the key on its left", c.opOffset)
                }
                if case .array(let elements) = v, c.quantifier != nil {
                    // `ANY {'red', 'green'} = favoriteColor`: some element compares.
                    var parts: [QueryPlan.Predicate] = []
                    for e in elements {
                        var one = c
                        one.quantifier = nil
                        one.lhs = .key(k, offset: kOffset); one.op = m; one.rhs = .value(e, offset: vOffset)
                        parts.append(try comparison(one))
                    }
                    switch c.quantifier!.0 {
                    case .any: return .or(parts)
                    case .all: return .and(parts)
                    case .none: return .not(.or(parts))
                    }
                }
                var swapped = c
                swapped.lhs = c.rhs; swapped.rhs = c.lhs; swapped.op = m
                return try comparison(swapped)
            }
        }
        guard case .key(let k, let kOffset) = c.lhs else {
            throw mismatch("a comparison needs a key on its left", c.lhs.offset)
        }
        let value: Value
        let vOffset = c.rhs.offset
        switch c.rhs {
        case .value(let v, _): value = v
        case .function("now", _, _): value = .date(now.timeIntervalSinceReferenceDate)
        case .key(let other, _), .function(let other, _, _):
            throw mismatch("'\(k)' is compared with '\(other)': a comparison takes a key and a constant", vOffset)
        case .selfKey: throw mismatch("'\(k)' is compared with SELF: a comparison takes a key and a constant", vOffset)
        }
        if k == "recordID" { return try recordID(c, value, vOffset) }
        return try quantified(c.quantifier, key: k, offset: kOffset) { (element) throws(PredicateQueryError) in
            try leaf(k, c, value, vOffset, element: element)
        }
    }

    /// Applies `ANY`/`SOME` (some value passes), `ALL` (every value) or
    /// `NONE` (no value) to a test of one key; `make(true)` gives the test of
    /// one value, `make(false)` the comparison without a quantifier.
    func quantified(
        _ q: (Quantifier, offset: Int)?, key: String, offset: Int,
        _ make: (_ element: Bool) throws(PredicateQueryError) -> QueryPlan.Predicate
    ) throws(PredicateQueryError) -> QueryPlan.Predicate {
        guard let (quantifier, qOffset) = q else { return try make(false) }
        let p = try make(true)
        guard Self.isValueTest(p) else {
            throw mismatch("\(quantifier.rawValue) needs a test of the values themselves (==, <, BEGINSWITH, LIKE, MATCHES, IN…)", qOffset)
        }
        if p == .all || p == .none {
            // A value is never nil: `ANY k != nil` is "k has a value".
            let some: QueryPlan.Predicate = p == .all ? .exists(.named(key)) : .none
            switch quantifier {
            case .any: return some
            case .none: return .not(some)
            case .all: return p == .all ? .all : .not(.exists(.named(key)))
            }
        }
        switch quantifier {
        case .any: return Self.someValue(p)
        case .none: return .not(Self.someValue(p))
        case .all: return .every(p)
        }
    }

    /// Some value passes the one-value test `p`. The plan reads a positive
    /// test that way already; a negated one (`!=`, `NOT IN`) is read as "not
    /// every value fails", since "some value is not red" is not "no value is red".
    static func someValue(_ p: QueryPlan.Predicate) -> QueryPlan.Predicate {
        isPositive(p) ? p : .not(.every(.not(p)))
    }

    /// Whether the plan's reading of `p` over a list is "some value passes `p`".
    static func isPositive(_ p: QueryPlan.Predicate) -> Bool {
        switch p {
        case .text, .range, .textRange, .regex, .geo, .none: true
        case .or(let ps): ps.allSatisfy(isPositive)
        default: false
        }
    }

    /// Whether `p` tests values one by one (so `every` can apply it to each).
    static func isValueTest(_ p: QueryPlan.Predicate) -> Bool {
        switch p {
        case .text(let t): t.attribute.name != nil
        case .regex(let r): r.attribute.name != nil
        case .range, .textRange, .geo, .all, .none: true
        case .and(let ps), .or(let ps): ps.allSatisfy(isValueTest)
        case .not(let q): isValueTest(q)
        default: false
        }
    }

    func textOptions(_ c: Comparison) -> TextOptions {
        var o = TextOptions()
        if c.options.contains("c") { o.insert(.caseInsensitive) }
        if c.options.contains("d") { o.insert(.diacriticInsensitive) }
        return o
    }

    /// The comparison of `k` with `value`; with `element`, of one value of
    /// `k` (under a quantifier), which is never nil.
    func leaf(_ k: String, _ c: Comparison, _ value: Value, _ vOffset: Int, element: Bool = false) throws(PredicateQueryError) -> QueryPlan.Predicate
    {
        switch c.op {
        case .eq:
            if value == .null, element { return .none }
            return try equality(k, value, c, vOffset, membership: false)
        case .ne:
            if value == .null { return element ? .all : .exists(.named(k)) }
            return .not(try equality(k, value, c, vOffset, membership: false))
        case .lt, .le, .gt, .ge:
            let inclusive = c.op == .le || c.op == .ge
            let below = c.op == .lt || c.op == .le
            return try ordering(k, lower: below ? nil : (value, inclusive), upper: below ? (value, inclusive) : nil, c, vOffset)
        case .between:
            guard case .array(let ends) = value, ends.count == 2 else {
                throw mismatch("BETWEEN takes a list of two values, {low, high}", vOffset)
            }
            return try ordering(k, lower: (ends[0], true), upper: (ends[1], true), c, vOffset, between: true)
        case .beginsWith, .endsWith:
            guard case .string(let s) = value else { throw mismatch("\(c.op.rawValue) takes a text, not \(value.kindName)", vOffset) }
            let parts: [TextPattern.Part] = c.op == .beginsWith ? [.literal(s), .anyRun] : [.anyRun, .literal(s)]
            return .text(TextTest(attribute: .named(k), pattern: TextPattern(parts: parts), options: textOptions(c)))
        case .contains:
            if dialect == .nspredicate, case .string(let s) = value {
                // NSPredicate's CONTAINS on text is a substring test.
                return .text(TextTest(attribute: .named(k), pattern: TextPattern(parts: [.anyRun, .literal(s), .anyRun]), options: textOptions(c)))
            }
            if case .array = value { throw mismatch("CONTAINS takes one value; to test several, write key IN {…}", vOffset) }
            return try equality(k, value, c, vOffset, membership: true)
        case .in:
            guard case .array(let elements) = value else {
                throw mismatch("IN takes a list {…} on its right (or a key: 'value' IN key)", vOffset)
            }
            var parts: [QueryPlan.Predicate] = []
            for e in elements { parts.append(try equality(k, e, c, vOffset, membership: true)) }
            return .or(parts)
        case .like:
            guard case .string(let s) = value else { throw mismatch("LIKE takes a text pattern, not \(value.kindName)", vOffset) }
            return Self.like(k, s, textOptions(c))
        case .matches:
            guard case .string(let s) = value else { throw mismatch("MATCHES takes a regular expression as text, not \(value.kindName)", vOffset) }
            let test = RegexTest(attribute: .named(k), pattern: s, options: textOptions(c))
            do throws(RegexMatcher.CompileError) { _ = try RegexMatcher(test) } catch {
                throw PredicateQueryError(.badRegex, error.description, offset: vOffset)
            }
            return .regex(test)
        case .tokenMatches:
            throw mismatch("TOKENMATCHES applies to allTokens", c.opOffset)
        }
    }

    /// `key == value`. Text: whole value, case-insensitive in CloudKit, as
    /// the options say in NSPredicate. Numbers, booleans and dates: the exact
    /// number. `nil`: the key is absent. A reference: the record name, exactly.
    func equality(_ k: String, _ value: Value, _ c: Comparison, _ vOffset: Int, membership: Bool) throws(PredicateQueryError) -> QueryPlan.Predicate {
        switch value {
        case .string(let s):
            let options: TextOptions = dialect == .cloudkit ? [.caseInsensitive] : textOptions(c)
            let test = QueryPlan.Predicate.text(TextTest(attribute: .named(k), pattern: TextPattern(literal: s), options: options))
            // The plan reads a number as its canonical text ("42"); NSPredicate's
            // -isEqual: never finds a text equal to a number. (An item's list
            // holds one kind of value, so "no number" is per value too.)
            if dialect == .nspredicate, Double(s) != nil { return .and([test, .not(.range(RangeTest(attribute: k)))]) }
            return test
        case .reference(let name):
            return .text(TextTest(attribute: .named(k), pattern: TextPattern(literal: name), options: []))
        case .number(let d), .date(let d):
            return .range(RangeTest(attribute: k, lower: Bound(d, inclusive: true), upper: Bound(d, inclusive: true)))
        case .bool(let b):
            return .range(RangeTest(attribute: k, lower: Bound(b ? 1 : 0, inclusive: true), upper: Bound(b ? 1 : 0, inclusive: true)))
        case .null:
            if membership { throw mismatch("a list cannot hold nil", vOffset) }
            return .not(.exists(.named(k)))
        case .location:
            throw mismatch("locations are compared with distanceToLocation:fromLocation:(\(k), %@) < km", vOffset)
        case .array:
            throw mismatch("'\(k)' \(c.op.rawValue) a list: use IN to test membership", vOffset)
        }
    }

    /// `k` against one or two bounds (`<`, `<=`, `>`, `>=`, `BETWEEN`), as
    /// Foundation's `compare:` orders like with like. Text bounds order text
    /// values (``TextRangeTest``), in CloudKit ignoring case as its `==` does
    /// (so `BETWEEN {v, v}` finds what `== v` finds), in nspredicate as the
    /// `[c]` and `[d]` of `<`, `<=`, `>`, `>=` say (`BETWEEN` takes no
    /// options: Foundation's compares with plain `compare:`). When every
    /// text bound is an ISO-8601 date they order dates too. Numbers, booleans and dates order
    /// numbers and dates. `BETWEEN` takes its bounds in either order, as
    /// Foundation's does; a text and a number as its bounds are refused, as
    /// no value orders against both.
    func ordering(
        _ k: String, lower: (Value, Bool)?, upper: (Value, Bool)?, _ c: Comparison, _ vOffset: Int,
        between: Bool = false
    ) throws(PredicateQueryError) -> QueryPlan.Predicate {
        let ends = [lower?.0, upper?.0].compactMap { $0 }
        let texts = ends.compactMap { if case .string(let s) = $0 { s } else { nil } }
        if texts.isEmpty {
            func bound(_ end: (Value, Bool)?) throws(PredicateQueryError) -> Bound? {
                guard let (v, inclusive) = end else { return nil }
                return Bound(try orderable(v, c, vOffset), inclusive: inclusive)
            }
            var r = RangeTest(attribute: k, lower: try bound(lower), upper: try bound(upper))
            if between, let l = r.lower, let u = r.upper, l.value > u.value { (r.lower, r.upper) = (u, l) }
            return .range(r)
        }
        guard texts.count == ends.count else {
            let other = ends.first { if case .string = $0 { false } else { true } }!
            throw mismatch(
                "BETWEEN's bounds are a text and \(other.kindName): a value is ordered against bounds of its own kind, so none lies between these",
                vOffset)
        }
        func textBound(_ end: (Value, Bool)?) -> TextBound? {
            guard let (value, inclusive) = end, case .string(let s) = value else { return nil }
            return TextBound(s, inclusive: inclusive)
        }
        let options: TextOptions = dialect == .cloudkit ? [.caseInsensitive] : textOptions(c)
        var test = TextRangeTest(attribute: k, lower: textBound(lower), upper: textBound(upper), options: options)
        if between, let l = test.lower, let u = test.upper, test.compare(l.value, u.value) == .orderedDescending {
            (test.lower, test.upper) = (u, l)
        }
        let dates = texts.compactMap { ISODate.parse($0) }
        guard dates.count == texts.count else { return .textRange(test) }
        func dateBound(_ end: TextBound?) -> Bound? {
            end.flatMap { ISODate.parse($0.value) }.map { Bound($0.timeIntervalSinceReferenceDate, inclusive: true) }
        }
        var r = RangeTest(attribute: k, lower: dateBound(test.lower), upper: dateBound(test.upper))
        r.lower?.inclusive = test.lower?.inclusive ?? true
        r.upper?.inclusive = test.upper?.inclusive ?? true
        if between, let l = r.lower, let u = r.upper, l.value > u.value { (r.lower, r.upper) = (u, l) }
        return .or([.range(r), .textRange(test)])
    }

    func orderable(_ value: Value, _ c: Comparison, _ vOffset: Int) throws(PredicateQueryError) -> Double {
        switch value {
        case .number(let d), .date(let d): return d
        case .bool(let b): return b ? 1 : 0
        default:
            throw mismatch("\(c.op.rawValue) compares numbers, dates and text, not \(value.kindName)", vOffset)
        }
    }

    /// `recordID == %@` / `recordID IN {…}`: the item's unique identifier.
    func recordID(_ c: Comparison, _ value: Value, _ vOffset: Int) throws(PredicateQueryError) -> QueryPlan.Predicate {
        func name(_ v: Value) throws(PredicateQueryError) -> String {
            switch v {
            case .string(let s), .reference(let s): return s
            default: throw mismatch("recordID compares with a record identifier (text or {recordName}), not \(v.kindName)", vOffset)
            }
        }
        switch c.op {
        case .eq: return .identifier([try name(value)])
        case .ne: return .not(.identifier([try name(value)]))
        case .in:
            guard case .array(let elements) = value else { throw mismatch("IN takes a list {…}", vOffset) }
            var names: [String] = []
            for e in elements { names.append(try name(e)) }
            return .identifier(names)
        default: throw mismatch("recordID takes ==, != or IN", c.opOffset)
        }
    }

    /// `distanceToLocation:fromLocation:(key, location) < km`.
    func distance(_ args: [Operand], _ offset: Int, _ c: Comparison) throws(PredicateQueryError) -> QueryPlan.Predicate {
        guard args.count == 2, case .key(let k, _) = args[0], case .value(.location(let from), _) = args[1] else {
            throw mismatch("distanceToLocation:fromLocation: takes a location key and a location: (location, %@)", offset)
        }
        guard c.op == .lt || c.op == .le else {
            throw mismatch("the distance is compared with < or <= (a radius in kilometres)", c.opOffset)
        }
        guard case .value(let v, let vOffset) = c.rhs else { throw mismatch("the distance is compared with a number of kilometres", c.rhs.offset) }
        guard case .number(let km) = v, km >= 0 else { throw mismatch("the distance is compared with a number of kilometres, zero or more", vOffset) }
        return .geo(GeoTest(attribute: k, area: .circle(center: from, radius: km * 1000)))
    }

    // MARK: Tokens and patterns

    /// CloudKit's stop words: never searched for.
    static let stopWords: Set<String> = [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
        "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
        "will", "with",
    ]

    /// A tokenized search over every searchable text attribute, case- and
    /// diacritic-insensitive: any of the words (or all of them), stop words
    /// left out. Nothing left to search for matches nothing.
    static func tokens(_ text: String, all: Bool) -> QueryPlan.Predicate {
        var seen = Set<String>()
        var tests: [QueryPlan.Predicate] = []
        for word in Words.split(text, camelCase: false) {
            let folded = Fold.fold(String(word))
            guard !stopWords.contains(folded), seen.insert(folded).inserted else { continue }
            tests.append(
                .text(
                    TextTest(
                        attribute: .allText, pattern: TextPattern(literal: String(word)),
                        options: [.caseInsensitive, .diacriticInsensitive, .tokenized])))
        }
        if tests.isEmpty { return .none }
        return all ? .and(tests) : .or(tests)
    }

    /// LIKE: `*` any run, `?` one character, `\` escapes. Without `?` it is a
    /// text pattern the indexes serve; with one, an anchored regular expression.
    static func like(_ k: String, _ s: String, _ options: TextOptions) -> QueryPlan.Predicate {
        var parts: [TextPattern.Part] = []
        var regex = ""
        var literal = ""
        var hasSingle = false
        var escaped = false
        for ch in s {
            if escaped {
                literal.append(ch); regex += NSRegularExpression.escapedPattern(for: String(ch)); escaped = false
            } else if ch == "\\" {
                escaped = true
            } else if ch == "*" {
                parts.append(.literal(literal)); literal = ""; parts.append(.anyRun); regex += ".*"
            } else if ch == "?" {
                hasSingle = true; regex += "."
            } else {
                literal.append(ch); regex += NSRegularExpression.escapedPattern(for: String(ch))
            }
        }
        if escaped { literal.append("\\"); regex += "\\\\" }
        parts.append(.literal(literal))
        if hasSingle {
            // `(?s)`: `?` and `*` match line breaks too, as LIKE's wildcards do.
            return .regex(RegexTest(attribute: .named(k), pattern: "(?s)" + regex, options: options))
        }
        return .text(TextTest(attribute: .named(k), pattern: TextPattern(parts: parts), options: options))
    }
}
