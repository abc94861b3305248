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
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in objectID.utf8 {
            h ^= UInt64(b)
            h &*= 0x0000_0100_0000_01b3
        }
        return "\(recordsDomain(index)).\(h % buckets)"
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
/// - `null` fields are left out, as an absent attribute.
enum AlgoliaRecord {
    /// The publishable item for a record, or why it cannot be one (naming the field).
    static func item(_ record: [String: JSONValue], objectID: String, index: String) throws(RESTError) -> JSONValue {
        var attributes: [String: JSONValue] = [:]
        for (name, value) in record where name != "objectID" {
            if name == "_geoloc" {
                guard case .object(let g) = value, let lat = g["lat"]?.doubleValue, let lng = g["lng"]?.doubleValue else {
                    if value == .null { continue }
                    throw RESTError(.badRequest, "_geoloc must be an object {\"lat\": number, \"lng\": number} (one location per record)")
                }
                attributes["latitude"] = .number(lat)
                attributes["longitude"] = .number(lng)
                continue
            }
            try flatten(value, name: name, into: &attributes)
        }
        return .object([
            "uniqueIdentifier": .string(AlgoliaIndex.uid(index, objectID)),
            "domainIdentifier": .string(AlgoliaIndex.recordDomain(index, objectID)),
            "attributes": .object(attributes),
        ])
    }

    static func flatten(_ value: JSONValue, name: String, into out: inout [String: JSONValue]) throws(RESTError) {
        switch value {
        case .null: return
        case .object(let o):
            for (k, v) in o { try flatten(v, name: name + "." + k, into: &out) }
        case .array(let a):
            if a.contains(where: { $0.objectValue != nil }) {
                throw RESTError(.badRequest, "field '\(name)': lists of objects are not supported; flatten them into lists of values per field")
            }
            out[name] = value
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
        return out
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
                for name in hidden { inner[name] = nil }
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
