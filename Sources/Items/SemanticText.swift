/// Which text of an item is embedded for semantic search, and in what order.
///
/// One vector per item, of one text: the values of the attributes declared
/// `semantic`, in the order they were first declared, joined with ". " (so
/// `displayName` then `contentDescription` gives "Vector-based drawing
/// program. Inkscape is …", as sentence-transformers is usually fed a title
/// and a body). A list's elements are joined the same way. An app entity
/// (an item stored from `AppEntity`, `entity:TYPE:ID`) is embedded from its
/// display representation, title then subtitle (`title`, `displayName`),
/// followed by any other declared semantic attribute it has: the display
/// representation is what App Intents shows a person, so it is what they
/// would describe it by. An item with none of these has no text and no
/// vector; semantic ranking then leaves it out.
public enum SemanticText {
    /// The separator between values, as in the reference texts of the model tests.
    public static let separator = ". "

    /// The text to embed for `item` under `schema`, or nil when it has none.
    public static func text(of item: Item, schema: AttributeSchema) -> String? {
        var names = schema.semantic
        if item.entity != nil, item.uniqueIdentifier.hasPrefix(AppEntity.identifierPrefix) {
            names = ["title", "displayName"] + names.filter { $0 != "title" && $0 != "displayName" }
        }
        var parts: [String] = []
        for name in names {
            guard let value = item.attributes[name] else { continue }
            for element in value.elements {
                // Values are joined as given (the model strips the whole
                // text's ends itself); only blank ones are left out.
                if case .text(let s) = element, !s.allSatisfy(\.isWhitespace) { parts.append(s) }
            }
        }
        return parts.isEmpty ? nil : parts.joined(separator: separator)
    }
}

extension AttributeSchema {
    /// Marks `name` semantic (embedded, see ``SemanticText``) or not. The first
    /// declaration fixes its place in the text; declaring it again keeps it.
    /// Only text attributes can be: a number or a date has no sentence to embed.
    public mutating func setSemantic(_ name: String, _ on: Bool) throws(ItemError) {
        guard AttributeName.isValid(name) else {
            throw ItemError(.invalidAttributeName, "attribute name '\(name)' is not a valid name", field: "name")
        }
        if on, let spec = spec(for: name), spec.type != .text {
            throw ItemError(.wrongType, "'\(name)' is \(spec.type.rawValue), and only text attributes can be semantic", field: "semantic")
        }
        if on {
            if !semantic.contains(name) { semantic.append(name) }
        } else {
            semantic.removeAll { $0 == name }
        }
    }
}
