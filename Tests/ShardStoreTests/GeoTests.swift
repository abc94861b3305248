import Foundation
import Items
import QueryPlan
import SQLite
import ShardStore
import Testing

func geo(_ attribute: String = "location", around lat: Double, _ lng: Double, radius: Double) -> QueryPlan.Predicate {
    .geo(GeoTest(attribute: attribute, area: .circle(center: Location(latitude: lat, longitude: lng), radius: radius)))
}

func geo(_ attribute: String = "location", box lat1: Double, _ lng1: Double, _ lat2: Double, _ lng2: Double) -> QueryPlan.Predicate {
    .geo(GeoTest(attribute: attribute, area: .box(lat1: lat1, lng1: lng1, lat2: lat2, lng2: lng2)))
}

@Suite struct GeoTests {
    static let paris = Location(latitude: 48.8566, longitude: 2.3522)
    static let london = Location(latitude: 51.5074, longitude: -0.1278)
    static let berlin = Location(latitude: 52.52, longitude: 13.405)

    /// Figures from the haversine formula on a sphere of 6,371,008.8 m
    /// (computed independently in Python).
    @Test func greatCircleDistances() {
        #expect(abs(Self.paris.distance(from: Self.london) - 343_556.535) < 0.01)
        #expect(abs(Self.paris.distance(from: Self.berlin) - 877_464.538) < 0.01)
        #expect(abs(Location(latitude: 0, longitude: 0).distance(from: Location(latitude: 0, longitude: 180)) - 20_015_114.442) < 0.01)
        #expect(Self.london.distance(from: Self.paris) == Self.paris.distance(from: Self.london))
        #expect(Self.paris.distance(from: Self.paris) == 0)
        // Across the 180th meridian the short way round: 0.2° of longitude at the equator.
        let d = Location(latitude: 0, longitude: 179.9).distance(from: Location(latitude: 0, longitude: -179.9))
        #expect(abs(d - 0.2 * .pi / 180 * Geo.earthRadius) < 0.01)
    }

    @Test func areas() {
        let box = GeoArea.box(lat1: 52, lng1: 3, lat2: 48, lng2: -1)  // corners in either order
        #expect(box.contains(Self.paris))
        #expect(box.contains(Self.london))
        #expect(!box.contains(Self.berlin))
        #expect(GeoArea.box(lat1: 48.8566, lng1: 2.3522, lat2: 0, lng2: 0).contains(Self.paris))  // edges included
        let circle = GeoArea.circle(center: Self.paris, radius: 343_557)
        #expect(circle.contains(Self.london))
        #expect(!GeoArea.circle(center: Self.paris, radius: 343_556).contains(Self.london))
        // The prefilter's latitudes hold every point of the circle, even near a pole.
        let north = GeoArea.circle(center: Location(latitude: 89, longitude: 0), radius: 500_000)
        #expect(north.latitudeBounds.upperBound == 90)
        #expect(north.contains(Location(latitude: 88, longitude: 180)))
        #expect(north.latitudeBounds.contains(88))
    }

