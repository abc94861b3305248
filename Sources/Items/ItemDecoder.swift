import Foundation

/// Turns producer JSON into checked items.
///
/// Each item is checked on its own, so one bad item in a batch is rejected
/// with its reason while the rest are stored. Limits are fixed here, in one
/// place, so the error messages and the documentation agree.
public struct ItemDecoder: Sendable {
    public static let maxIdentifierBytes = 1024
    public static let maxTextBytes = 256 * 1024
    public static let maxListCount = 1024
    public static let maxAttributes = 512

    public var schema: AttributeSchema

    public init(schema: AttributeSchema = AttributeSchema()) {
        self.schema = schema
    }

    /// Decodes one line of JSON text.
    public func decode(line: some StringProtocol) throws(ItemError) -> Item {
        let value: JSONValue
        do { value = try JSONValue.parse(Data(line.utf8)) } catch {
            throw ItemError(.invalidJSON, "not valid JSON")
        }
        return try decode(value)
    }

    public func decode(_ json: JSONValue) throws(ItemError) -> Item {
        try decode(json, keepingAttributes: true)
    }

    /// Checks an item as ``decode(_:)`` does, refusing what it refuses, but
    /// keeps no attribute: for a check ahead of a publish (the REST API
    /// checks a whole batch before storing any of it), where the item is
    /// sent on as JSON and the shard decodes it again.
    public func check(_ json: JSONValue) throws(ItemError) {
        _ = try decode(json, keepingAttributes: false)
    }

    func decode(_ json: JSONValue, keepingAttributes keep: Bool) throws(ItemError) -> Item {
        guard case .object(let o) = json else {
            throw ItemError(.notAnObject, "an item must be a JSON object, found \(json.kindName)")
        }
        guard let uidValue = o["uniqueIdentifier"], uidValue != .null else {
            throw ItemError(.missingIdentifier, "uniqueIdentifier is missing", field: "uniqueIdentifier")
        }
        guard case .string(let uid) = uidValue else {
            throw ItemError(.invalidIdentifier, "uniqueIdentifier must be text, found \(uidValue.kindName)", field: "uniqueIdentifier")
        }
        guard !uid.isEmpty else {
            throw ItemError(.missingIdentifier, "uniqueIdentifier is empty", field: "uniqueIdentifier")
        }
        guard uid.utf8.count <= Self.maxIdentifierBytes else {
            throw ItemError(.valueTooLong, "uniqueIdentifier is longer than \(Self.maxIdentifierBytes) bytes", field: "uniqueIdentifier")
        }
        var domain = ""
        if let d = o["domainIdentifier"], d != .null {
            guard case .string(let s) = d else {
                throw ItemError(.invalidDomain, "domainIdentifier must be text, found \(d.kindName)", field: "domainIdentifier")
            }
            guard DomainIdentifier.isValid(s) else {
                throw ItemError(
                    .invalidDomain, "domainIdentifier '\(s)' must be dot-separated names without spaces or empty parts", field: "domainIdentifier")
            }
            domain = s
        }
        var expiration: Date?
        if let e = o["expirationDate"], e != .null {
            expiration = try date(e, field: "expirationDate")
        }
        var attributes: [String: AttributeValue] = [:]
        if let a = o["attributes"], a != .null {
            guard case .object(let attrs) = a else {
                throw ItemError(.notAnObject, "attributes must be an object, found \(a.kindName)", field: "attributes")
            }
            guard attrs.count <= Self.maxAttributes else {
                throw ItemError(.tooManyValues, "more than \(Self.maxAttributes) attributes", field: "attributes")
            }
            for (name, raw) in attrs where raw != .null {
                let field = "attributes." + name
                guard AttributeName.isValid(name) else {
                    throw ItemError(
                        .invalidAttributeName, "'\(name)' is not a valid attribute name (a letter, then letters, digits, '_', '.', '-'; at most 128)",
                        field: field)
                }
                let value = try attributeValue(raw, spec: schema.spec(for: name), field: field)
                if keep { attributes[name] = value }
            }
        }
        // latitude and longitude together also give the item its `location`.
        if attributes["location"] == nil, case .number(let lat)? = attributes["latitude"],
            case .number(let lon)? = attributes["longitude"]
        {
            attributes["location"] = .location(Location(latitude: lat, longitude: lon))
        }
        var entity: EntityAssociation?
        if let e = o["entity"], e != .null {
            guard case .object(let eo) = e, let type = eo["type"]?.stringValue, !type.isEmpty else {
                throw ItemError(.invalidEntity, "entity must be an object with a text 'type'", field: "entity")
            }
            let id: String
            switch eo["id"] {
            case .string(let s)?: id = s
            case .number(let n)?: id = n.rounded() == n ? String(Int64(n)) : String(n)
            default: throw ItemError(.invalidEntity, "entity needs an 'id' (text or number)", field: "entity.id")
            }
            var priority = 0.0
            if let p = eo["priority"], p != .null {
                guard case .number(let n) = p else {
                    throw ItemError(.invalidEntity, "entity priority must be a number, found \(p.kindName)", field: "entity.priority")
                }
                priority = n
            }
            entity = EntityAssociation(type: type, id: id, priority: priority)
        }
        return Item(
            uniqueIdentifier: uid, domainIdentifier: domain, expirationDate: expiration,
            attributes: attributes, entity: entity)
    }

