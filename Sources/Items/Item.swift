import Foundation

/// A geographic point, as Core Spotlight's `latitude`/`longitude` pair.
public struct Location: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// One attribute value. Dates are kept as `Date` and stored as seconds since
/// Apple's reference date (`timeIntervalSinceReferenceDate`, the start of the
/// year 2001 in UTC), which Spotlight query strings compare against.
public enum AttributeValue: Sendable, Hashable {
    case text(String)
    case number(Double)
    case date(Date)
    case boolean(Bool)
    case location(Location)
    case list([AttributeValue])

    /// The values one by one: a list's elements, or the value itself.
    public var elements: [AttributeValue] {
        if case .list(let l) = self { return l }
        return [self]
    }

    public var type: ValueType? {
        switch self {
        case .text: .text
        case .number: .number
        case .date: .date
        case .boolean: .boolean
        case .location: .location
        case .list(let l): l.first?.type
        }
    }

    /// The JSON form: dates as ISO-8601 strings, locations as objects.
    public var json: JSONValue {
        switch self {
        case .text(let s): .string(s)
        case .number(let d): .number(d)
        case .date(let d): .string(ISODate.format(d))
        case .boolean(let b): .bool(b)
        case .location(let l): .object(["latitude": .number(l.latitude), "longitude": .number(l.longitude)])
        case .list(let l): .array(l.map(\.json))
        }
    }
}

/// Associates an item with an App Intents entity; `priority` weighs it in ranking.
public struct EntityAssociation: Sendable, Hashable, Codable {
    public var type: String
    public var id: String
    public var priority: Double
    public init(type: String, id: String, priority: Double = 0) {
        self.type = type
        self.id = id
        self.priority = priority
    }
}

/// A searchable item: Core Spotlight's `CSSearchableItem`.
public struct Item: Sendable, Hashable {
    /// Unique within the app; publishing the same identifier again replaces the item.
    public var uniqueIdentifier: String
    /// Dotted and hierarchical (`org.debian.games`); the shard key. Empty when absent.
    public var domainIdentifier: String
    public var expirationDate: Date?
    public var attributes: [String: AttributeValue]
    public var entity: EntityAssociation?

    public init(
        uniqueIdentifier: String, domainIdentifier: String = "", expirationDate: Date? = nil,
        attributes: [String: AttributeValue] = [:], entity: EntityAssociation? = nil
    ) {
        self.uniqueIdentifier = uniqueIdentifier
        self.domainIdentifier = domainIdentifier
        self.expirationDate = expirationDate
        self.attributes = attributes
        self.entity = entity
    }

    /// The item as JSON, in the same shape producers send.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "uniqueIdentifier": .string(uniqueIdentifier),
            "domainIdentifier": .string(domainIdentifier),
            "attributes": .object(attributes.mapValues(\.json)),
        ]
        if let expirationDate { o["expirationDate"] = .string(ISODate.format(expirationDate)) }
        if let entity {
            o["entity"] = .object(["type": .string(entity.type), "id": .string(entity.id), "priority": .number(entity.priority)])
        }
        return .object(o)
    }

    /// The JSON form restricted to some attributes (`fetchAttributes`); `nil` keeps all.
    public func json(fetching names: [String]?) -> JSONValue {
        guard let names else { return json }
        var copy = self
        copy.attributes = attributes.filter { names.contains($0.key) }
        return copy.json
    }
}

/// Domain identifiers are dotted paths: deleting `org.debian` deletes `org.debian.games`.
public enum DomainIdentifier {
    /// Empty, or dot-separated non-empty components without spaces, at most 512 bytes.
    public static func isValid(_ domain: String) -> Bool {
        if domain.isEmpty { return true }
        guard domain.utf8.count <= 512 else { return false }
        if let ascii = asciiIsValid(domain) { return ascii }
        return domain.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && !part.contains(where: { $0.isWhitespace })
        }
    }

    /// ``isValid(_:)`` byte by byte for an ASCII domain, nil when a byte is
    /// not ASCII (the Character walk decides those). Every item's domain is
    /// checked by the coordinator that routes it and by the shard that
    /// stores it, and walking Characters and their Unicode properties for
    /// each was a visible share of a write's cost.
    static func asciiIsValid(_ domain: String) -> Bool? {
        var partLength = 0
        for b in domain.utf8 {
            if b >= 0x80 { return nil }
            if b == UInt8(ascii: ".") {
                if partLength == 0 { return false }
                partLength = 0
                continue
            }
            // Unicode's White_Space within ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
            if (b >= 0x09 && b <= 0x0D) || b == 0x20 { return false }
            partLength += 1
        }
        return partLength > 0
    }

    /// True when `domain` is `ancestor` or lies below it.
    public static func domain(_ domain: String, isWithin ancestor: String) -> Bool {
        domain == ancestor || domain.hasPrefix(ancestor + ".")
    }
}
