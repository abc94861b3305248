/// Compact JSON text, written by hand.
///
/// `JSONEncoder` costs more than the rest of a write on Linux, and every item
/// is serialised several times on its way (coordinator → indexer → store).
/// Keys are sorted, so equal values always give equal bytes.
public enum JSONWriter {
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        write(value, into: &out)
        return out
    }

    public static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out += "null".utf8
        case .bool(let b): out += (b ? "true" : "false").utf8
        case .number(let d):
            if d.rounded() == d, abs(d) < 9.0e15 {
                writeInteger(Int64(d), into: &out)
            } else if d.isFinite {
                out += String(d).utf8
            } else {
                out += "null".utf8
            }  // JSON has no infinities; items never hold them
        case .string(let s): writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(v, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            // The members' positions are sorted, not copies of the members
            // (each a key and a value to retain and release).
            for (i, index) in o.indices.sorted(by: { o[$0].key < o[$1].key }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(o[index].key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(o[index].value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A whole number's decimal digits, without a `String` in between
    /// (responses are mostly counts, ranks and positions).
    public static func writeInteger(_ n: Int64, into out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var m = n.magnitude
        if m < 10 { out.append(UInt8(ascii: "0") + UInt8(m)); return }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while m > 0 {
                buffer[23 - count] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                count += 1
            }
            out.append(contentsOf: buffer[(24 - count)...])
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Runs of bytes that need no escape are copied whole: most text has none.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { writeEscaped($0, into: &out) }
        out.append(UInt8(ascii: "\""))
    }

    /// UTF-8 text as the inside of a JSON string (no quotes around it):
    /// ``writeString(_:into:)``'s escapes, for a caller that writes a string
    /// in pieces (a highlighted value between its tags).
    public static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var start = 0
        for i in 0..<bytes.count {
            let b = bytes[i]
            guard b < 32 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            if i > start { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i])) }
            start = i + 1
            out.append(92)
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
            case 10: out.append(UInt8(ascii: "n"))
            case 13: out.append(UInt8(ascii: "r"))
            case 9: out.append(UInt8(ascii: "t"))
            default: out.append(contentsOf: [UInt8(ascii: "u"), 48, 48, hexDigits[Int(b >> 4)], hexDigits[Int(b & 15)]])
            }
        }
        if bytes.count > start { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<bytes.count])) }
    }
}

/// The members of one JSON object, written in ``JSONWriter``'s form (keys
/// sorted, a key set twice keeping its last value) without a dictionary; a
/// member's value is a tree or bytes already written (one JSON value each),
/// spliced in as they are: a search response's hits, or a frame's response.
public struct JSONObjectWriter {
    enum Value { case tree(JSONValue), bytes(ArraySlice<UInt8>) }
    var members: [(key: String, value: Value)] = []

    public init() {}

    /// A writer with room for `capacity` members before its list grows.
    public init(capacity: Int) { members.reserveCapacity(capacity) }

    public mutating func set(_ key: String, _ value: JSONValue) { members.append((key, .tree(value))) }

    /// `bytes` must hold exactly one well-formed JSON value.
    public mutating func set(_ key: String, bytes: ArraySlice<UInt8>) { members.append((key, .bytes(bytes))) }

    public mutating func set(_ key: String, bytes: [UInt8]) { set(key, bytes: bytes[...]) }

    public func write(into out: inout [UInt8]) {
        members.withUnsafeBufferPointer { members in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: members.count) { buffer in
                var order = buffer
                // Positions sorted by key, then by when they were set,
                // through buffers: sorting an array of positions with a
                // closure over the members array retains and releases it
                // at every comparison, a third of writing a search hit.
                for i in 0..<members.count { order[i] = i }
                order.sort { a, b in members[a].key != members[b].key ? members[a].key < members[b].key : a < b }
                out.append(UInt8(ascii: "{"))
                var first = true
                for i in 0..<members.count {
                    let k = order[i]
                    if i + 1 < members.count, members[order[i + 1]].key == members[k].key { continue }  // set again later
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    JSONWriter.writeString(members[k].key, into: &out)
                    out.append(UInt8(ascii: ":"))
                    switch members[k].value {
                    case .tree(let v): JSONWriter.write(v, into: &out)
                    case .bytes(let b): out += b
                    }
                }
                out.append(UInt8(ascii: "}"))
            }
        }
    }
}
