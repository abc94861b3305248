import Foundation

/// An App Intents entity as an app donates it (`IndexedEntity` through
/// `indexAppEntities(_:priority:)`), and the item it is stored as.
///
/// An entity is stored as an ordinary item, so every query language finds it
/// and ranks it with the same code:
/// - `uniqueIdentifier` is `entity:TYPE:ID`. A type may not contain `:`, so
///   the identifiers of one type are exactly those that start with
///   `entity:TYPE:`: deleting a type is a range of the unique index, and
///   touches nothing else (not even items merely associated with an entity).
/// - The display representation is indexed by default: `title` ← title,
///   `displayName` ← subtitle, `thumbnailURL` ← image (a reference, kept as
///   a custom text attribute).
/// - `properties` map indexing keys to values: a `CSSearchableItemAttributeSet`
///   name (`contentDescription`, `city`, …) takes that attribute's type; any
///   other key is a custom attribute, typed as custom attributes are (by its
///   declaration, else by its JSON value).
/// - `entityType` holds the type as text, so a query can select by it
///   (`entityType == "LandmarkEntity"`).
/// - `entity` is `{type, id, priority}`: every result carries it, and the
///   priority ranks first among the default custom criteria.
public struct AppEntity: Sendable, Hashable {
    public var type: String
    public var id: String
    public var title: String
    public var subtitle: String?
    public var image: String?
    public var properties: [String: JSONValue]
    public var priority: Double
    public var domainIdentifier: String

    /// The attribute that holds the entity's type.
    public static let typeAttribute = "entityType"
    /// The prefix of every entity's `uniqueIdentifier`.
    public static let identifierPrefix = "entity:"

    /// `entity:TYPE:ID`.
    public static func uniqueIdentifier(type: String, id: String) -> String { "\(identifierPrefix)\(type):\(id)" }

    /// Checks a type name: not empty, no `:` (the identifier's separator).
    public static func checkType(_ type: String, field: String = "type") throws(ItemError) {
        guard !type.isEmpty, !type.contains(":") else {
            throw ItemError(.invalidEntity, "an entity type must be non-empty text without ':', found '\(type)'", field: field)
        }
    }

    /// Reads one donation: `{"type", "id", "displayRepresentation": {"title",
    /// "subtitle", "image"}, "properties": {…}, "priority", "domainIdentifier"}`.
    /// `id` may be a number (it is kept as its text); `priority` defaults to 0.
    public init(json: JSONValue) throws(ItemError) {
        guard case .object(let o) = json else { throw ItemError(.notAnObject, "an entity must be a JSON object, found \(json.kindName)") }
        guard let type = o["type"]?.stringValue else { throw ItemError(.invalidEntity, "an entity needs a text 'type'", field: "type") }
        try Self.checkType(type)
        let id: String
        switch o["id"] {
        case .string(let s)? where !s.isEmpty: id = s
        case .number(let n)? where n == n.rounded(): id = String(Int64(n))
        default: throw ItemError(.invalidEntity, "an entity needs an 'id' (non-empty text or a whole number)", field: "id")
        }
        guard case .object(let display)? = o["displayRepresentation"] else {
            throw ItemError(.invalidEntity, "an entity needs a 'displayRepresentation' object with a 'title'", field: "displayRepresentation")
        }
        guard let title = display["title"]?.stringValue, !title.isEmpty else {
            throw ItemError(.invalidEntity, "the display representation needs a non-empty text 'title'", field: "displayRepresentation.title")
        }
        func optionalText(_ v: JSONValue?, _ field: String) throws(ItemError) -> String? {
            guard let v, v != .null else { return nil }
            guard let s = v.stringValue else { throw ItemError(.wrongType, "expected text, found \(v.kindName)", field: field) }
            return s
        }
        let subtitle = try optionalText(display["subtitle"], "displayRepresentation.subtitle")
        let image = try optionalText(display["image"], "displayRepresentation.image")
        var properties: [String: JSONValue] = [:]
        if let p = o["properties"], p != .null {
            guard case .object(let po) = p else {
                throw ItemError(.invalidEntity, "'properties' must be an object of indexing keys", field: "properties")
            }
            for reserved in ["title", "displayName", "thumbnailURL", Self.typeAttribute] where po[reserved] != nil {
                throw ItemError(
                    .invalidEntity, "'\(reserved)' comes from the display representation or the type, not from properties",
                    field: "properties.\(reserved)")
            }
            properties = po
        }
        var priority = 0.0
        if let p = o["priority"], p != .null {
            guard let d = p.doubleValue else { throw ItemError(.invalidEntity, "priority must be a number, found \(p.kindName)", field: "priority") }
            priority = d
        }
        let domain = try optionalText(o["domainIdentifier"], "domainIdentifier") ?? ""
        guard DomainIdentifier.isValid(domain) else {
            throw ItemError(.invalidDomain, "domainIdentifier must be dot-separated names without spaces", field: "domainIdentifier")
        }
        self.init(
            type: type, id: id, title: title, subtitle: subtitle, image: image, properties: properties,
            priority: priority, domainIdentifier: domain)
    }

    public init(
        type: String, id: String, title: String, subtitle: String? = nil, image: String? = nil,
        properties: [String: JSONValue] = [:], priority: Double = 0, domainIdentifier: String = ""
    ) {
        self.type = type
        self.id = id
        self.title = title
        self.subtitle = subtitle
        self.image = image
        self.properties = properties
        self.priority = priority
        self.domainIdentifier = domainIdentifier
    }

    /// The item it is stored as, in the JSON shape producers publish; a
    /// batch's `priority` (`indexAppEntities(_:priority:)`) overrides the entity's own.
    public func itemJSON(priority batchPriority: Double? = nil) -> JSONValue {
        var attributes = properties
        attributes["title"] = .string(title)
        if let subtitle { attributes["displayName"] = .string(subtitle) }
        if let image { attributes["thumbnailURL"] = .string(image) }
        attributes[Self.typeAttribute] = .string(type)
        return .object([
            "uniqueIdentifier": .string(Self.uniqueIdentifier(type: type, id: id)),
            "domainIdentifier": .string(domainIdentifier),
            "attributes": .object(attributes),
            "entity": .object(["type": .string(type), "id": .string(id), "priority": .number(batchPriority ?? priority)]),
        ])
    }
}
