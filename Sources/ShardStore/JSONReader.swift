import Foundation
import Items

/// Parses the JSON the store itself wrote (``JSONWriter``) back into a
/// `JSONValue`, straight from SQLite's UTF-8 bytes.
///
/// Fetching results is the largest cost of a query that returns its first
/// twenty items; `JSONSerialization` spends most of it bridging through
/// Foundation objects. This reader builds the value tree directly. It accepts
/// standard JSON; anything it does not understand yields nil and the caller
/// falls back to Foundation.
struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var reader = JSONReader(bytes: bytes)
        guard let value = reader.value() else { return nil }
        reader.skipSpace()
        return reader.i == bytes.count ? value : nil
    }

    /// An item with only the `attributes` named in `keep`: what parsing the
    /// whole item and filtering would give, without building the values of
    /// the other attributes (a result that asks for a title does not decode
    /// a description and a list of dependencies). Nil when the item is not
    /// an object or anything does not parse.
    static func parseItem(_ bytes: UnsafeBufferPointer<UInt8>, keepingAttributes keep: Set<String>) -> JSONValue? {
        var reader = JSONReader(bytes: bytes)
        reader.skipSpace()
        guard reader.i < bytes.count, bytes[reader.i] == UInt8(ascii: "{") else { return nil }
        reader.i += 1
        var object: [String: JSONValue] = [:]
        reader.skipSpace()
        if reader.i < bytes.count, bytes[reader.i] == UInt8(ascii: "}") {
            reader.i += 1
        } else {
            while true {
                reader.skipSpace()
                guard let key = reader.string() else { return nil }
                reader.skipSpace()
                guard reader.i < bytes.count, bytes[reader.i] == UInt8(ascii: ":") else { return nil }
                reader.i += 1
                if key == "attributes" {
                    guard let attrs = reader.object(keeping: keep) else { return nil }
                    object[key] = attrs
                } else {
                    guard let v = reader.value() else { return nil }
                    object[key] = v
                }
                reader.skipSpace()
                guard reader.i < bytes.count else { return nil }
                if bytes[reader.i] == UInt8(ascii: ",") { reader.i += 1; continue }
                if bytes[reader.i] == UInt8(ascii: "}") { reader.i += 1; break }
                return nil
            }
        }
        reader.skipSpace()
        return reader.i == bytes.count ? .object(object) : nil
    }

    /// An object with only the members named in `keep`; the others are skipped.
    /// A value that is not an object is parsed whole (filtering leaves it be).
    mutating func object(keeping keep: Set<String>) -> JSONValue? {
        skipSpace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return value() }
        i += 1
        var object: [String: JSONValue] = [:]
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            if keep.contains(key) {
                guard let v = value() else { return nil }
                object[key] = v
            } else {
                guard skipValue() else { return nil }
            }
            skipSpace()
            guard i < bytes.count else { return nil }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
            return nil
        }
    }

    /// Steps over one value without building it; false when it does not parse.
    mutating func skipValue() -> Bool {
        skipSpace()
        guard i < bytes.count else { return false }
        switch bytes[i] {
        case UInt8(ascii: "\""):
            i += 1
            while i < bytes.count {
                let b = bytes[i]
                if b == UInt8(ascii: "\\") { i += 2; continue }
                i += 1
                if b == UInt8(ascii: "\"") { return true }
            }
            return false
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let open = bytes[i], close: UInt8 = open == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            i += 1
            skipSpace()
            if i < bytes.count, bytes[i] == close { i += 1; return true }
            while true {
                if open == UInt8(ascii: "{") {
                    skipSpace()
                    guard string() != nil else { return false }
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return false }
                    i += 1
                }
                guard skipValue() else { return false }
                skipSpace()
                guard i < bytes.count else { return false }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == close { i += 1; return true }
                return false
            }
        default:
            return value() != nil
        }
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 32 || bytes[i] == 10 || bytes[i] == 13 || bytes[i] == 9 { i += 1 }
    }

    mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { return nil }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { return nil }
        i += n
        return value
    }

    mutating func value() -> JSONValue? {
        skipSpace()
        guard i < bytes.count else { return nil }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            var object: [String: JSONValue] = [:]
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
            while true {
                skipSpace()
                guard let key = string() else { return nil }
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                guard let v = value() else { return nil }
                object[key] = v
                skipSpace()
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
                return nil
            }
        case UInt8(ascii: "["):
            i += 1
            var array: [JSONValue] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(array) }
            while true {
                guard let v = value() else { return nil }
                array.append(v)
                skipSpace()
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(array) }
                return nil
            }
        case UInt8(ascii: "\""):
            return string().map(JSONValue.string)
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default:
            let start = i
            while i < bytes.count {
                let b = bytes[i]
                guard (b >= 48 && b <= 57) || b == 45 || b == 43 || b == 46 || b == 101 || b == 69 else { break }
                i += 1
            }
            guard i > start else { return nil }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            return Double(text).map(JSONValue.number)
        }
    }

    mutating func string() -> String? {
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        let start = i
        // Fast path: no escapes.
        while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != UInt8(ascii: "\\") { i += 1 }
        guard i < bytes.count else { return nil }
        if bytes[i] == UInt8(ascii: "\"") {
            let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            i += 1
            return s
        }
        var out = Array(bytes[start..<i])
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            if b != UInt8(ascii: "\\") { out.append(b); i += 1; continue }
            i += 1
            guard i < bytes.count else { return nil }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "n"): out.append(10)
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "r"): out.append(13)
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "u"):
                guard var scalar = hex4() else { return nil }
                if (0xD800..<0xDC00).contains(scalar) {
                    // A surrogate pair: \uD83C\uDF0D.
                    guard i + 1 < bytes.count, bytes[i] == 92, bytes[i + 1] == UInt8(ascii: "u") else { return nil }
                    i += 2
                    guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let u = Unicode.Scalar(scalar) else { return nil }
                out += Array(String(Character(u)).utf8)
            default: out.append(e) // \" \\ \/
            }
        }
        return nil
    }

    mutating func hex4() -> UInt32? {
        guard i + 4 <= bytes.count else { return nil }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let d: UInt8
            switch b {
            case 48...57: d = b - 48
            case 97...102: d = b - 87
            case 65...70: d = b - 55
            default: return nil
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }
}
