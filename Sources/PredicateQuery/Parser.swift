import Foundation
import Items

/// Recursive descent over the tokens, substituting `%@` and `%K` arguments
/// as it goes. The dialect's rules about operators are applied here, where
/// the offending token's position is known; those about negation, in
/// ``Lowering``.
struct Parser {
    let tokens: [Token]
    let dialect: PredicateQueryParser.Dialect
    let arguments: [JSONValue]
    var next = 0
    var argument = 0
    var depth = 0
    static let maxDepth = 100

    init(tokens: [Token], dialect: PredicateQueryParser.Dialect, arguments: [JSONValue]) {
        self.tokens = tokens
        self.dialect = dialect
        self.arguments = arguments
    }

    var token: Token { tokens[next] }

    mutating func parse() throws(PredicateQueryError) -> Syntax {
        if token.kind == .end { throw PredicateQueryError(.emptyPredicate, "the predicate is empty", offset: 0) }
        let s = try or()
        if token.isSymbol(")") {
            throw PredicateQueryError(.unbalancedParentheses, "')' closes no '('", offset: token.offset)
        }
        guard token.kind == .end else {
            throw PredicateQueryError(
                .unexpectedToken, "expected AND\(dialect == .nspredicate ? ", OR" : "") or the end of the predicate, found \(describe(token))",
                offset: token.offset)
        }
        guard argument == arguments.count else {
            throw PredicateQueryError(
                .argumentCount, "\(arguments.count) arguments were given but the predicate uses \(argument)", offset: token.offset)
        }
        return s
    }

    func notInCloudKit(_ what: String, _ offset: Int) -> PredicateQueryError {
        PredicateQueryError(.notInCloudKit, "CloudKit queries have no \(what); the nspredicate dialect has it", offset: offset)
    }

