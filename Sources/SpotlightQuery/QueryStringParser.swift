import Foundation
import Items
import QueryPlan

/// The recursive-descent parser behind ``SpotlightQueryParser``.
///
/// It reads characters directly rather than a token stream because the
/// language is context sensitive: `cd` after a closing quote is a pair of
/// modifiers, `*` is an attribute at the start of a comparison and a wildcard
/// in a value, and an unquoted value is a word that only ends at white space
/// or an operator. Offsets are in `Character`s, as a person counts them.
struct QueryStringParser {
    let chars: [Character]
    var pos = 0
    let time: TimeResolver
    var depth = 0

    /// Parentheses and `!` nest at most this deep, so that hostile input
    /// cannot exhaust the stack of the thread that parses it.
    static let maximumDepth = 100

    init(text: String, time: TimeResolver) {
        self.chars = Array(text)
        self.time = time
    }

    // MARK: - Pieces of a comparison

    enum Operator: String {
        case equal = "==", notEqual = "!=", less = "<", greater = ">", lessOrEqual = "<=", greaterOrEqual = ">="

        var isOrdering: Bool { self != .equal && self != .notEqual }
    }

    struct Attribute {
        var selector: AttributeSelector
        /// As written, for messages.
        var spelling: String
        var offset: Int
    }

    enum ValueKind {
        /// A quoted string or an unquoted plain word.
        case text(TextPattern)
        /// An unquoted number, or `true`/`false`; `word` is its spelling.
        case number(Double, word: String)
        /// A `$time` expression (`word` nil) or an unquoted ISO-8601 date.
        case date(TimeValue, word: String?)
    }

    struct Value {
        var kind: ValueKind
        var offset: Int
        var modifiers: TextOptions
        /// As written, for messages.
        var spelling: String
    }

    // MARK: - Errors

    func error(_ code: SpotlightQueryError.Code, _ message: String, at offset: Int) -> SpotlightQueryError {
        let offset = min(max(offset, 0), chars.count)
        var line = 1, column = 1
        for ch in chars[0..<offset] {
            if ch.isNewline { line += 1; column = 1 } else { column += 1 }
        }
        return SpotlightQueryError(code, message, offset: offset, line: line, column: column)
    }

    /// Names what stands at `p`, for "found …" in messages.
    func found(at p: Int) -> String {
        guard p < chars.count else { return "end of query" }
        let c = chars[p]
        if p + 1 < chars.count {
            let two = String([c, chars[p + 1]])
            if ["&&", "||", "==", "!=", "<=", ">="].contains(two) { return "'\(two)'" }
        }
        var end = p + 1
        if c == "\"" || c == "'" {
            while end < chars.count, chars[end] != c { end += 1 }
            end = min(end + 1, chars.count)
        } else if Self.isWordish(c) {
            while end < chars.count, Self.isWordish(chars[end]) { end += 1 }
        }
        if c.isNewline { return "a line break" }
        var text = String(chars[p..<min(end, p + 24)])
        if end > p + 24 { text += "…" }
        return "'\(text)'"
    }

    static func isWordish(_ c: Character) -> Bool {
        c.isLetter || c.isNumber || c == "_" || c == "." || c == "-" || c == "$" || c == "*"
    }

    // MARK: - Scanning helpers

    mutating func skipWhitespace() {
        while pos < chars.count, chars[pos].isWhitespace { pos += 1 }
    }

    func peek(_ s: String, at p: Int? = nil) -> Bool {
        var i = p ?? pos
        for ch in s {
            guard i < chars.count, chars[i] == ch else { return false }
            i += 1
        }
        return true
    }

