import Foundation
import Items
import QueryPlan
import SQLite

extension ShardStore {
    /// The items with a location of attribute `name` inside the test's area,
    /// exactly.
    ///
    /// The `attrs_geo` index proposes the rows whose latitude lies within the
    /// area's latitude bounds; each is settled on its stored coordinates by
    /// ``GeoArea/contains(_:)``, the same call `Node.evaluate` makes. Rows of
    /// shards written before coordinates were stored have none; those items
    /// are checked one by one through `Node.evaluate`, which reads their
    /// locations from `items.json`.
    func geoMatches(_ node: Node, name: Int64, _ test: GeoTest, _ context: QueryContext) throws -> [Int64] {
        let bounds = test.area.latitudeBounds
        var ids: [Int64] = []
        let rows = try db.prepare("SELECT item, num, text FROM attrs WHERE kind = 4 AND name = ? AND num >= ? AND num <= ?")
        try rows.bind([.integer(name), .real(bounds.lowerBound), .real(bounds.upperBound)])
        while try rows.step() {
            try context.checkCancelled()
            guard let location = Self.storedLocation(latitude: rows.double(at: 1), longitude: rows.string(at: 2)) else { continue }
            if test.area.contains(location) { ids.append(rows.int64(at: 0)) }
        }
        let legacy = try db.prepare("SELECT item FROM attrs WHERE kind = 4 AND name = ? AND num IS NULL")
        try legacy.bind(name, at: 0)
        let unknown = IDs.sortedUnique(try legacy.map { $0.int64(at: 0) })
        if !unknown.isEmpty { ids += try exactly(node, in: unknown, context) }
        return IDs.sortedUnique(ids)
    }

    /// Whether attribute `name` has any location row: their latitudes sit in
    /// `num` beside real numbers, and ranges and numeric sorts must skip them.
    /// One probe of the small `attrs_geo` index.
    func holdsLocations(_ name: Int64) throws -> Bool {
        let s = try db.prepare("SELECT 1 FROM attrs WHERE kind = 4 AND name = ? LIMIT 1")
        try s.bind(name, at: 0)
        defer { try? s.reset() }
        return try s.step()
    }

    /// A location row's coordinates: latitude in `num`, longitude in `text`.
    static func storedLocation(latitude: Double?, longitude: String?) -> Location? {
        guard let latitude, let longitude, let lng = Double(longitude) else { return nil }
        return Location(latitude: latitude, longitude: lng)
    }

    /// Fills in the coordinates of location values loaded from rows that have
    /// none (shards written before rows kept them) from the item's JSON, where
    /// a location attribute's elements are in the order of its rows.
    func fillLegacyLocations(of id: Int64, in item: inout LoadedItem) throws {
        let s = try db.prepare("SELECT json FROM items WHERE id = ?")
        try s.bind(id, at: 0)
        guard let text = try s.scalar()?.string, let json = try? JSONValue.parse(text),
            case .object(let attributes)? = json["attributes"]
        else { return }
        for (nameID, values) in item.values where values.contains(where: { $0.kind == .location && $0.location == nil }) {
            guard let name = names[nameID], let raw = attributes[name] else { continue }
            let elements: [JSONValue] = raw.arrayValue ?? [raw]
            let locations: [Location?] = elements.map { e in
                guard let lat = e["latitude"]?.doubleValue, let lng = e["longitude"]?.doubleValue else { return nil }
                return Location(latitude: lat, longitude: lng)
            }
            var filled = values
            var next = 0
            for i in filled.indices where filled[i].kind == .location {
                if filled[i].location == nil, next < locations.count { filled[i].location = locations[next] }
                next += 1
            }
            item.values[nameID] = filled
        }
    }
}
