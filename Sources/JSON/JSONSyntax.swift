/// Where JSON text stops being JSON, for error messages that point at the
/// fault (`line 3, column 14: expected ',' or '}' after a member`).
///
/// The readers that build values (``StrictJSONReader``, `JSONSerialization`)
/// only say that a text is not JSON; this one walks a text they refused and
/// names the first byte at fault and what was expected there. It builds
/// nothing and is used only once a text has been refused, so it is written
/// for clear messages rather than speed.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset of the fault from the start of the text.
    public var offset: Int
    /// 1-based line and column (columns count characters, not bytes).
    public var line: Int
    public var column: Int
    public var message: String

    public var description: String { "line \(line), column \(column): \(message)" }

    /// The first fault of `text`, or nil when it is one well-formed JSON value.
    public static func find(in text: String) -> JSONSyntaxError? {
        let bytes = Array(text.utf8)
        var scanner = Scanner(bytes: bytes)
        let fault: (Int, String)?
        do {
            try scanner.value(depth: 0)
            scanner.skipSpace()
            fault = scanner.i < bytes.count ? (scanner.i, "unexpected \(scanner.describe(scanner.i)) after the JSON value") : nil
        } catch {
            fault = (error.offset, error.message)
        }
        guard let (offset, message) = fault else { return nil }
        var line = 1, lineStart = 0
        for k in 0..<min(offset, bytes.count) where bytes[k] == UInt8(ascii: "\n") {
            line += 1
            lineStart = k + 1
        }
        let column = String(decoding: bytes[lineStart..<min(offset, bytes.count)], as: UTF8.self).count + 1
        return JSONSyntaxError(offset: offset, line: line, column: column, message: message)
    }

    struct Fault: Error {
        var offset: Int
        var message: String
    }

    struct Scanner {
        let bytes: [UInt8]
        var i = 0

        mutating func skipSpace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        func describe(_ k: Int) -> String {
            guard k < bytes.count else { return "end of text" }
            let b = bytes[k]
            if b >= 0x21, b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
            return "byte 0x\(String(b, radix: 16))"
        }

        func fail(_ expected: String) -> Fault {
            Fault(offset: i, message: "expected \(expected), found \(describe(i))")
        }

        mutating func value(depth: Int) throws(Fault) {
            guard depth < 512 else { throw Fault(offset: i, message: "more than 512 nested arrays and objects") }
            skipSpace()
            guard i < bytes.count else { throw fail("a value") }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return }
                while true {
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("a member name in double quotes") }
                    try string()
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("':' after a member name") }
                    i += 1
                    try value(depth: depth + 1)
                    skipSpace()
                    guard i < bytes.count else { throw fail("',' or '}' after a member") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return }
                    throw fail("',' or '}' after a member")
                }
            case UInt8(ascii: "["):
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return }
                while true {
                    try value(depth: depth + 1)
                    skipSpace()
                    guard i < bytes.count else { throw fail("',' or ']' after an element") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return }
                    throw fail("',' or ']' after an element")
                }
            case UInt8(ascii: "\""):
                try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
            default:
                for word in ["true", "false", "null"] where bytes[i...].starts(with: word.utf8) {
                    i += word.utf8.count
                    return
                }
                throw fail("a value (an object, array, string, number, true, false or null)")
            }
        }

        mutating func string() throws(Fault) {
            let open = i
            i += 1
            while i < bytes.count {
                let b = bytes[i]
                switch b {
                case UInt8(ascii: "\""):
                    i += 1
                    return
                case UInt8(ascii: "\\"):
                    i += 1
                    guard i < bytes.count else { break }
                    if bytes[i] == UInt8(ascii: "u") {
                        let hex = bytes[(i + 1)...].prefix(4)
                        guard hex.count == 4, hex.allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }) else {
                            throw Fault(offset: i - 1, message: "a \\u escape needs four hexadecimal digits")
                        }
                        i += 5
                    } else if Array("\"\\/bfnrt".utf8).contains(bytes[i]) {
                        i += 1
                    } else {
                        throw Fault(offset: i - 1, message: "unknown escape \\\(describe(i).trimmingCharacters(in: ["'"]))")
                    }
                case 0..<0x20:
                    throw Fault(offset: i, message: "a control character (\(describe(i))) inside a string: write it escaped")
                default:
                    i += 1
                }
            }
            throw Fault(offset: open, message: "a string that is never closed")
        }

        mutating func number() throws(Fault) {
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            func digits() -> Int {
                let s = i
                while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
                return i - s
            }
            let intStart = i
            guard digits() > 0 else { throw fail("a digit") }
            if bytes[intStart] == UInt8(ascii: "0"), i - intStart > 1 {
                throw Fault(offset: intStart, message: "a number may not start with 0")
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digits() > 0 else { throw fail("a digit after '.'") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { throw fail("a digit in the exponent") }
            }
        }
    }
}
