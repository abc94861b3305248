import Foundation
import Items

/// Reads the JSON the store itself wrote (``JSONWriter``) back, with the
/// strict reader of `Items` plus what results need: skipping the attributes
/// a query did not ask for.
///
/// Fetching results is the largest cost of a query that returns its first
/// twenty items; `JSONSerialization` spends most of it bridging through
/// Foundation objects. This reader builds the value tree directly. It accepts
/// standard JSON; anything it does not understand yields nil and the caller
/// falls back to Foundation.
extension StrictJSONReader {
    /// An item with only the `attributes` named in `keep`: what parsing the
    /// whole item and filtering would give, without building the values of
    /// the other attributes (a result that asks for a title does not decode
    /// a description and a list of dependencies). Nil when the item is not
    /// an object or anything does not parse.
    ///
    /// `uid`: the item's identifier as the caller read it (the `items.uid`
    /// column), given back as the `uniqueIdentifier` value it equals instead
    /// of a second copy. The dictionary is made at the size of an item's
    /// usual members, and those members' names are the same strings every
    /// time: a search's 20 hits made ~8 allocations each here.
    ///
    /// `layout`: where the item's `attributes` and their keys are (see
    /// ``AttributesLayout``): the kept ones are then read where they are,
    /// and the others not stepped over. The same value either way.
    static func parseItem(
        _ bytes: UnsafeBufferPointer<UInt8>, keepingAttributes keep: FetchList, uid: String? = nil,
        layout: AttributesLayout? = nil
    ) -> JSONValue? {
        var reader = StrictJSONReader(bytes: bytes)
        var object = [String: JSONValue](minimumCapacity: 4)
        let read = reader.members { reader in
            guard let key = reader.knownKey() ?? reader.string(), reader.colon() else { return false }
            if key == "attributes" {
                if let layout, reader.i == layout.start {
                    guard let attrs = reader.attributes(keeping: keep, layout) else { return false }
                    object[key] = attrs
                    reader.i = layout.end
                } else {
                    guard let attrs = reader.object(keeping: keep) else { return false }
                    object[key] = attrs
                }
            } else if key == "uniqueIdentifier", let uid, reader.matchesString(uid) {
                object[key] = .string(uid)
            } else {
                guard let v = reader.value() else { return false }
                object[key] = v
            }
            return true
        }
        guard read else { return nil }
        reader.skipSpace()
        return reader.i == bytes.count ? .object(object) : nil
    }

    /// The `attributes` object ``object(keeping:)`` reads, from its layout:
    /// each kept key is found among the layout's (their bytes are their
    /// text, so a name with a quote or a backslash is none of them) and
    /// only its value is read.
    mutating func attributes(keeping keep: FetchList, _ layout: AttributesLayout) -> JSONValue? {
        var object: [String: JSONValue] = [:]
        guard let base = bytes.baseAddress else { return nil }
        for key in layout.keys {
            let at = Int(key)
            for (n, name) in keep.utf8.enumerated() where keep.plain[n] {
                let close = at + 1 + name.count
                guard close < layout.end, bytes[close] == UInt8(ascii: "\""),
                    name.withUnsafeBufferPointer({ $0.isEmpty || memcmp($0.baseAddress!, base + at + 1, $0.count) == 0 })
                else { continue }
                i = close + 1
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                guard let v = value() else { return nil }
                object[keep.list[n]] = v
                break
            }
        }
        return .object(object)
    }

    /// The top-level member names the store writes, as the same strings
    /// every time (16 bytes and more are allocated when made from bytes).
    static let knownKeys: [(bytes: [UInt8], key: String)] = ["attributes", "domainIdentifier", "uniqueIdentifier", "entity"]
        .map { (Array($0.utf8), $0) }

    /// One of ``knownKeys`` when the reader is at it (quotes included, no
    /// escapes), stepped over; nil, and the reader where it was, otherwise.
    mutating func knownKey() -> String? {
        for (name, key) in Self.knownKeys where name.withUnsafeBufferPointer({ steppedOver(quoted: $0) }) { return key }
        return nil
    }

    /// Whether the reader is at a JSON string without escapes whose text is
    /// `s`; stepped over when it is.
    mutating func matchesString(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { text in !text.contains(UInt8(ascii: "\\")) && steppedOver(quoted: text) }
    }

    /// ``parseItem(_:keepingAttributes:uid:layout:)`` as JSON text: the stored text's
    /// members copied as they are, `attributes` only with those in `keep`.
    /// The store writes items with ``JSONWriter`` (compact, keys sorted), so
    /// this is what writing the parsed item would give, without building it.
    /// Nil when the item is not an object or anything does not parse.
    static func projectItem(_ bytes: UnsafeBufferPointer<UInt8>, keepingAttributes keep: FetchList) -> [UInt8]? {
        var reader = StrictJSONReader(bytes: bytes)
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(UInt8(ascii: "{"))
        var first = true
        let read = reader.members { reader in
            let keyStart = reader.i
            guard let key = reader.string() else { return false }
            let keyEnd = reader.i
            guard reader.colon() else { return false }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out += UnsafeBufferPointer(rebasing: bytes[keyStart..<keyEnd])
            out.append(UInt8(ascii: ":"))
            if key == "attributes" { return reader.project(keeping: keep, into: &out) }
            let start = reader.i
            guard reader.skipValue() else { return false }
            out += UnsafeBufferPointer(rebasing: bytes[start..<reader.i])
            return true
        }
        guard read else { return nil }
        out.append(UInt8(ascii: "}"))
        reader.skipSpace()
        return reader.i == bytes.count ? out : nil
    }