    mutating func or() throws(PredicateQueryError) -> Syntax {
        var parts = [try and()]
        while token.keyword == "OR" || token.isSymbol("||") {
            if dialect == .cloudkit { throw notInCloudKit(token.isSymbol("||") ? "'||'" : "OR", token.offset) }
            next += 1
            parts.append(try and())
        }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    mutating func and() throws(PredicateQueryError) -> Syntax {
        var parts = [try unary()]
        while token.keyword == "AND" || token.isSymbol("&&") {
            next += 1
            parts.append(try unary())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    mutating func unary() throws(PredicateQueryError) -> Syntax {
        let t = token
        if t.keyword == "NOT" || t.isSymbol("!") {
            if t.isSymbol("!"), dialect == .cloudkit { throw notInCloudKit("'!' (write NOT)", t.offset) }
            depth += 1
            defer { depth -= 1 }
            guard depth <= Self.maxDepth else {
                throw PredicateQueryError(.nestingTooDeep, "NOT and parentheses nest more than \(Self.maxDepth) deep", offset: t.offset)
            }
            next += 1
            return .not(try unary(), offset: t.offset)
        }
        return try primary()
    }

    mutating func primary() throws(PredicateQueryError) -> Syntax {
        let t = token
        if t.isSymbol("(") {
            depth += 1
            defer { depth -= 1 }
            guard depth <= Self.maxDepth else {
                throw PredicateQueryError(.nestingTooDeep, "NOT and parentheses nest more than \(Self.maxDepth) deep", offset: t.offset)
            }
            next += 1
            let inner = try or()
            guard token.isSymbol(")") else {
                if token.kind == .end { throw PredicateQueryError(.unbalancedParentheses, "the '(' here is never closed", offset: t.offset) }
                throw PredicateQueryError(.unexpectedToken, "expected ')', found \(describe(token))", offset: token.offset)
            }
            next += 1
            return inner
        }
        if t.keyword == "TRUEPREDICATE" { next += 1; return .constant(true) }
        if t.keyword == "FALSEPREDICATE" { next += 1; return .constant(false) }
        return .comparison(try comparison())
    }

    mutating func comparison() throws(PredicateQueryError) -> Comparison {
        var quantifier: (Quantifier, offset: Int)?
        if let k = token.keyword, ["ANY", "SOME", "ALL", "NONE"].contains(k) {
            let q: Quantifier = k == "ALL" ? .all : k == "NONE" ? .none : .any
            if q == .none, dialect == .cloudkit { throw notInCloudKit("NONE", token.offset) }
            quantifier = (q, token.offset)
            next += 1
        }
        let lhs = try operand()
        let opToken = token
        let op: Operator
        switch opToken.kind {
        case .symbol(let s):
            switch s {
            case "=", "==": op = .eq
            case "!=", "<>": op = .ne
            case "<": op = .lt
            case "<=", "=<": op = .le
            case ">": op = .gt
            case ">=", "=>": op = .ge
            default: throw expectedOperator(opToken)
            }
        case .word(let w, false):
            switch w.uppercased() {
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            case "LIKE": op = .like
            case "MATCHES": op = .matches
            case "IN": op = .in
            case "TOKENMATCHES": op = .tokenMatches
            case "BETWEEN": op = .between
            default: throw expectedOperator(opToken)
            }
        default: throw expectedOperator(opToken)
        }
        if dialect == .cloudkit, [.endsWith, .like, .matches].contains(op) { throw notInCloudKit(op.rawValue, opToken.offset) }
        next += 1
        var options = ""
        if case .options(let letters) = token.kind {
            let allowed = op == .tokenMatches ? "cdl" : "cdln"
            if dialect == .cloudkit, op != .tokenMatches { throw notInCloudKit("options such as [\(letters)] on \(op.rawValue)", token.offset) }
            for ch in letters where !allowed.contains(ch.lowercased()) {
                throw PredicateQueryError(
                    .badOption, "'\(ch)' is not an option of \(op.rawValue) (use \(allowed.map { "[\($0)]" }.joined(separator: ", ")))",
                    offset: token.offset)
            }
            options = letters.lowercased()
            next += 1
        }
        let rhs = try operand()
        return Comparison(quantifier: quantifier, lhs: lhs, op: op, opOffset: opToken.offset, options: options, rhs: rhs)
    }

    func expectedOperator(_ t: Token) -> PredicateQueryError {
        if let k = t.keyword, dialect == .cloudkit, ["ENDSWITH", "LIKE", "MATCHES"].contains(k) { return notInCloudKit(k, t.offset) }
        return PredicateQueryError(
            .expectedOperator, "expected a comparison operator (==, !=, <, <=, >, >=, BEGINSWITH, CONTAINS, IN, BETWEEN…), found \(describe(t))",
            offset: t.offset)
    }

    func describe(_ t: Token) -> String {
        switch t.kind {
        case .end: "the end of the predicate"
        case .word(let w, _): "'\(w)'"
        case .string(let s): "the text '\(s)'"
        case .number(let d): "the number \(canonical(d))"
        case .format(let c): "%\(c)"
        case .symbol(let s): "'\(s)'"
        case .options(let o): "[\(o)]"
        }
    }

    func canonical(_ d: Double) -> String { d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d) }

    mutating func operand() throws(PredicateQueryError) -> Operand {
        let t = token
        switch t.kind {
        case .string(let s): next += 1; return .value(.string(s), offset: t.offset)
        case .number(let d): next += 1; return .value(.number(d), offset: t.offset)
        case .format(let c):
            next += 1
            guard argument < arguments.count else {
                throw PredicateQueryError(.argumentCount, "%\(c) has no argument: \(arguments.count) given", offset: t.offset)
            }
            let arg = arguments[argument]
            argument += 1
            if c == "K" {
                guard let name = arg.stringValue, !name.isEmpty else {
                    throw PredicateQueryError(.badArgument, "%K needs a key name (text), found \(arg.kindName)", offset: t.offset)
                }
                return try key(name, offset: t.offset)
            }
            return .value(try value(arg, offset: t.offset), offset: t.offset)
        case .symbol("{"):
            next += 1
            var elements: [Value] = []
            if token.isSymbol("}") { next += 1; return .value(.array([]), offset: t.offset) }
            while true {
                let e = try operand()
                guard case .value(let v, _) = e else {
                    throw PredicateQueryError(.typeMismatch, "a list {…} holds constants, not keys", offset: e.offset)
                }
                elements.append(v)
                if token.isSymbol(",") { next += 1; continue }
                if token.isSymbol("}") { next += 1; break }
                if token.kind == .end { throw PredicateQueryError(.unbalancedParentheses, "the '{' here is never closed", offset: t.offset) }
                throw PredicateQueryError(.unexpectedToken, "expected ',' or '}' in the list, found \(describe(token))", offset: token.offset)
            }
            return .value(.array(elements), offset: t.offset)
        case .word(let w, let escaped):
            next += 1
            if !escaped {
                switch w.uppercased() {
                case "NIL", "NULL": return .value(.null, offset: t.offset)
                case "YES", "TRUE": return .value(.bool(true), offset: t.offset)
                case "NO", "FALSE": return .value(.bool(false), offset: t.offset)
                case "SELF": return .selfKey(offset: t.offset)
                case "NOW":
                    if token.isSymbol("("), next + 1 < tokens.count, tokens[next + 1].isSymbol(")") { next += 2 }
                    return .function("now", [], offset: t.offset)
                case "AND", "OR", "NOT", "IN", "BETWEEN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES",
                    "ANY", "SOME", "ALL", "NONE", "TRUEPREDICATE", "FALSEPREDICATE", "TOKENMATCHES":
                    throw PredicateQueryError(
                        .expectedExpression, "expected a key or a value, found the keyword \(w) (write #\(w) for a key of that name)",
                        offset: t.offset)
                default: break
                }
            }
            if token.isSymbol("(") {
                // A function: `distanceToLocation:fromLocation:(…)`, `tokenize(…)`, `tokenize:using:(…)`.
                let open = token.offset
                next += 1
                var args: [Operand] = []
                if !token.isSymbol(")") {
                    while true {
                        args.append(try operand())
                        if token.isSymbol(",") { next += 1; continue }
                        if token.isSymbol(")") { break }
                        if token.kind == .end { throw PredicateQueryError(.unbalancedParentheses, "the '(' here is never closed", offset: open) }
                        throw PredicateQueryError(
                            .unexpectedToken, "expected ',' or ')' after a function argument, found \(describe(token))", offset: token.offset)
                    }
                }
                next += 1
                let name: String
                switch w {
                case "distanceToLocation:fromLocation:": name = "distance"
                case "tokenize", "tokenize:using:": name = "tokenize"
                case "now": name = "now"
                default:
                    throw PredicateQueryError(
                        .unknownFunction, "unknown function '\(w)' (known: distanceToLocation:fromLocation:, tokenize:using:, now)", offset: t.offset)
                }
                return .function(name, args, offset: t.offset)
            }
            return try key(w, offset: t.offset)
        case .end:
            throw PredicateQueryError(.expectedExpression, "expected a key or a value, found the end of the predicate", offset: t.offset)
        default:
            throw PredicateQueryError(.expectedExpression, "expected a key or a value, found \(describe(t))", offset: t.offset)
        }
    }

    func key(_ name: String, offset: Int) throws(PredicateQueryError) -> Operand {
        if name.contains(":") {
            throw PredicateQueryError(.unknownFunction, "'\(name)' looks like a function but has no '(' after it", offset: offset)
        }
        if dialect == .cloudkit, name.contains(".") {
            throw PredicateQueryError(
                .keyPathNotSupported, "'\(name)' is a key path into a related record; CloudKit queries can only name fields of the record itself",
                offset: offset)
        }
        guard AttributeName.isValid(name) else {
            throw PredicateQueryError(
                .unexpectedToken, "'\(name)' is not a valid key (a letter, then letters, digits, '_', '.', '-')", offset: offset)
        }
        return .key(name, offset: offset)
    }

    /// An argument as a predicate value: `{"latitude", "longitude"}` is a
    /// location, `{"recordName"}` a reference, `{"date": ISO-8601}` a date.
    func value(_ json: JSONValue, offset: Int) throws(PredicateQueryError) -> Value {
        switch json {
        case .string(let s): return .string(s)
        case .number(let d): return .number(d)
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .array(let a):
            var out: [Value] = []
            for e in a { out.append(try value(e, offset: offset)) }
            return .array(out)
        case .object(let o):
            if let lat = o["latitude"]?.doubleValue, let lng = o["longitude"]?.doubleValue {
                guard abs(lat) <= 90, abs(lng) <= 180 else {
                    throw PredicateQueryError(.badArgument, "a location's latitude must be within ±90 and its longitude within ±180", offset: offset)
                }
                return .location(Location(latitude: lat, longitude: lng))
            }
            if let name = o["recordName"]?.stringValue { return .reference(name) }
            if let d = o["date"]?.stringValue {
                guard let date = ISODate.parse(d) else {
                    throw PredicateQueryError(.badArgument, "'\(d)' is not an ISO-8601 date", offset: offset)
                }
                return .date(date.timeIntervalSinceReferenceDate)
            }
            throw PredicateQueryError(
                .badArgument, "an object argument is a location {latitude, longitude}, a reference {recordName} or a date {date}", offset: offset)
        }
    }
}
