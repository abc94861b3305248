import Foundation

/// A strict JSON reader over valid UTF-8, building `JSONValue` directly.
///
/// Parsing JSON Lines through `JSONSerialization` spends most of its time
/// bridging through Foundation objects, a quarter of the CPU time of
/// indexing, where every document is parsed before it is stored. This reader
/// gives the same value as `JSONSerialization` for the documents it accepts
/// and declines (nil) everything where the two could
/// differ or where Foundation reports an error, so the caller falls back to
/// Foundation for those: control characters in strings, unknown escapes, lone
/// surrogates, duplicate keys, numbers outside the plain JSON grammar, `-0`,
/// or with more than 15 significant digits (Foundation may keep those as
/// integers or decimals), a byte order mark, trailing bytes, nesting deeper
/// than 512.
///
/// `package`: the shard store reads the JSON it stored with the same reader,
/// adding what it needs on top (skipping attributes a query did not ask for).
package struct StrictJSONReader {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var i = 0
    var depth = 0
    /// The members of the objects being read, innermost last: an object's
    /// dictionary is made once its members are counted, at that size. Grown
    /// one member at a time, a dictionary of four would be allocated three
    /// times and rehashed twice, and reading a search response's hits is a
    /// good part of the Swift client's CPU.
    var members: [(key: String, value: JSONValue)] = []

    package init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// `bytes` must be valid UTF-8 (it comes from a `String`).
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var reader = StrictJSONReader(bytes: bytes)
        guard let value = reader.value() else { return nil }
        reader.skipSpace()
        return reader.i == bytes.count ? value : nil
    }

    package mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 32 || bytes[i] == 10 || bytes[i] == 13 || bytes[i] == 9 { i += 1 }
    }

    package mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { return nil }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { return nil }
        i += n
        return value
    }

    package mutating func value() -> JSONValue? {
        skipSpace()
        guard i < bytes.count else { return nil }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            depth += 1
            guard depth <= 512 else { return nil }
            defer { depth -= 1 }
            i += 1
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object([:]) }
            // A failure anywhere fails the whole read, so members left on
            // the stack by one are never seen.
            let base = members.count
            while true {
                skipSpace()
                guard let key = string() else { return nil }
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                guard let v = value() else { return nil }
                members.append((key, v))
                skipSpace()
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; break }
                return nil
            }
            var object = [String: JSONValue](minimumCapacity: members.count - base)
            // Taken off the stack (moved, last first), not copied out and
            // the stack's copies destroyed after: a retain and a release a
            // member less (those made up a fifth of reading a search response).
            while members.count > base {
                let (key, value) = members.removeLast()
                guard object.updateValue(value, forKey: key) == nil else { return nil }  // duplicate key
            }
            return .object(object)
        case UInt8(ascii: "["):
            depth += 1
            guard depth <= 512 else { return nil }
            defer { depth -= 1 }
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
            return number()
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, at most 15 digits
    /// before the exponent, not `-0`, finite.
    package mutating func number() -> JSONValue? {
        let start = i
        func digit(_ k: Int) -> Bool { k < bytes.count && bytes[k] >= 48 && bytes[k] <= 57 }
        var digits = 0
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard digit(i) else { return nil }
        if bytes[i] == 48 {
            i += 1
            digits += 1
            if digit(i) { return nil }
        } else {
            while digit(i) { i += 1; digits += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digit(i) else { return nil }
            while digit(i) { i += 1; digits += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digit(i) else { return nil }
            while digit(i) { i += 1 }
        }
        guard digits <= 15 else { return nil }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite, !(d == 0 && bytes[start] == UInt8(ascii: "-")) else { return nil }
        return .number(d)
    }

    package mutating func string() -> String? {
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        let start = i
        // Fast path: no escapes. Eight bytes at a time first, while none of
        // them is a quote, a backslash or a control character.
        i = Self.plainRun(bytes, from: i)
        while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != UInt8(ascii: "\\") {
            if bytes[i] < 32 { return nil }
            i += 1
        }
        guard i < bytes.count else { return nil }
        if bytes[i] == UInt8(ascii: "\"") {
            let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            i += 1
            return s
        }
        var out = Array(bytes[start..<i])
        while i < bytes.count {
            let b = bytes[i]
            if b < 32 { return nil }
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
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "u"):
                guard var scalar = hex4() else { return nil }
                if (0xD800..<0xDC00).contains(scalar) {
                    guard i + 1 < bytes.count, bytes[i] == 92, bytes[i + 1] == UInt8(ascii: "u") else { return nil }
                    i += 2
                    guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard scalar != 0, let u = Unicode.Scalar(scalar) else { return nil }
                out += Array(String(u).utf8)
            default: return nil
            }
        }
        return nil
    }

    /// Whether every byte is below 0x80, eight at a time.
    package static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var i = 0, high: UInt64 = 0
        while i + 8 <= bytes.count {
            high |= UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            i += 8
        }
        while i < bytes.count { high |= UInt64(bytes[i]); i += 1 }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// The first index from `i` where eight bytes in a row are not all
    /// plain string content (no `"`, `\\` or byte below 0x20 among them):
    /// the string loop takes the rest a byte at a time. Why: that loop's
    /// three tests a byte are most of reading a search response's strings.
    @inline(__always)
    static func plainRun(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = start
        while i + 8 <= bytes.count {
            let v = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let quote = v ^ (ones &* 0x22), backslash = v ^ (ones &* 0x5C)
            // A byte's high bit set where it is zero (or below 0x20); the
            // borrow can mark bytes after a true one, never before.
            let special = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (v &- ones &* 0x20) & ~v) & highs
            if special != 0 { break }
            i += 8
        }
        return i
    }

    /// Reads an object from the reader's position, `member` reading each
    /// member from its key on (the reader at the key's quote); false when
    /// the object does not read. The walk a reader of stored items shares
    /// (`AttributesLayout`, the response writer's `ItemMembers`).
    package mutating func members(_ member: (inout StrictJSONReader) -> Bool) -> Bool {
        skipSpace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return false }
        i += 1
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return true }
        while true {
            skipSpace()
            guard member(&self) else { return false }
            skipSpace()
            guard i < bytes.count else { return false }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return true }
            return false
        }
    }

    /// Whether the reader is at `"name"` (`name` the bytes between the
    /// quotes, no escapes), stepped over when it is: a known member name
    /// compared as bytes, with no `String` made of it.
    package mutating func steppedOver(quoted name: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = name.count
        guard i + n + 1 < bytes.count, bytes[i] == UInt8(ascii: "\""), bytes[i + n + 1] == UInt8(ascii: "\"") else { return false }
        for k in 0..<n where bytes[i + 1 + k] != name[k] { return false }
        i += n + 2
        return true
    }

    /// Steps over the `:` after a key and the space around it; false when
    /// it is not there.
    package mutating func colon() -> Bool {
        skipSpace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return false }
        i += 1
        skipSpace()
        return true
    }

    /// Steps over one value without building it; false when it does not parse.
    package mutating func skipValue() -> Bool {
        skipSpace()
        guard i < bytes.count else { return false }
        switch bytes[i] {
        case UInt8(ascii: "\""):
            // memchr to the next quote; it ends the string unless an odd
            // number of backslashes comes right before it. Long descriptions
            // are most of what a result skips.
            let start = i + 1
            var from = start
            guard let base = bytes.baseAddress else { return false }
            while from < bytes.count {
                guard let hit = memchr(base + from, 0x22, bytes.count - from) else { return false }
                let quote = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                var slashes = 0
                while quote - slashes - 1 >= start, bytes[quote - slashes - 1] == UInt8(ascii: "\\") { slashes += 1 }
                from = quote + 1
                if slashes % 2 == 0 { i = from; return true }
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
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            // Numbers are stepped over, not converted: the bytes a number may hold.
            let start = i
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                    UInt8(ascii: "e"), UInt8(ascii: "E"):
                    i += 1
                default:
                    return i > start
                }
            }
            return i > start
        default:
            return value() != nil
        }
    }

    package mutating func hex4() -> UInt32? {
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