    /// ``projectItem(_:keepingAttributes:)`` from the `attributes` object's
    /// layout: the bytes before and after the object copied as they are,
    /// and of the object only the kept members, each from its key to the
    /// comma (or brace) that ends it. Nil when the bytes are not in
    /// ``JSONWriter``'s compact form there (space around a member's colon,
    /// after its value, or between it and the next key): the caller walks
    /// the item instead.
    /// Why: walking stepped over every value of the item (a package's long
    /// description) to copy a title (see ``SearchHit/rawItem``).
    static func projectItem(
        _ bytes: UnsafeBufferPointer<UInt8>, keepingAttributes keep: FetchList,
        layout: AttributesLayout
    ) -> [UInt8]? {
        guard let base = bytes.baseAddress, layout.start > 0, layout.end <= bytes.count, layout.end > layout.start + 1,
            bytes[layout.start] == UInt8(ascii: "{"), bytes[layout.end - 1] == UInt8(ascii: "}")
        else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count - (layout.end - layout.start) + 64)
        out += UnsafeBufferPointer(rebasing: bytes[0...layout.start])
        var first = true
        var k = layout.keys.startIndex
        while k < layout.keys.endIndex {
            let at = Int(layout.keys[k])
            let next = k + 1
            let end = next < layout.keys.endIndex ? Int(layout.keys[next]) - 1 : layout.end - 1
            guard at < end, end < bytes.count, !Self.isSpace(bytes[end - 1]),
                bytes[end] == (next < layout.keys.endIndex ? UInt8(ascii: ",") : UInt8(ascii: "}"))
            else { return nil }
            for (n, name) in keep.utf8.enumerated() where keep.plain[n] {
                let close = at + 1 + name.count
                guard close < end, bytes[close] == UInt8(ascii: "\""),
                    name.withUnsafeBufferPointer({ $0.isEmpty || memcmp($0.baseAddress!, base + at + 1, $0.count) == 0 })
                else { continue }
                guard close + 2 < end, bytes[close + 1] == UInt8(ascii: ":"), !Self.isSpace(bytes[close + 2]) else { return nil }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out += UnsafeBufferPointer(rebasing: bytes[at..<end])
                break
            }
            k = next
        }
        out += UnsafeBufferPointer(rebasing: bytes[(layout.end - 1)..<bytes.count])
        return out
    }

    static func isSpace(_ b: UInt8) -> Bool { b == 32 || b == 10 || b == 13 || b == 9 }

    /// ``object(keeping:)`` as JSON text, appended to `out`.
    mutating func project(keeping keep: FetchList, into out: inout [UInt8]) -> Bool {
        skipSpace()
        let start = i
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else {
            guard skipValue() else { return false }
            out += UnsafeBufferPointer(rebasing: bytes[start..<i])
            return true
        }
        out.append(UInt8(ascii: "{"))
        var first = true
        let read = members { reader in
            let keyStart = reader.i
            guard let key = reader.key(keptBy: keep) else { return false }
            let keyEnd = reader.i
            guard reader.colon() else { return false }
            let valueStart = reader.i
            guard reader.skipValue() else { return false }
            if key.kept {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out += UnsafeBufferPointer(rebasing: reader.bytes[keyStart..<keyEnd])
                out.append(UInt8(ascii: ":"))
                out += UnsafeBufferPointer(rebasing: reader.bytes[valueStart..<reader.i])
            }
            return true
        }
        guard read else { return false }
        out.append(UInt8(ascii: "}"))
        return true
    }

    /// An object with only the members named in `keep`; the others are skipped.
    /// A value that is not an object is parsed whole (filtering leaves it be).
    mutating func object(keeping keep: FetchList) -> JSONValue? {
        skipSpace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return value() }
        var object: [String: JSONValue] = [:]
        let read = members { reader in
            guard let key = reader.key(keptBy: keep), reader.colon() else { return false }
            guard key.kept else { return reader.skipValue() }
            guard let v = reader.value() else { return false }
            object[key.escaped ?? String(decoding: key.plain, as: UTF8.self)] = v
            return true
        }
        return read ? .object(object) : nil
    }

    /// Reads an object's key (the reader at its quote) and tells whether
    /// `keep` names it; nil when it does not read. A key without escapes is
    /// compared as bytes (`plain`, the bytes between its quotes), so that a
    /// key skipped never becomes a `String`: most keys are skipped. A key
    /// with escapes is read into `escaped`.
    mutating func key(keptBy keep: FetchList) -> (kept: Bool, plain: UnsafeBufferPointer<UInt8>, escaped: String?)? {
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
        var end = i + 1
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 32 { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let raw = UnsafeBufferPointer(rebasing: bytes[(i + 1)..<end])
            i = end + 1
            return (keep.contains(raw), raw, nil)
        }
        guard let escaped = string() else { return nil }
        return (keep.names.contains(escaped), UnsafeBufferPointer(rebasing: bytes[i..<i]), escaped)
    }
}

/// The attributes a query fetches, ready to be compared with the keys of
/// stored JSON before those are decoded.
struct FetchList {
    let names: Set<String>
    /// The names, each once, and their bytes in the same order.
    let list: [String]
    let utf8: [[UInt8]]
    /// Per name, whether it holds neither a quote nor a backslash: only
    /// such a name can be a key written without escapes (see
    /// ``StrictJSONReader/attributes(keeping:_:)``).
    let plain: [Bool]

    init(_ names: some Sequence<String>) {
        self.names = Set(names)
        list = Array(self.names)
        utf8 = list.map { Array($0.utf8) }
        plain = utf8.map { !$0.contains(UInt8(ascii: "\"")) && !$0.contains(UInt8(ascii: "\\")) }
    }

    func contains(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        utf8.contains { $0.count == key.count && $0.elementsEqual(key) }
    }
}
