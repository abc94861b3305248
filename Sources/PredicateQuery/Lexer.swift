import Foundation

/// One token of a predicate format string, with its character offset.
struct Token: Equatable {
    enum Kind: Equatable {
        /// A key or keyword (`#name` escapes a keyword: `escaped` is then true).
        case word(String, escaped: Bool)
        case string(String)
        case number(Double)
        /// `%@`, `%K`, `%d`…: the letter after `%`.
        case format(Character)
        /// Operators and punctuation: `==`, `(`, `{`, `,`, `&&`…
        case symbol(String)
        /// `[cd]` right after an operator: the letters.
        case options(String)
        case end
    }
    var kind: Kind
    var offset: Int

    /// The keyword, upper-cased, when this is an unescaped word.
    var keyword: String? {
        if case .word(let w, false) = kind { return w.uppercased() }
        return nil
    }

    func isSymbol(_ s: String) -> Bool { kind == .symbol(s) }
}

/// Splits a format string into tokens. Keys may hold the colons of a
/// function selector (`distanceToLocation:fromLocation:`) and the `.` and `-`
/// that attribute names allow.
struct Lexer {
    let chars: [Character]
    var i = 0

    init(_ text: String) { chars = Array(text) }

    static func isWordStart(_ c: Character) -> Bool { c.isLetter || c == "_" || c == "$" }
    static func isWordPart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "." || c == ":" || c == "-" || c == "$" }

    mutating func tokens() throws(PredicateQueryError) -> [Token] {
        var out: [Token] = []
        while true {
            while i < chars.count, chars[i].isWhitespace { i += 1 }
            guard i < chars.count else { out.append(Token(kind: .end, offset: chars.count)); return out }
            let start = i
            let c = chars[i]
            if c == "\"" || c == "'" {
                out.append(Token(kind: .string(try string(quote: c)), offset: start))
            } else if c.isNumber || (c == "." && i + 1 < chars.count && chars[i + 1].isNumber)
                || (c == "-" && i + 1 < chars.count && (chars[i + 1].isNumber || chars[i + 1] == ".") && !Self.endsOperand(out.last))
            {
                out.append(Token(kind: .number(try number()), offset: start))
            } else if Self.isWordStart(c) || c == "#" {
                let escaped = c == "#"
                if escaped { i += 1 }
                guard i < chars.count, Self.isWordStart(chars[i]) else {
                    throw PredicateQueryError(.unexpectedToken, "expected a key after '#'", offset: start)
                }
                let s = i
                while i < chars.count, Self.isWordPart(chars[i]) { i += 1 }
                out.append(Token(kind: .word(String(chars[s..<i]), escaped: escaped), offset: start))
            } else if c == "%" {
                guard i + 1 < chars.count, "@KdifslugeDxX".contains(chars[i + 1]) else {
                    throw PredicateQueryError(.unexpectedToken, "'%' must be followed by @ or K (or a number format such as %d)", offset: start)
                }
                out.append(Token(kind: .format(chars[i + 1]), offset: start))
                i += 2
            } else if c == "[" && out.last.map(Self.isOperator) == true {
                i += 1
                let s = i
                while i < chars.count, chars[i] != "]" {
                    guard chars[i].isLetter else {
                        throw PredicateQueryError(.badOption, "option letters go between [ and ], such as [cd]", offset: i)
                    }
                    i += 1
                }
                guard i < chars.count else { throw PredicateQueryError(.badOption, "'[' of the operator's options is never closed", offset: start) }
                out.append(Token(kind: .options(String(chars[s..<i])), offset: start))
                i += 1
            } else {
                let two = i + 1 < chars.count ? String(chars[i...i + 1]) : ""
                if ["==", ">=", "=>", "<=", "=<", "!=", "<>", "&&", "||"].contains(two) {
                    out.append(Token(kind: .symbol(two), offset: start))
                    i += 2
                } else if "=<>!(){},".contains(c) {
                    out.append(Token(kind: .symbol(String(c)), offset: start))
                    i += 1
                } else {
                    throw PredicateQueryError(.unexpectedToken, "unexpected character '\(c)'", offset: start)
                }
            }
        }
    }

    /// Whether the token before a `-` ends an operand (then `-` would be
    /// subtraction, which predicates here do not have, rather than a sign).
    static func endsOperand(_ t: Token?) -> Bool {
        switch t?.kind {
        case .word(let w, _)?: return !["AND", "OR", "NOT", "IN", "BETWEEN", "CONTAINS"].contains(w.uppercased())
        case .string?, .number?, .format?: return true
        case .symbol(let s)?: return s == ")" || s == "}"
        default: return false
        }
    }

    static func isOperator(_ t: Token) -> Bool {
        switch t.kind {
        case .symbol(let s): return ["=", "==", ">=", "=>", "<=", "=<", "<", ">", "!=", "<>"].contains(s)
        case .word(let w, false):
            return ["BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES", "IN", "TOKENMATCHES"].contains(w.uppercased())
        default: return false
        }
    }

    mutating func string(quote: Character) throws(PredicateQueryError) -> String {
        let start = i
        i += 1
        var out = ""
        while i < chars.count {
            let c = chars[i]
            if c == quote { i += 1; return out }
            if c == "\\" {
                guard i + 1 < chars.count else { break }
                let e = chars[i + 1]
                i += 2
                switch e {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                case "0": out.append("\0")
                case "u":
                    guard i + 4 <= chars.count, let v = UInt32(String(chars[i..<i + 4]), radix: 16), let scalar = Unicode.Scalar(v) else {
                        throw PredicateQueryError(.unterminatedString, "\\u must be followed by four hexadecimal digits", offset: i - 2)
                    }
                    out.unicodeScalars.append(scalar)
                    i += 4
                default: out.append(e)  // \" \' \\ and any other character stand for themselves
                }
                continue
            }
            out.append(c)
            i += 1
        }
        throw PredicateQueryError(.unterminatedString, "the string that starts here has no closing \(quote)", offset: start)
    }

    mutating func number() throws(PredicateQueryError) -> Double {
        let start = i
        if chars[i] == "-" { i += 1 }
        if i + 1 < chars.count, chars[i] == "0", chars[i + 1] == "x" || chars[i + 1] == "X" {
            i += 2
            let s = i
            while i < chars.count, chars[i].isHexDigit { i += 1 }
            guard i > s, let v = UInt64(String(chars[s..<i]), radix: 16) else {
                throw PredicateQueryError(.badNumber, "0x must be followed by hexadecimal digits", offset: start)
            }
            return chars[start] == "-" ? -Double(v) : Double(v)
        }
        while i < chars.count, chars[i].isNumber || chars[i] == "." { i += 1 }
        if i < chars.count, chars[i] == "e" || chars[i] == "E" {
            i += 1
            if i < chars.count, chars[i] == "+" || chars[i] == "-" { i += 1 }
            let s = i
            while i < chars.count, chars[i].isNumber { i += 1 }
            guard i > s else { throw PredicateQueryError(.badNumber, "an exponent needs digits", offset: start) }
        }
        if i < chars.count, Self.isWordStart(chars[i]) {
            throw PredicateQueryError(.badNumber, "'\(String(chars[start...i]))' is not a number", offset: start)
        }
        guard let d = Double(String(chars[start..<i])), d.isFinite else {
            throw PredicateQueryError(.badNumber, "'\(String(chars[start..<i]))' is not a number", offset: start)
        }
        return d
    }
}