    func attributeValue(_ raw: JSONValue, spec: AttributeSpec?, field: String) throws(ItemError) -> AttributeValue {
        guard let spec else { return try inferred(raw, field: field) }
        if case .array(let elements) = raw {
            guard spec.multiValued else {
                throw ItemError(.wrongType, "\(spec.name) takes one \(spec.type.rawValue) value, found a list", field: field)
            }
            guard elements.count <= Self.maxListCount else {
                throw ItemError(.tooManyValues, "more than \(Self.maxListCount) values", field: field)
            }
            var out: [AttributeValue] = []
            out.reserveCapacity(elements.count)
            for (i, e) in elements.enumerated() where e != .null {
                out.append(try single(e, type: spec.type, name: spec.name, field: "\(field)[\(i)]"))
            }
            return .list(out)
        }
        let v = try single(raw, type: spec.type, name: spec.name, field: field)
        return spec.multiValued ? .list([v]) : v
    }

    func single(_ raw: JSONValue, type: ValueType, name: String, field: String) throws(ItemError) -> AttributeValue {
        switch (type, raw) {
        case (.text, .string(let s)):
            return .text(try checkedText(s, field: field))
        case (.text, .object):
            guard let name = Self.referenceName(raw) else {
                throw ItemError(.wrongType, "\(name) must be text (or a reference {\"recordName\": …}), found an object", field: field)
            }
            return .text(try checkedText(name, field: field))
        case (.number, .number(let n)):
            guard n.isFinite else { throw ItemError(.wrongType, "\(name) must be a finite number", field: field) }
            return .number(n)
        case (.date, _):
            return .date(try date(raw, field: field))
        case (.boolean, .bool(let b)):
            return .boolean(b)
        case (.location, _):
            return .location(try location(raw, field: field))
        default:
            throw ItemError(.wrongType, "\(name) must be \(Self.article(type)), found \(raw.kindName)", field: field)
        }
    }

    func inferred(_ raw: JSONValue, field: String) throws(ItemError) -> AttributeValue {
        switch raw {
        case .string(let s): return .text(try checkedText(s, field: field))
        case .number(let n):
            guard n.isFinite else { throw ItemError(.wrongType, "a number must be finite", field: field) }
            return .number(n)
        case .bool(let b): return .boolean(b)
        case .object:
            if let name = Self.referenceName(raw) { return .text(try checkedText(name, field: field)) }
            return .location(try location(raw, field: field))
        case .array(let elements):
            guard elements.count <= Self.maxListCount else {
                throw ItemError(.tooManyValues, "more than \(Self.maxListCount) values", field: field)
            }
            var out: [AttributeValue] = []
            for (i, e) in elements.enumerated() where e != .null {
                let v = try inferred(e, field: "\(field)[\(i)]")
                if case .list = v {
                    throw ItemError(.wrongType, "lists of lists are not attribute values", field: "\(field)[\(i)]")
                }
                if let first = out.first, first.type != v.type {
                    throw ItemError(
                        .wrongType, "list mixes \(first.type?.rawValue ?? "?") and \(v.type?.rawValue ?? "?") values", field: "\(field)[\(i)]")
                }
                out.append(v)
            }
            return .list(out)
        case .null:
            throw ItemError(.wrongType, "null is not a value", field: field)
        }
    }

    /// The record name of a CloudKit-style reference, `{"recordName": "…"}`
    /// (other members, such as a zone or an action, are ignored). A reference
    /// is stored as the identifier it points to, as text, so a query compares
    /// it by record identifier and results show the identifier.
    static func referenceName(_ raw: JSONValue) -> String? {
        guard case .object(let o) = raw, o["latitude"] == nil, case .string(let name)? = o["recordName"], !name.isEmpty else { return nil }
        return name
    }

    func checkedText(_ s: String, field: String) throws(ItemError) -> String {
        guard s.utf8.count <= Self.maxTextBytes else {
            throw ItemError(.valueTooLong, "text is \(s.utf8.count) bytes, more than the limit of \(Self.maxTextBytes)", field: field)
        }
        return s
    }

    func date(_ raw: JSONValue, field: String) throws(ItemError) -> Date {
        guard case .string(let s) = raw else {
            throw ItemError(.invalidDate, "a date must be an ISO-8601 string, found \(raw.kindName)", field: field)
        }
        guard let d = ISODate.parse(s) else {
            throw ItemError(.invalidDate, "'\(s.prefix(64))' is not an ISO-8601 date (e.g. 2026-11-01T12:00:00Z)", field: field)
        }
        return d
    }

    func location(_ raw: JSONValue, field: String) throws(ItemError) -> Location {
        guard case .object(let o) = raw, let lat = o["latitude"]?.doubleValue, let lon = o["longitude"]?.doubleValue else {
            throw ItemError(.invalidLocation, "a location is an object with numeric latitude and longitude", field: field)
        }
        guard (-90...90).contains(lat), (-180...180).contains(lon) else {
            throw ItemError(.invalidLocation, "latitude must be within ±90 and longitude within ±180", field: field)
        }
        return Location(latitude: lat, longitude: lon)
    }

    static func article(_ t: ValueType) -> String {
        switch t {
        case .text: "text"
        case .number: "a number"
        case .date: "an ISO-8601 date"
        case .boolean: "a boolean"
        case .location: "a location"
        }
    }
}
