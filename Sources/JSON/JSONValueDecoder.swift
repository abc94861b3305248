import Foundation

/// Decodes a `Decodable` from a `JSONValue` that is already parsed.
///
/// A frame is parsed once, into a `JSONValue`, to read its envelope; the
/// body's `Codable` type is then decoded from that tree instead of handing
/// the bytes to `JSONDecoder`, which would parse them a second time (the
/// message path's largest fixed cost for messages without items).
///
/// It follows `JSONDecoder`'s rules for what the wire carries: numbers decode
/// into any numeric type they fit exactly, `null` is a missing optional,
/// unknown keys are ignored; errors are `DecodingError`s with the coding path.
public struct JSONValueDecoder {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try T(from: ValueDecoder(value: value, codingPath: []))
    }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ expected: String) -> DecodingError {
        .typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(value.kindName)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let o) = value else { throw mismatch("an object") }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: o, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard case .array(let a) = value else { throw mismatch("a list") }
        return UnkeyedContainer(array: a, codingPath: codingPath)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleContainer(value: value, codingPath: codingPath) }
}

private struct IndexKey: CodingKey {
    var stringValue: String { "\(intValue!)" }
    var intValue: Int?
    init(_ i: Int) { intValue = i }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

/// Scalar decoding shared by the containers.
private enum Scalars {
    static func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue, _ path: [CodingKey]) throws -> T {
        func mismatch(_ what: String) -> DecodingError {
            .typeMismatch(T.self, .init(codingPath: path, debugDescription: "expected \(what), found \(value.kindName)"))
        }
        // JSONValue itself: the tree as it is.
        if T.self == JSONValue.self { return value as! T }
        switch T.self {
        case is String.Type:
            guard case .string(let s) = value else { throw mismatch("text") }
            return s as! T
        case is Bool.Type:
            guard case .bool(let b) = value else { throw mismatch("true or false") }
            return b as! T
        case is Double.Type:
            guard case .number(let d) = value else { throw mismatch("a number") }
            return d as! T
        case is Float.Type:
            guard case .number(let d) = value else { throw mismatch("a number") }
            return Float(d) as! T
        case is Int.Type:
            guard case .number(let d) = value, let i = Int(exactly: d) else { throw mismatch("a whole number") }
            return i as! T
        case is Int64.Type:
            guard case .number(let d) = value, let i = Int64(exactly: d) else { throw mismatch("a whole number") }
            return i as! T
        case is Int32.Type:
            guard case .number(let d) = value, let i = Int32(exactly: d) else { throw mismatch("a whole number") }
            return i as! T
        case is UInt64.Type:
            guard case .number(let d) = value, let i = UInt64(exactly: d) else { throw mismatch("a whole number") }
            return i as! T
        case is UInt.Type:
            guard case .number(let d) = value, let i = UInt(exactly: d) else { throw mismatch("a whole number") }
            return i as! T
        default:
            return try T(from: ValueDecoder(value: value, codingPath: path))
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSONValue]
    let codingPath: [CodingKey]

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    func value(_ key: Key) throws -> JSONValue {
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for '\(key.stringValue)'"))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { (object[key.stringValue] ?? .null) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let v = try value(key)
        if v == .null, T.self != JSONValue.self {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath + [key], debugDescription: "'\(key.stringValue)' is null"))
        }
        return try Scalars.decode(T.self, v, codingPath + [key])
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let v = object[key.stringValue], v != .null else { return nil }
        return try Scalars.decode(T.self, v, codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> Decoder { ValueDecoder(value: .object(object), codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> Decoder { ValueDecoder(value: try value(key), codingPath: codingPath + [key]) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let array: [JSONValue]
    let codingPath: [CodingKey]
    var currentIndex = 0
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    init(array: [JSONValue], codingPath: [CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    mutating func next() throws -> (JSONValue, [CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "the list has no more elements"))
        }
        defer { currentIndex += 1 }
        return (array[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, path) = try next()
        return try Scalars.decode(T.self, v, path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> Decoder {
        let (v, path) = try next()
        return ValueDecoder(value: v, codingPath: path)
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [CodingKey]
    func decodeNil() -> Bool { value == .null }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Scalars.decode(T.self, value, codingPath) }
}
