import Foundation

/// A JSON document as a value tree.
///
/// Items arrive as JSON from producers in any language, and must be checked
/// field by field so that a rejection can say *which* field was wrong. A typed
/// `Codable` model would fail a whole batch on the first bad field; a value
/// tree lets the item decoder walk the document and report precisely.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var doubleValue: Double? {
        if case .number(let d) = self { return d }
        return nil
    }

    public var intValue: Int? {
        if case .number(let d) = self, d.rounded() == d, abs(d) < 9.0e15 { return Int(d) }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// A short name of the JSON kind, for error messages ("expected text, found number").
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "text"
        case .array: "list"
        case .object: "object"
        }
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let d = try? c.decode(Double.self) {
            self = .number(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let d):
            if d.rounded() == d, abs(d) < 9.0e15 { try c.encode(Int64(d)) } else { try c.encode(d) }
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}

extension JSONValue {
    /// Parses JSON text: with ``StrictJSONReader`` when it accepts the text
    /// (valid UTF-8, plain JSON), else with `JSONSerialization` (markedly
    /// faster than `JSONDecoder` on Linux for untyped documents), which also
    /// words the errors.
    public static func parse(_ data: Data) throws -> JSONValue {
        // ASCII, a frame's usual text, is valid UTF-8 as it is: read in
        // place, without a string made of the whole frame first (a copy of a
        // search response's ~5 KB and its validation at every reply).
        if let fast = data.withUnsafeBytes({ raw -> JSONValue? in
            let bytes = raw.bindMemory(to: UInt8.self)
            return StrictJSONReader.isASCII(bytes) ? StrictJSONReader.parse(bytes) : nil
        }) {
            return fast
        }
        if let text = String(validating: data, as: UTF8.self) { return try parse(text) }
        return try parseWithFoundation(data)
    }

    public static func parse(_ text: String) throws -> JSONValue {
        var text = text
        if let fast = text.withUTF8({ StrictJSONReader.parse($0) }) { return fast }
        return try parseWithFoundation(Data(text.utf8))
    }

    /// `JSONSerialization` alone: the reference for ``parse(_:)-swift.type.method``.
    public static func parseWithFoundation(_ data: Data) throws -> JSONValue {
        let any = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        return JSONValue(foundation: any)
    }

    init(foundation any: Any) {
        switch any {
        case is NSNull: self = .null
        case let s as String: self = .string(s)
        case let n as NSNumber:
            // JSONSerialization gives booleans as NSNumber too; tell them apart by type.
            if CFGetTypeIDIsBoolean(n) { self = .bool(n.boolValue) } else { self = .number(n.doubleValue) }
        case let a as [Any]: self = .array(a.map(JSONValue.init(foundation:)))
        case let o as [String: Any]:
            var out: [String: JSONValue] = [:]
            out.reserveCapacity(o.count)
            for (k, v) in o { out[k] = JSONValue(foundation: v) }
            self = .object(out)
        default: self = .string(String(describing: any))
        }
    }

    /// Serialises compactly with sorted keys, so equal values give equal bytes.
    public func serialized() -> Data {
        Data(JSONWriter.bytes(self))
    }

    public func serializedString() -> String {
        JSONWriter.string(self)
    }
}

private func CFGetTypeIDIsBoolean(_ n: NSNumber) -> Bool {
    // On Linux, swift-corelibs-foundation bridges JSON booleans to NSNumber
    // whose objCType is "c" (char); numbers never use that encoding.
    String(cString: n.objCType) == "c"
}