    static let places: [JSONValue] = [
        item("paris", #"{"title": "Paris", "location": {"latitude": 48.8566, "longitude": 2.3522}, "rating": 3}"#),
        item("london", #"{"title": "London", "latitude": 51.5074, "longitude": -0.1278, "rating": 5}"#),
        item("berlin", #"{"title": "Berlin", "location": {"latitude": 52.52, "longitude": 13.405}, "rating": 4}"#),
        item("sydney", #"{"title": "Sydney", "location": {"latitude": -33.8688, "longitude": 151.2093}}"#),
        item("nowhere", #"{"title": "No place 48", "rating": 1}"#),
        item("tour", #"{"title": "Tour", "stops": [{"latitude": -33.9, "longitude": 151.2}, {"latitude": 52.5, "longitude": 13.4}]}"#),
    ]

    @Test func storeFiltersByCircleAndBox() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put(Self.places)
        #expect(try store.idSet(geo(around: 48.8566, 2.3522, radius: 400_000)) == ["paris", "london"])
        #expect(try store.idSet(geo(around: 48.8566, 2.3522, radius: 343_556)) == ["paris"])
        #expect(try store.idSet(geo(around: 48.8566, 2.3522, radius: 1_000_000)) == ["paris", "london", "berlin"])
        #expect(try store.idSet(geo(box: 53, 14, 48, -1)) == ["paris", "london", "berlin"])
        #expect(try store.idSet(geo(box: 53, 14, 48, 3)) == ["berlin"])
        #expect(try store.idSet(geo(box: 53, 14, 48, 2)) == ["paris", "berlin"])
        // Any element of a list of locations.
        #expect(try store.idSet(geo("stops", around: 52.52, 13.405, radius: 5_000)) == ["tour"])
        #expect(try store.idSet(geo("stops", box: -30, 150, -40, 152)) == ["tour"])
        #expect(try store.idSet(geo("nothing", box: -90, -180, 90, 180)).isEmpty)
        #expect(try store.count(matching: .not(geo(around: 48.8566, 2.3522, radius: 400_000))) == 4)
        #expect(try store.idSet(.and([geo(box: -90, -180, 90, 180), range("rating", 4, nil)])) == ["london", "berlin"])
        // Coordinates live in the value rows, yet no numeric or text test sees them.
        #expect(try store.idSet(range("location", -90, 90)).isEmpty)
        #expect(try store.idSet(range("stops", nil, nil)).isEmpty)
        #expect(try store.idSet(text("location", "*2*")).isEmpty)
        #expect(try store.idSet(text("stops", "*1*")).isEmpty)
        #expect(try store.idSet(text("*", "*48*")) == ["nowhere"])
        #expect(try store.idSet(.exists(.named("location"))) == ["paris", "london", "berlin", "sydney"])
        // Sorting by an attribute that holds locations: they are no sort values.
        let sorted = try store.ids(.exists(.named("location")), sort: [.attribute("location", ascending: true)])
        #expect(sorted.count == 4)
    }

    /// Sorting by location beyond the 2,000 items where sort values come from
    /// the numeric index: latitudes must not leak in as numbers there either.
    @Test func manyLocationsDoNotSortAsNumbers() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        var items: [JSONValue] = []
        for i in 0..<2100 {
            let attr = i % 2 == 0 ? #""place": {"latitude": \#(Double(i % 90)), "longitude": 1}"# : #""place": \#(3000 - i)"#
            items.append(item("i\(i)", #"{\#(attr)}"#))
        }
        try store.put(items)
        let sorted = try store.ids(.all, sort: [.attribute("place", ascending: true)])
        // The numbers first, ascending; the locations (no sort value) last.
        #expect(sorted.first == "i2099")
        #expect(Set(sorted.suffix(1050)) == Set((0..<1050).map { "i\($0 * 2)" }))
        #expect(try store.count(matching: range("place", 0, 100)) == 0)
        #expect(try store.count(matching: range("place", 901, 2000)) == 550)
    }

    /// A shard written before location rows kept coordinates (kind 4, `num`
    /// and `text` NULL) still answers, from `items.json`.
    @Test func oldShardsAnswerFromTheItemJSON() throws {
        let dir = TempDir()
        do {
            let store = try openStore(dir)
            try store.put(Self.places)
        }
        do {
            let db = try Database(path: dir.path("shard.db"))
            try db.execute("UPDATE attrs SET num = NULL, text = NULL WHERE kind = 4")
            try db.execute("DROP INDEX attrs_geo")
        }
        let reader = try openStore(dir, mode: .readOnly)
        #expect(try reader.idSet(geo(around: 48.8566, 2.3522, radius: 400_000)) == ["paris", "london"])
        #expect(try reader.idSet(geo("stops", around: 52.52, 13.405, radius: 5_000)) == ["tour"])
        #expect(try reader.idSet(.and([geo(box: 53, 14, 48, -1), text("title", "B*")])) == ["berlin"])
        #expect(try reader.count(matching: .not(geo(box: 53, 14, 48, -1))) == 3)
        // Opening it for writing brings the index back; new items store coordinates.
        let writer = try openStore(dir)
        try writer.put([item("rome", #"{"location": {"latitude": 41.9, "longitude": 12.5}}"#)])
        #expect(try writer.idSet(geo(around: 48.8566, 2.3522, radius: 1_200_000)) == ["paris", "london", "berlin", "rome"])
    }

    @Test func planJSONRoundTripsAndRefusesBadAreas() throws {
        let plans: [QueryPlan.Predicate] = [
            geo(around: 48.8566, 2.3522, radius: 1500),
            geo("stops", box: 47.3165, 4.9665, 47.3424, 5.0201),
        ]
        for p in plans {
            #expect(try QueryPlan.Predicate(json: JSONValue.parse(JSONWriter.string(p.json))) == p)
        }
        #expect(
            try QueryPlan.Predicate(json: json(#"{"op": "geo", "box": [1, 2, 3, 4]}"#))
                == geo(box: 1, 2, 3, 4))
        let bad: [(String, String)] = [
            (#"{"op": "geo", "box": [1, 2, 3]}"#, "predicate.box"),
            (#"{"op": "geo", "box": [91, 2, 3, 4]}"#, "predicate.box[0]"),
            (#"{"op": "geo", "box": [1, 2, 3, 181]}"#, "predicate.box[3]"),
            (#"{"op": "geo", "around": {"latitude": 1, "longitude": 2}}"#, "predicate.radius"),
            (#"{"op": "geo", "around": {"latitude": 1, "longitude": 2}, "radius": -1}"#, "predicate.radius"),
            (#"{"op": "geo", "around": {"latitude": 1}, "radius": 5}"#, "predicate.around.longitude"),
            (#"{"op": "geo", "attribute": "*", "box": [1, 2, 3, 4]}"#, "predicate.attribute"),
            (#"{"op": "geo"}"#, "predicate"),
        ]
        for (text, path) in bad {
            #expect(throws: PlanDecodingError.self, "\(text)") { try QueryPlan.Predicate(json: json(text)) }
            do { _ = try QueryPlan.Predicate(json: json(text)) } catch { #expect(error.path == path, "\(text)") }
        }
    }
}
