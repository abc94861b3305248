import Foundation
import Items
import QueryPlan
import Tenancy

/// Where an Algolia index's records live among an app's items (docs/algolia.md).
///
/// An index is a domain of its app, `algolia.LABEL`, where LABEL is the
/// index name made one domain label (``label(_:)``). Its records are items
/// under `algolia.LABEL.r.B`, B being a hash of the objectID modulo
/// ``buckets``: sharding stays by domain, and the buckets spread one index
/// over every shard. Its settings and synonyms are items under
/// `algolia.LABEL.m`, which no search of the index sees. A record's
/// `uniqueIdentifier` is `LABEL/objectID`, unique within the app as items'
/// identifiers must be, so two indices may hold the same objectID. Deleting
/// the index is deleting the domain `algolia.LABEL`; clearing it, `algolia.LABEL.r`.
enum AlgoliaIndex {
    static let root = "algolia"
    /// Sub-domains per index: enough to spread an index over a few dozen shards.
    static let buckets: UInt64 = 64
    /// The attribute of an index's meta item that names the index (``AlgoliaIndexMeta``).
    static let metaAttribute = "algoliaIndex"

    /// The name as one domain label (``AlgoliaIndexLabel``, shared with secured keys' `restrictIndices`).
    static func label(_ index: String) -> String { AlgoliaIndexLabel.label(index) }

    static func domain(_ index: String) -> String { "\(root).\(label(index))" }
    static func recordsDomain(_ index: String) -> String { "\(domain(index)).r" }
    static func metaDomain(_ index: String) -> String { "\(domain(index)).m" }
    static func prefix(_ index: String) -> String { "\(label(index))/" }
    static func uid(_ index: String, _ objectID: String) -> String { prefix(index) + objectID }
    static func metaUID(_ index: String) -> String { prefix(index) + "#meta" }
    static func synonymPrefix(_ index: String) -> String { prefix(index) + "#synonym/" }

    /// The record's domain: FNV-1a of the objectID picks its bucket.
    static func recordDomain(_ index: String, _ objectID: String) -> String {
        Names(index).recordDomain(objectID)
    }

    /// An index's names that each of its records' identifier and domain
    /// start with, made once for a batch of records.
    struct Names {
        let prefix: String
        let recordsDomain: String

        init(_ index: String) {
            prefix = AlgoliaIndex.prefix(index)
            recordsDomain = AlgoliaIndex.recordsDomain(index) + "."
        }

        func uid(_ objectID: String) -> String { prefix + objectID }

        func recordDomain(_ objectID: String) -> String {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in objectID.utf8 {
                h ^= UInt64(b)
                h &*= 0x0000_0100_0000_01b3
            }
            return recordsDomain + String(h % buckets)
        }
    }

    /// The predicate that selects an index's records.
    static func records(_ index: String) -> QueryPlan.Predicate { .domain([recordsDomain(index)]) }
}

/// An Algolia record as an item, and back.
///
/// - `objectID` becomes the identifier (``AlgoliaIndex``), every other field an attribute;
/// - nested objects are flattened to dotted names (`brand.name`), as Algolia
///   filters and facets name them, and rebuilt when the record is read;
/// - `_geoloc` (`{"lat", "lng"}`) becomes the `latitude` and `longitude`
///   attributes the geo parameters use, and is rebuilt from them;
/// - `null` fields are left out, as an absent attribute;
/// - a list of objects (`"variants": [{"sku": "a"}, {"sku": "b"}]`) becomes
///   a list per field (`variants.sku: ["a", "b"]`), which filters and facets
///   name as Algolia does, and is kept whole in ``objectsAttribute`` for
///   reading back (the per-field lists cannot rebuild it: a field absent
///   from some objects leaves no gap, since a list holds no null).
enum AlgoliaRecord {
    /// The attribute that keeps a record's lists of objects as given: the
    /// JSON text of `{"dotted.name": list}`. Declared not searchable
    /// (``AlgoliaREST/declareObjects(_:)``), so that no query matches its
    /// text and `facets: ["*"]` does not count it.
    static let objectsAttribute = "algoliaObjects"

    /// The publishable item for a record, or why it cannot be one (naming the field).
    static func item(_ record: [String: JSONValue], objectID: String, index: String) throws(RESTError) -> JSONValue {
        try item(record, objectID: objectID, names: AlgoliaIndex.Names(index))
    }

    /// ``item(_:objectID:index:)`` with the index's names made already.
    static func item(_ record: [String: JSONValue], objectID: String, names: AlgoliaIndex.Names) throws(RESTError) -> JSONValue {
        var attributes: [String: JSONValue] = [:]
        attributes.reserveCapacity(record.count + 1)
        var objects: [String: JSONValue] = [:]
        for (name, value) in record where name != "objectID" {
            if name == objectsAttribute {
                throw RESTError(.badRequest, "field '\(name)' is reserved: Limelight keeps a record's lists of objects in it")
            }
            if name == "_geoloc" {
                guard case .object(let g) = value, let lat = g["lat"]?.doubleValue, let lng = g["lng"]?.doubleValue else {
                    if value == .null { continue }
                    throw RESTError(.badRequest, "_geoloc must be an object {\"lat\": number, \"lng\": number} (one location per record)")
                }
                attributes["latitude"] = .number(lat)
                attributes["longitude"] = .number(lng)
                continue
            }
            try flatten(value, name: name, into: &attributes, objects: &objects)
        }
        if !objects.isEmpty { attributes[objectsAttribute] = .string(JSONWriter.string(.object(objects))) }
        return .object([
            "uniqueIdentifier": .string(names.uid(objectID)),
            "domainIdentifier": .string(names.recordDomain(objectID)),
            "attributes": .object(attributes),
        ])
    }

