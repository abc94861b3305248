import Foundation

/// Encodes an `Encodable` into a `JSONValue` tree, which `JSONWriter` then
/// writes: the other half of ``JSONValueDecoder``. Every message is then
/// written by one writer, with no second pass through `JSONEncoder`.
///
/// As `JSONEncoder` does: `nil` optionals are left out (Swift's synthesized
/// `encodeIfPresent`), whole numbers stay whole, a `JSONValue` is copied as
/// it is. The tree is built from reference nodes, so nested containers need
/// no copying back, and turned into a `JSONValue` once at the end.
public struct JSONValueEncoder {
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        let root = Node()
        try root.set(value, path: [])
        return root.value
    }
}

/// A value under construction.
private final class Node {
    enum Kind {
        case empty
        case leaf(JSONValue)
        case object([String: Node])
        case array([Node])
    }
    var kind: Kind = .empty

    var value: JSONValue {
        switch kind {
        case .empty: return .object([:])
        case .leaf(let v): return v
        case .object(let o): return .object(o.mapValues(\.value))
        case .array(let a): return .array(a.map(\.value))
        }
    }

    /// Stores a scalar or a `JSONValue` directly; anything else encodes itself into this node.
    func set<T: Encodable>(_ v: T, path: [CodingKey]) throws {
        switch v {
        case let x as JSONValue: kind = .leaf(x)
        case let x as String: kind = .leaf(.string(x))
        case let x as Bool: kind = .leaf(.bool(x))
        case let x as Double: kind = .leaf(.number(x))
        case let x as Float: kind = .leaf(.number(Double(x)))
        case let x as Int: kind = .leaf(.number(Double(x)))
        case let x as Int64: kind = .leaf(.number(Double(x)))
        case let x as Int32: kind = .leaf(.number(Double(x)))
        case let x as UInt64: kind = .leaf(.number(Double(x)))
        case let x as UInt: kind = .leaf(.number(Double(x)))
        default: try v.encode(to: TreeEncoder(node: self, codingPath: path))
        }
    }

    func child(_ key: String) -> Node {
        if case .object(var o) = kind {
            if let c = o[key] { return c }
            let c = Node()
            kind = .empty  // one reference to the dictionary while it changes
            o[key] = c
            kind = .object(o)
            return c
        }
        let c = Node()
        kind = .object([key: c])
        return c
    }

    func appended() -> Node {
        let c = Node()
        if case .array(var a) = kind {
            kind = .empty
            a.append(c)
            kind = .array(a)
        } else {
            kind = .array([c])
        }
        return c
    }

    var count: Int {
        if case .array(let a) = kind { return a.count }
        return 0
    }
}

private struct TreeEncoder: Encoder {
    let node: Node
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = node.kind {} else { node.kind = .object([:]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        if case .array = node.kind {} else { node.kind = .array([]) }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleContainer(node: node, codingPath: codingPath) }
}

private struct IndexKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ i: Int) { stringValue = "\(i)"; intValue = i }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.init(intValue) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.child(key.stringValue).kind = .leaf(.null) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try node.child(key.stringValue).set(value, path: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        TreeEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        TreeEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> Encoder { TreeEncoder(node: node.child("super"), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> Encoder { TreeEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key]) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [CodingKey]
    var count: Int { node.count }

    mutating func encodeNil() throws { node.appended().kind = .leaf(.null) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = codingPath + [IndexKey(count)]
        try node.appended().set(value, path: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = codingPath + [IndexKey(count)]
        return TreeEncoder(node: node.appended(), codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let path = codingPath + [IndexKey(count)]
        return TreeEncoder(node: node.appended(), codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> Encoder { TreeEncoder(node: node.appended(), codingPath: codingPath) }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [CodingKey]
    mutating func encodeNil() throws { node.kind = .leaf(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.set(value, path: codingPath) }
}