    mutating func enter(at offset: Int) throws(SpotlightQueryError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw error(.nestingTooDeep, "parentheses and '!' nest deeper than \(Self.maximumDepth) levels", at: offset)
        }
    }

    mutating func leave() { depth -= 1 }

    static func isNameStart(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c == "_")
    }

    static func isNameChar(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "." || c == "-")
    }

    // MARK: - Boolean structure

    mutating func parseQuery() throws(SpotlightQueryError) -> Predicate {
        skipWhitespace()
        guard pos < chars.count else {
            throw error(.emptyQuery, "the query is empty; expected a comparison such as title == \"Window\"", at: 0)
        }
        let predicate = try parseOr(after: nil)
        skipWhitespace()
        if pos < chars.count {
            if chars[pos] == ")" {
                throw error(.unbalancedParentheses, "')' has no matching '('", at: pos)
            }
            throw error(.unexpectedToken, "expected '&&', '||' or end of query, found \(found(at: pos))", at: pos)
        }
        return predicate
    }

    mutating func parseOr(after: String?) throws(SpotlightQueryError) -> Predicate {
        var terms = [try parseAnd(after: after)]
        while true {
            skipWhitespace()
            guard peek("||") else { break }
            pos += 2
            terms.append(try parseAnd(after: "'||'"))
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    mutating func parseAnd(after: String?) throws(SpotlightQueryError) -> Predicate {
        var terms = [try parseUnary(after: after)]
        while true {
            skipWhitespace()
            guard peek("&&") else { break }
            pos += 2
            terms.append(try parseUnary(after: "'&&'"))
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    mutating func parseUnary(after: String?) throws(SpotlightQueryError) -> Predicate {
        skipWhitespace()
        if peek("!"), !peek("!=") {
            try enter(at: pos)
            pos += 1
            let inner = try parseUnary(after: "'!'")
            leave()
            return .not(inner)
        }
        return try parsePrimary(after: after)
    }

    mutating func parsePrimary(after: String?) throws(SpotlightQueryError) -> Predicate {
        skipWhitespace()
        let afterText = after.map { " after \($0)" } ?? ""
        guard pos < chars.count else {
            throw error(.expectedAttribute, "expected a comparison\(afterText), found end of query", at: pos)
        }
        if chars[pos] == "(" {
            let open = pos
            try enter(at: open)
            pos += 1
            let inner = try parseOr(after: "'('")
            skipWhitespace()
            guard pos < chars.count else {
                throw error(.unbalancedParentheses, "'(' is never closed; expected ')' before end of query", at: open)
            }
            guard chars[pos] == ")" else {
                throw error(.unexpectedToken, "expected '&&', '||' or ')', found \(found(at: pos))", at: pos)
            }
            pos += 1
            leave()
            return inner
        }
        let attribute = try parseAttribute(after: after, context: "a comparison")
        if attribute.spelling.lowercased() == "inrange" {
            let save = pos
            skipWhitespace()
            if peek("(") { return try parseInRange() }
            pos = save
        }
        let op = try parseOperator(after: attribute)
        let opText = "'\(op.spelling)'"
        let bracketed = try parseBracketModifiers()
        var value = try parseValue(after: opText)
        value.modifiers.formUnion(bracketed)
        return try lower(attribute, op.0, opText, value)
    }

    // MARK: - Comparisons

    mutating func parseAttribute(after: String?, context: String) throws(SpotlightQueryError) -> Attribute {
        skipWhitespace()
        let start = pos
        let afterText = after.map { " after \($0)" } ?? ""
        guard pos < chars.count else {
            throw error(.expectedAttribute, "expected \(context)\(afterText), found end of query", at: pos)
        }
        if chars[pos] == "*" {
            pos += 1
            if peek("*") { pos += 1 }
            return Attribute(selector: .allText, spelling: String(chars[start..<pos]), offset: start)
        }
        guard Self.isNameStart(chars[pos]) else {
            let what = context == "a comparison" ? "a comparison (an attribute name, '!' or '(')" : context
            throw error(.expectedAttribute, "expected \(what)\(afterText), found \(found(at: pos))", at: pos)
        }
        while pos < chars.count, Self.isNameChar(chars[pos]) { pos += 1 }
        let name = String(chars[start..<pos])
        return Attribute(selector: .named(MetadataKeys.canonical(name)), spelling: name, offset: start)
    }

    mutating func parseOperator(after attribute: Attribute) throws(SpotlightQueryError) -> (Operator, spelling: String) {
        skipWhitespace()
        let table: [(String, Operator)] = [
            ("==", .equal), ("!=", .notEqual), ("<=", .lessOrEqual), (">=", .greaterOrEqual),
            ("<", .less), (">", .greater), ("=", .equal),
        ]
        for (text, op) in table where peek(text) {
            pos += text.count
            return (op, text)
        }
        throw error(
            .expectedOperator,
            "expected an operator (==, !=, <, >, <=, >=) after '\(attribute.spelling)', found \(found(at: pos))",
            at: pos)
    }

    /// `==[cd]`: the `mdfind` placement of modifiers.
    mutating func parseBracketModifiers() throws(SpotlightQueryError) -> TextOptions {
        skipWhitespace()
        guard peek("[") else { return [] }
        let open = pos
        pos += 1
        var options = TextOptions()
        while true {
            guard pos < chars.count else {
                throw error(.badModifier, "expected ']' to close the modifiers opened at \(open), found end of query", at: pos)
            }
            let c = chars[pos]
            if c == "]" { pos += 1; return options }
            guard c.isLetter else {
                throw error(.badModifier, "expected a modifier (c, d, w or t) or ']', found \(found(at: pos))", at: pos)
            }
            guard let o = TextOptions(letters: String(c)) else {
                throw error(.badModifier, "unknown modifier '\(c)' at \(pos); expected c, d, w or t", at: pos)
            }
            options.formUnion(o)
            pos += 1
        }
    }

    /// Modifier letters glued to the end of a quoted value: `"Window"wc`.
    mutating func parseTrailingModifiers() throws(SpotlightQueryError) -> TextOptions {
        var options = TextOptions()
        while pos < chars.count, chars[pos].isLetter {
            guard let o = TextOptions(letters: String(chars[pos])) else {
                throw error(.badModifier, "unknown modifier '\(chars[pos])' at \(pos); expected c, d, w or t", at: pos)
            }
            options.formUnion(o)
            pos += 1
        }
        return options
    }

    // MARK: - Values

    mutating func parseValue(after: String) throws(SpotlightQueryError) -> Value {
        skipWhitespace()
        let start = pos
        guard pos < chars.count else {
            throw error(.expectedValue, "expected a value after \(after), found end of query", at: pos)
        }
        let c = chars[pos]
        if c == "\"" || c == "'" {
            let pattern = try parseQuotedString(wildcards: true)
            let spelling = String(chars[start..<pos])
            let modifiers = try parseTrailingModifiers()
            return Value(kind: .text(pattern), offset: start, modifiers: modifiers, spelling: spelling)
        }
        if c == "$" {
            let t = try parseTimeExpression()
            return Value(kind: .date(t, word: nil), offset: start, modifiers: [], spelling: String(chars[start..<pos]))
        }
        // A value never starts with `!`, so that `title =! 3` reads as the typo it is.
        if isWordEnd(at: pos) || c == "!" {
            throw error(.expectedValue, "expected a value after \(after), found \(found(at: pos))", at: pos)
        }
        return parseWord()
    }

    /// Where an unquoted word stops: white space, a parenthesis, a comma, a
    /// quote, a comparison operator, `&&`, `||` or a bracket.
    func isWordEnd(at p: Int) -> Bool {
        guard p < chars.count else { return true }
        let c = chars[p]
        if c.isWhitespace { return true }
        switch c {
        case "(", ")", ",", "\"", "'", "=", "<", ">", "[", "]": return true
        case "&": return peek("&&", at: p)
        case "|": return peek("||", at: p)
        case "!": return peek("!=", at: p)
        default: return false
        }
    }

    /// An unquoted value; typed when it reads as a number, a boolean or an
    /// ISO-8601 date and has no wildcard or escape.
    mutating func parseWord() -> Value {
        let start = pos
        var parts: [TextPattern.Part] = []
        var literal = ""
        var plain = true
        while !isWordEnd(at: pos) {
            let c = chars[pos]
            if c == "\\", pos + 1 < chars.count {
                literal.append(chars[pos + 1])
                plain = false
                pos += 2
                continue
            }
            if c == "*" {
                parts.append(.literal(literal))
                literal = ""
                parts.append(.anyRun)
                plain = false
            } else {
                literal.append(c)
            }
            pos += 1
        }
        parts.append(.literal(literal))
        let spelling = String(chars[start..<pos])
        if plain {
            switch literal.lowercased() {
            case "true": return Value(kind: .number(1, word: literal), offset: start, modifiers: [], spelling: spelling)
            case "false": return Value(kind: .number(0, word: literal), offset: start, modifiers: [], spelling: spelling)
            default: break
            }
            if let n = Self.parseNumber(literal) {
                return Value(kind: .number(n, word: literal), offset: start, modifiers: [], spelling: spelling)
            }
            if let d = ISODate.parse(literal) {
                return Value(
                    kind: .date(.instant(d.timeIntervalSinceReferenceDate), word: literal),
                    offset: start, modifiers: [], spelling: spelling)
            }
        }
        return Value(kind: .text(TextPattern(parts: parts)), offset: start, modifiers: [], spelling: spelling)
    }

    /// A quoted string, the opening quote at `pos`. With `wildcards`, an
    /// unescaped `*` is a wildcard; without, every character is literal.
    mutating func parseQuotedString(wildcards: Bool) throws(SpotlightQueryError) -> TextPattern {
        let open = pos
        let quote = chars[pos]
        pos += 1
        var parts: [TextPattern.Part] = []
        var literal = ""
        while pos < chars.count {
            let c = chars[pos]
            if c == quote {
                pos += 1
                parts.append(.literal(literal))
                return TextPattern(parts: parts)
            }
            if c == "\\" {
                guard pos + 1 < chars.count else { break }
                literal.append(chars[pos + 1])
                pos += 2
                continue
            }
            if c == "*" && wildcards {
                parts.append(.literal(literal))
                literal = ""
                parts.append(.anyRun)
            } else {
                literal.append(c)
            }
            pos += 1
        }
        throw error(.unterminatedString, "the string opened by \(quote) at \(open) is never closed; expected \(quote) before end of query", at: open)
    }

    /// Apple's number notations: integer, fixed point, exponent, and `0x` hex,
    /// each with an optional sign. Nil for anything else, including `inf` and `nan`.
    static func parseNumber(_ s: String) -> Double? {
        var u = Substring(s).utf8[...]
        var sign = 1.0
        if let f = u.first, f == UInt8(ascii: "-") || f == UInt8(ascii: "+") {
            if f == UInt8(ascii: "-") { sign = -1 }
            u = u.dropFirst()
        }
        guard !u.isEmpty else { return nil }
        if u.count > 2, u.first == UInt8(ascii: "0"),
            u.dropFirst().first == UInt8(ascii: "x") || u.dropFirst().first == UInt8(ascii: "X")
        {
            var v = 0.0
            for c in u.dropFirst(2) {
                let d: Int
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = Int(c) - 48
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = Int(c) - 87
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = Int(c) - 55
                default: return nil
                }
                v = v * 16 + Double(d)
            }
            return v.isFinite ? sign * v : nil
        }
        // digits* ['.' digits*] [(e|E) [+|-] digits+], at least one mantissa digit.
        var i = u.startIndex
        var mantissaDigits = 0
        func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
        while i < u.endIndex, isDigit(u[i]) { mantissaDigits += 1; i = u.index(after: i) }
        if i < u.endIndex, u[i] == UInt8(ascii: ".") {
            i = u.index(after: i)
            while i < u.endIndex, isDigit(u[i]) { mantissaDigits += 1; i = u.index(after: i) }
        }
        guard mantissaDigits > 0 else { return nil }
        if i < u.endIndex, u[i] == UInt8(ascii: "e") || u[i] == UInt8(ascii: "E") {
            i = u.index(after: i)
            if i < u.endIndex, u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-") { i = u.index(after: i) }
            var exponentDigits = 0
            while i < u.endIndex, isDigit(u[i]) { exponentDigits += 1; i = u.index(after: i) }
            guard exponentDigits > 0 else { return nil }
        }
        guard i == u.endIndex else { return nil }
        var text = String(decoding: u, as: UTF8.self)
        if text.hasPrefix(".") { text = "0" + text }
        text = text.replacingOccurrences(of: ".e", with: ".0e").replacingOccurrences(of: ".E", with: ".0E")
        if text.hasSuffix(".") { text += "0" }
        guard let v = Double(text), v.isFinite else { return nil }
        return sign * v
    }

    // MARK: - $time

    mutating func parseTimeExpression() throws(SpotlightQueryError) -> TimeValue {
        let start = pos
        pos += 1  // $
        while pos < chars.count, Self.isNameChar(chars[pos]) { pos += 1 }
        let name = String(chars[(start + 1)..<pos])
        let known = TimeResolver.allNames.map { "$time.\($0)" }.joined(separator: ", ")
        guard name.lowercased().hasPrefix("time.") else {
            throw error(.badTimeExpression, "unknown variable '$\(name)'; expected one of \(known)", at: start)
        }
        let variable = String(name.dropFirst(5)).lowercased()
        switch variable {
        case "iso":
            guard peek("(") else {
                throw error(.badTimeExpression, "expected '(' after '$\(name)', found \(found(at: pos))", at: pos)
            }
            pos += 1
            skipWhitespace()
            let argumentStart = pos
            let text: String
            if pos < chars.count, chars[pos] == "\"" || chars[pos] == "'" {
                text = try parseQuotedString(wildcards: false).literals.joined()
                skipWhitespace()
            } else {
                // Up to the `)`, so that `YYYY-MM-DD hh:mm:ss` (a space for the T) reads whole.
                while pos < chars.count, chars[pos] != ")" { pos += 1 }
                text = String(chars[argumentStart..<pos]).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard peek(")") else {
                throw error(.badTimeExpression, "expected ')' to close '$\(name)(', found \(found(at: pos))", at: pos)
            }
            pos += 1
            guard let date = ISODate.parse(text) else {
                throw error(
                    .badTimeExpression,
                    "'\(text)' is not an ISO-8601 date (such as 2026-11-01 or 2026-11-01T12:00:00Z)",
                    at: argumentStart)
            }
            return .instant(date.timeIntervalSinceReferenceDate)
        case "now":
            let seconds = try parseOffset(of: name, unit: "seconds", whole: false)
            return time.now(offset: seconds)
        default:
            guard let v = TimeResolver.variables[variable] else {
                throw error(.badTimeExpression, "unknown time variable '$\(name)'; expected one of \(known)", at: start)
            }
            let unit =
                switch v.unit {
                case .day: "days";
                case .week: "weeks";
                case .month: "months";
                case .year: "years"
                }
            let n = try parseOffset(of: name, unit: unit, whole: true)
            guard let period = time.period(v, offset: Int(n)) else {
                throw error(.badTimeExpression, "'$\(name)' with offset \(Int(n)) is outside the calendar", at: start)
            }
            return period
        }
    }

    /// The optional `(N)` after a `$time` variable; 0 when absent.
    mutating func parseOffset(of name: String, unit: String, whole: Bool) throws(SpotlightQueryError) -> Double {
        guard peek("(") else { return 0 }
        pos += 1
        skipWhitespace()
        let argumentStart = pos
        while pos < chars.count, chars[pos] != ")" { pos += 1 }
        let text = String(chars[argumentStart..<pos]).trimmingCharacters(in: .whitespacesAndNewlines)
        guard peek(")") else {
            throw error(.badTimeExpression, "expected ')' to close '$\(name)(', found \(found(at: pos))", at: pos)
        }
        pos += 1
        if text.isEmpty { return 0 }
        let limit = Double(TimeResolver.maximumOffset)
        if whole {
            guard let n = Int(text), (-TimeResolver.maximumOffset...TimeResolver.maximumOffset).contains(n) else {
                throw error(
                    .badTimeExpression,
                    "expected a whole number of \(unit) (at most \(TimeResolver.maximumOffset) either way) in '$\(name)(…)', found '\(text)'",
                    at: argumentStart)
            }
            return Double(n)
        }
        guard let n = Self.parseNumber(text), abs(n) <= limit * 366 * 86_400 else {
            throw error(.badTimeExpression, "expected a number of \(unit) in '$\(name)(…)', found '\(text)'", at: argumentStart)
        }
        return n
    }

    // MARK: - InRange

    mutating func parseInRange() throws(SpotlightQueryError) -> Predicate {
        let open = pos
        pos += 1  // (
        let attribute = try parseAttribute(after: "'InRange('", context: "an attribute name")
        guard case .named(let name) = attribute.selector else {
            throw error(
                .allTextNeedsText,
                "InRange compares one numeric or date attribute; '\(attribute.spelling)' names every text attribute",
                at: attribute.offset)
        }
        try expectComma(after: "'\(attribute.spelling)'")
        let minimum = try parseValue(after: "',' in InRange")
        try expectComma(after: "the minimum of InRange")
        let maximum = try parseValue(after: "',' in InRange")
        skipWhitespace()
        guard pos < chars.count else {
            throw error(.unbalancedParentheses, "'(' of InRange is never closed; expected ')' before end of query", at: open)
        }
        guard chars[pos] == ")" else {
            throw error(.unexpectedToken, "expected ')' to close InRange, found \(found(at: pos))", at: pos)
        }
        pos += 1
        let lower = try rangeEnd(minimum, isLower: true, what: "InRange")
        let upper = try rangeEnd(maximum, isLower: false, what: "InRange")
        return .range(RangeTest(attribute: name, lower: lower, upper: upper))
    }

    mutating func expectComma(after: String) throws(SpotlightQueryError) {
        skipWhitespace()
        guard peek(",") else {
            throw error(.unexpectedToken, "expected ',' after \(after), found \(found(at: pos))", at: pos)
        }
        pos += 1
    }

    // MARK: - Lowering to the plan

    /// The number or date an ordering compares with, or nil for text that is
    /// neither. Quoted numbers and ISO dates count: `size > "10"` is plain enough.
    func orderingValue(_ v: Value) -> TimeValue? {
        switch v.kind {
        case .number(let n, _): return .instant(n)
        case .date(let t, _): return t
        case .text(let pattern):
            guard !pattern.hasWildcards else { return nil }
            let text = pattern.literals.joined()
            if let n = Self.parseNumber(text.trimmingCharacters(in: .whitespaces)) { return .instant(n) }
            if let d = ISODate.parse(text) { return .instant(d.timeIntervalSinceReferenceDate) }
            return nil
        }
    }

    /// One end of `InRange`: inclusive, except that a period's end is exclusive.
    func rangeEnd(_ v: Value, isLower: Bool, what: String) throws(SpotlightQueryError) -> Bound {
        guard let t = orderingValue(v) else {
            throw error(
                .orderingNeedsNumberOrDate,
                "\(what) compares numbers and dates only; found \(v.spelling), which is neither",
                at: v.offset)
        }
        switch t {
        case .instant(let x): return Bound(x, inclusive: true)
        case .period(let s, let e): return isLower ? Bound(s, inclusive: true) : Bound(e, inclusive: false)
        }
    }

    func lower(_ a: Attribute, _ op: Operator, _ opText: String, _ v: Value) throws(SpotlightQueryError) -> Predicate {
        let selector = a.selector
        func textTest(_ pattern: TextPattern) -> Predicate {
            let test = Predicate.text(TextTest(attribute: selector, pattern: pattern, options: v.modifiers))
            return op == .equal ? test : .and([.exists(selector), .not(test)])
        }
        if case .text(let pattern) = v.kind, !op.isOrdering {
            if pattern.isMatchAll { return op == .equal ? .exists(selector) : .not(.exists(selector)) }
            return textTest(pattern)
        }
        guard case .named(let name) = selector else {
            // Every text attribute: an unquoted number or date is read as its text.
            switch v.kind {
            case .number(_, let word) where !op.isOrdering, .date(_, let word?) where !op.isOrdering:
                return textTest(TextPattern(literal: word))
            default:
                throw error(
                    .allTextNeedsText,
                    "'\(a.spelling)' names every text attribute and compares with text only; \(opText) \(v.spelling) needs one numeric or date attribute",
                    at: a.offset)
            }
        }
        guard let t = orderingValue(v) else {
            throw error(
                .orderingNeedsNumberOrDate,
                "\(opText) compares numbers and dates only; found \(v.spelling), which is neither",
                at: v.offset)
        }
        let (s, e): (Double, Double?)
        switch t {
        case .instant(let x): (s, e) = (x, nil)
        case .period(let ps, let pe): (s, e) = (ps, pe)
        }
        func range(_ lower: Bound?, _ upper: Bound?) -> Predicate {
            .range(RangeTest(attribute: name, lower: lower, upper: upper))
        }
        let equal = range(Bound(s, inclusive: true), Bound(e ?? s, inclusive: e == nil))
        switch op {
        case .equal: return equal
        case .notEqual: return .and([.exists(selector), .not(equal)])
        case .less: return range(nil, Bound(s, inclusive: false))
        case .lessOrEqual: return range(nil, Bound(e ?? s, inclusive: e == nil))
        case .greater: return range(Bound(e ?? s, inclusive: e != nil), nil)
        case .greaterOrEqual: return range(Bound(s, inclusive: true), nil)
        }
    }
}
