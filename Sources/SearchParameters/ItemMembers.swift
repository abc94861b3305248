import Foundation
import Items
import WireProtocol

/// What a hit's response entry is written from: the item's attributes (in
/// the item's order), its `domainIdentifier` and its `entity`, each value a
/// tree or the JSON text the shard sent (``Body/RankedHit/rawItem``).
///
/// Why the text: the coordinator's local worker reads each hit's item
/// straight out of the stored row; parsing it into dictionaries and strings
/// only to write them out again would be most of what a hit costs besides
/// its highlights. Values from text are copied into the response as they are
/// (the store wrote them with ``JSONWriter``, so they are its form already)
/// and parsed only when a highlight or a snippet needs their words.
struct ItemMembers {
    enum Value {
        case tree(JSONValue)
        case raw(ArraySlice<UInt8>)

        /// The value as a tree (parsed from the text when held as text).
        var tree: JSONValue? {
            switch self {
            case .tree(let v): return v
            case .raw(let bytes):
                return bytes.withUnsafeBufferPointer { StrictJSONReader.parse($0) } ?? (try? JSONValue.parse(Data(bytes)))
            }
        }

        /// The UTF-8 of the value when it is text held as JSON with no
        /// escapes: the bytes between its quotes, which are the string's.
        var plainText: ArraySlice<UInt8>? {
            guard case .raw(let bytes) = self, bytes.count >= 2, bytes.first == UInt8(ascii: "\""),
                bytes.last == UInt8(ascii: "\""), !bytes.contains(UInt8(ascii: "\\"))
            else { return nil }
            return bytes.dropFirst().dropLast()
        }

        /// About the size of the value's JSON text, for sizing buffers
        /// (exact for text, a guess for a tree).
        var textSize: Int {
            switch self {
            case .tree(let v): if case .string(let s) = v { s.utf8.count + 2 } else { 64 }
            case .raw(let bytes): bytes.count
            }
        }

        /// Text, or a list holding text (``SearchResponseBuilder/isText(_:)``).
        var isText: Bool {
            switch self {
            case .tree(let v): return SearchResponseBuilder.isText(v)
            case .raw(let bytes):
                guard let first = bytes.first else { return false }
                if first == UInt8(ascii: "\"") { return true }
                return first == UInt8(ascii: "[") && tree.map(SearchResponseBuilder.isText) == true
            }
        }
    }

    var attributes: [(key: String, value: Value)] = []
    var domain: Value?
    var entity: Value?

    init(tree item: JSONValue) {
        guard case .object(let fields) = item else { return }
        // The item's members in one pass, not a lookup each.
        for (k, v) in fields {
            switch k {
            case "attributes": attributes = (v.objectValue ?? [:]).map { ($0.key, .tree($0.value)) }
            case "domainIdentifier": domain = .tree(v)
            case "entity": entity = .tree(v)
            default: break
            }
        }
    }

    /// The members of an item's JSON text; nil when it is not an object
    /// that reads (the caller then parses it whole). An `attributes` that is
    /// not an object counts as none, as in ``init(tree:)``.
    init?(raw: RawJSON) {
        let bytes = raw.bytes
        let base = bytes.startIndex
        let read: ItemMembers? = bytes.withUnsafeBufferPointer { buffer in
            var reader = StrictJSONReader(bytes: buffer)
            var members = ItemMembers(tree: .null)
            func slice(_ from: Int, _ to: Int) -> ArraySlice<UInt8> { bytes[(base + from)..<(base + to)] }
            let read = reader.members { reader in
                let which = Self.topKey(&reader)
                guard which != .unreadable, reader.colon() else { return false }
                let start = reader.i
                if which == .attributes, start < reader.bytes.count, reader.bytes[start] == UInt8(ascii: "{") {
                    return reader.members { reader in
                        guard let key = reader.string(), reader.colon() else { return false }
                        let valueStart = reader.i
                        guard reader.skipValue() else { return false }
                        members.attributes.append((key, .raw(slice(valueStart, reader.i))))
                        return true
                    }
                }
                guard reader.skipValue() else { return false }
                switch which {
                case .domain: members.domain = .raw(slice(start, reader.i))
                case .entity: members.entity = .raw(slice(start, reader.i))
                default: break
                }
                return true
            }
            reader.skipSpace()
            return read && reader.i == buffer.count ? members : nil
        }
        guard let read else { return nil }
        self = read
    }

    enum TopKey { case attributes, domain, entity, other, unreadable }

    /// The item's member name the reader is at, stepped over: the three the
    /// writer takes compared as bytes (two are 16 bytes long, a `String`
    /// allocation each when made), any other read as a string.
    static func topKey(_ reader: inout StrictJSONReader) -> TopKey {
        for (name, key) in keyTable
        where reader.steppedOver(quoted: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)) { return key }
        return reader.string() == nil ? .unreadable : .other
    }

    static let keyTable: [(StaticString, TopKey)] = [("attributes", .attributes), ("domainIdentifier", .domain), ("entity", .entity)]
}