    static func flatten(
        _ value: JSONValue, name: String, into out: inout [String: JSONValue], objects: inout [String: JSONValue]
    ) throws(RESTError) {
        switch value {
        case .null: return
        case .object(let o):
            for (k, v) in o { try flatten(v, name: name + "." + k, into: &out, objects: &objects) }
        case .array(let a) where a.contains(where: { $0.objectValue != nil }):
            // Each field's values, in the objects' order, as one list.
            var lists: [String: [JSONValue]] = [:]
            for (i, element) in a.enumerated() {
                guard element.objectValue != nil else {
                    throw RESTError(.badRequest, "field '\(name)': a list mixes objects and other values (at \(i))")
                }
                var fields: [String: JSONValue] = [:]
                var inner: [String: JSONValue] = [:]
                try flatten(element, name: name, into: &fields, objects: &inner)
                guard inner.isEmpty else {
                    throw RESTError(.badRequest, "field '\(name)': lists of objects within a list of objects are not supported")
                }
                for (k, v) in fields { lists[k, default: []] += v.arrayValue ?? [v] }
            }
            for (k, values) in lists { out[k] = .array(values) }
            objects[name] = value
        default:
            out[name] = value
        }
    }

    /// A stored item (a query's result) as the record it was made from.
    static func record(item: JSONValue, index: String) -> [String: JSONValue]? {
        guard case .object(let o) = item, let uid = o["uniqueIdentifier"]?.stringValue else { return nil }
        let prefix = AlgoliaIndex.prefix(index)
        var record = unflatten(o["attributes"]?.objectValue ?? [:])
        record["objectID"] = .string(uid.hasPrefix(prefix) ? String(uid.dropFirst(prefix.count)) : uid)
        return record
    }

    /// Dotted names back into nested objects, and `_geoloc` from `latitude` and `longitude`.
    static func unflatten(_ attributes: [String: JSONValue]) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        var flat = attributes
        let objects = takeObjects(&flat)
        if let lat = flat["latitude"]?.doubleValue, let lng = flat["longitude"]?.doubleValue {
            flat["latitude"] = nil
            flat["longitude"] = nil
            out["_geoloc"] = .object(["lat": .number(lat), "lng": .number(lng)])
        }
        flat["location"] = nil
        for (name, value) in flat {
            guard name.contains(".") else {
                out[name] = value
                continue
            }
            let parts = name.split(separator: ".").map(String.init)
            insert(value, at: parts[...], into: &out)
        }
        for (name, list) in objects { insert(list, at: name.split(separator: ".").map(String.init)[...], into: &out) }
        return out
    }

    /// The lists of objects kept whole, taken out of the attributes with
    /// the per-field lists made of them.
    static func takeObjects(_ flat: inout [String: JSONValue]) -> [String: JSONValue] {
        guard let text = flat.removeValue(forKey: objectsAttribute)?.stringValue,
            case .object(let objects)? = try? JSONValue.parse(Data(text.utf8))
        else { return [:] }
        let made = flat.keys.filter { k in objects.keys.contains { k.hasPrefix($0 + ".") } }
        for k in made { flat[k] = nil }
        return objects
    }

    static func insert(_ value: JSONValue, at path: ArraySlice<String>, into o: inout [String: JSONValue]) {
        guard let first = path.first else { return }
        if path.count == 1 {
            o[first] = value
            return
        }
        var inner = o[first]?.objectValue ?? [:]
        insert(value, at: path.dropFirst(), into: &inner)
        o[first] = .object(inner)
    }

    /// A search hit as a record: its attributes rebuilt, and the same in its
    /// `_highlightResult` and `_snippetResult`; `hidden` fields left out, and
    /// only the `retrieve` ones kept (a nested object by its name or a dotted path within it).
    static func hit(_ hit: JSONValue, hidden: Set<String>, retrieve: Set<String>? = nil) -> JSONValue {
        guard case .object(let o) = hit else { return hit }
        var attributes: [String: JSONValue] = [:]
        var special: [String: JSONValue] = [:]
        for (k, v) in o {
            if k == "objectID" || k == "_rankingInfo" || k == "_geoDistance" {
                special[k] = v
            } else if k == "_highlightResult" || k == "_snippetResult", case .object(let h) = v {
                var inner = h
                inner["latitude"] = nil
                inner["longitude"] = nil
                inner["location"] = nil
                inner[objectsAttribute] = nil
                for name in hidden { inner[name] = nil }
                // A list of objects' per-field lists: no highlight of the list as given.
                if let kept = o[objectsAttribute]?.stringValue, case .object(let lists)? = try? JSONValue.parse(Data(kept.utf8)) {
                    for k in Array(inner.keys) where lists.keys.contains(where: { k.hasPrefix($0 + ".") }) { inner[k] = nil }
                }
                special[k] = .object(unflattenNames(inner))
            } else if !hidden.contains(k) {
                attributes[k] = v
            }
        }
        var record = unflatten(attributes)
        if let retrieve {
            record = record.filter { k, _ in retrieve.contains(k) || retrieve.contains { $0.hasPrefix(k + ".") } }
        }
        return .object(record.merging(special) { _, s in s })
    }

    /// Only the dotted names rebuilt (a highlight result has no `_geoloc` to rebuild).
    static func unflattenNames(_ o: [String: JSONValue]) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for (name, value) in o {
            if name.contains(".") { insert(value, at: name.split(separator: ".").map(String.init)[...], into: &out) } else { out[name] = value }
        }
        return out
    }
}
