import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

func entity(
    _ type: String, _ id: String, title: String, subtitle: String? = nil, priority: Double? = nil,
    domain: String = "com.example.places", properties: [String: JSONValue] = [:]
) -> JSONValue {
    var display: [String: JSONValue] = ["title": .string(title)]
    if let subtitle { display["subtitle"] = .string(subtitle) }
    var o: [String: JSONValue] = [
        "type": .string(type), "id": .string(id), "displayRepresentation": .object(display),
        "domainIdentifier": .string(domain), "properties": .object(properties),
    ]
    if let priority { o["priority"] = .number(priority) }
    return .object(o)
}

/// App entities, typed queries and Spotlight's grouped results on a real cluster.
@Suite(.serialized)
struct EntityClusterTests {
    @Test func donationAssociationDeletesAndTheEntityInEveryKindOfResult() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }

        let ack = try await client.donateEntities([
            entity(
                "LandmarkEntity", "1", title: "Golden Gate Bridge", subtitle: "Suspension bridge",
                properties: [
                    "contentDescription": .string("orange towers over the strait"), "city": .string("San Francisco"),
                    "visitors": .number(10_000_000),
                ]),
            entity("LandmarkEntity", "2", title: "Bay Bridge", subtitle: "Double-decker bridge"),
            // Same text, different priority: the ids are chosen so that, without priority, "a-low" would rank first.
            entity("LandmarkEntity", "a-low", title: "Quokka lookout", priority: 1),
            entity("LandmarkEntity", "b-high", title: "Quokka lookout", priority: 10),
            entity("LandmarkEntityX", "1", title: "Unrelated bridge lookalike"),
            entity(
                "TrailEntity", "t1", title: "Lands End trail", domain: "com.example.trails",
                properties: ["contentType": .string("com.example.trail")]),
            entity(
                "TrailEntity", "t2", title: "Coastal bridge trail", domain: "com.example.trails",
                properties: ["contentType": .string("com.example.trail")]),
            .object(["type": .string("LandmarkEntity"), "id": .string("bad"), "displayRepresentation": .object([:])]),
        ])
        #expect(ack.stored == 7, "\(ack.firstRejection)")
        #expect(ack.rejected == 1)
        #expect(ack.results[7].error?.field == "displayRepresentation.title")

        // Parameter search: the hit carries its entity; properties are searchable, typed as attributes are.
        let golden = try await client.search(.object(["query": .string("strait")])).response
        let hit = try #require(golden["hits"]?.arrayValue?.first)
        #expect(hit["objectID"]?.stringValue == "entity:LandmarkEntity:1")
        #expect(hit["entity"]?["type"]?.stringValue == "LandmarkEntity")
        #expect(hit["entity"]?["id"]?.stringValue == "1")
        #expect(hit["displayName"]?.stringValue == "Suspension bridge")
        let numeric = try await client.search(.object(["numericFilters": .array([.string("visitors > 1000000")])])).response
        #expect(objectIDs(numeric) == ["entity:LandmarkEntity:1"])

        // Spotlight query string and CloudKit predicate results carry it too.
        let q = try await collect(client.query(spotlight("title == \"Golden*\"cd")))
        #expect(q.items.count == 1)
        #expect(q.items.first?["entity"]?["id"]?.stringValue == "1")
        let p = try await collect(
            client.query(
                Body.QueryRequest(
                    language: "cloudkit", recordType: "com.example.trail",
                    predicate: "entityType == %@", arguments: [.string("TrailEntity")])))
        #expect(Set(p.items.compactMap { $0["entity"]?["id"]?.stringValue }) == ["t1", "t2"])

        // Priority ranks the same text.
        let quokka = try await client.search(.object(["query": .string("quokka")])).response
        #expect(objectIDs(quokka) == ["entity:LandmarkEntity:b-high", "entity:LandmarkEntity:a-low"])

        // Association: an existing item's results then carry the entity; its priority ranks it.
        _ = try await client.publish([
            item("store:1", domain: "com.example.stores", ["title": .string("Corner bridge shop")]),
            item("store:2", domain: "com.example.stores", ["title": .string("Corner bridge shop")]),
        ])
        let before = try await client.search(.object(["query": .string("corner shop")])).response
        #expect(objectIDs(before) == ["store:1", "store:2"])
        try await client.associateEntity(item: "store:2", EntityAssociation(type: "StoreEntity", id: "s2", priority: 5))
        let after = try await client.search(.object(["query": .string("corner shop")])).response
        #expect(objectIDs(after) == ["store:2", "store:1"])
        #expect(after["hits"]?.arrayValue?.first?["entity"]?["id"]?.stringValue == "s2")
        let associated = try await collect(client.query(spotlight("title == \"Corner*\"cd")))
        #expect(associated.items.count == 2)
        #expect(associated.items.first { $0["uniqueIdentifier"]?.stringValue == "store:2" }?["entity"]?["type"]?.stringValue == "StoreEntity")
        #expect(associated.items.first { $0["uniqueIdentifier"]?.stringValue == "store:1" }?["entity"] == nil)
        await #expect(throws: ClientError.self) {
            try await client.associateEntity(item: "store:missing", EntityAssociation(type: "StoreEntity", id: "x"))
        }

        // Delete by ids and type: only those.
        #expect(try await client.deleteEntities(type: "LandmarkEntity", ids: ["2", "nope"]) == 1)
        let bay = try await client.search(.object(["query": .string("bay")])).response
        #expect(objectIDs(bay).isEmpty)
        // Delete by type: every entity of the type, and nothing else (not LandmarkEntityX, not associated items).
        #expect(try await client.deleteEntities(type: "LandmarkEntity") == 3)
        let bridges = try await client.search(.object(["query": .string("bridge"), "hitsPerPage": .number(50)])).response
        #expect(Set(objectIDs(bridges)) == ["entity:LandmarkEntityX:1", "entity:TrailEntity:t2", "store:1", "store:2"])
        #expect(try await client.deleteEntities(type: "TrailEntity") == 2)
        #expect(try await client.deleteEntities(type: "TrailEntity") == 0)
        await #expect(throws: ClientError.self) { _ = try await client.deleteEntities(type: "Bad:Type") }
        let everything = try await client.search(.object(["hitsPerPage": .number(50)])).response
        #expect(Set(objectIDs(everything)) == ["entity:LandmarkEntityX:1", "store:1", "store:2"])
    }

    /// Suggestions: completions from the index's terms, counted as the
    /// items a search for the completed word (exact, no typos) finds.
    @Test func suggestionsAndTypedQueries() async throws {
        let (cluster, client) = try await SearchClusterTests.cluster(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }

        let r = try await client.suggest("Pyth", limit: 8)
        let words = r.suggestions.map(\.suggestion)
        #expect(words.contains("python"))
        #expect(words.allSatisfy { $0.hasPrefix("pyth") })
        #expect(r.suggestions.map(\.count) == r.suggestions.map(\.count).sorted(by: >))
        #expect(r.response == nil)
        for s in r.suggestions {
            let exact = try await client.search(
                .object([
                    "query": .string(s.suggestion + " "), "typoTolerance": .bool(false),
                    "hitsPerPage": .number(0),
                ])
            ).response
            #expect(exact["nbHits"]?.intValue == s.count, "count of \(s.suggestion)")
        }
        // Counted independently: items whose text holds "python" as a whole word (case-insensitive).
        let regex = try Regex("(?i)(^|[^\\p{L}\\p{N}])python([^\\p{L}\\p{N}]|$)")
        let holding = samplePackages.filter { p in
            (p["attributes"]?.objectValue ?? [:]).values.contains { v in
                (v.arrayValue ?? [v]).contains { $0.stringValue.map { $0.contains(regex) } ?? false }
            }
        }.count
        #expect(r.suggestions.first { $0.suggestion == "python" }?.count == holding)

        // Several words: the earlier kept, the last completed, counted by running the count.
        let two = try await client.suggest("python modu", limit: 5)
        #expect(!two.suggestions.isEmpty)
        for s in two.suggestions {
            #expect(s.suggestion.hasPrefix("python modu"))
            let exact = try await client.search(
                .object([
                    "query": .string(s.suggestion + " "), "typoTolerance": .bool(false),
                    "hitsPerPage": .number(0),
                ])
            ).response
            #expect(exact["nbHits"]?.intValue == s.count, "count of \(s.suggestion)")
        }

        // A typed query with results: the last word is a prefix; the results are a search's.
        let typed = try await client.suggest("pyth", limit: 3, hitsPerPage: 5)
        let response = try #require(typed.response)
        let search = try await client.search(.object(["query": .string("pyth"), "hitsPerPage": .number(5)])).response
        #expect(response["nbHits"]?.intValue == search["nbHits"]?.intValue)
        #expect(objectIDs(response) == objectIDs(search))
        #expect((response["nbHits"]?.intValue ?? 0) >= (r.suggestions.first { $0.suggestion == "python" }?.count ?? 1))
        #expect(try await client.suggest("zzzzqqq").suggestions.isEmpty)
    }

    /// Spotlight's groups: per domain, totals, best group first, and
    /// continuation through every page of a group.
    @Test func groupedResultsAndContinuation() async throws {
        let (cluster, client) = try await SearchClusterTests.cluster(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        // A subdomain is a group of its own.
        _ = try await client.publish([
            item("sub:1", domain: "org.debian.python.extra", ["title": .string("python extra one")]),
            item("sub:2", domain: "org.debian.python.extra", ["title": .string("python extra two")]),
        ])

        let full = try await client.search(.object(["query": .string("python"), "hitsPerPage": .number(1000)])).response
        let hits = full["hits"]?.arrayValue ?? []
        #expect(hits.count == full["nbHits"]?.intValue)
        var byDomain: [String: [String]] = [:]
        for h in hits { byDomain[h["domainIdentifier"]?.stringValue ?? "", default: []].append(h["objectID"]?.stringValue ?? "") }
        #expect(byDomain["org.debian.python.extra"]?.count == 2)

        let r = try await client.spotlight("python", perDomain: 3)
        #expect(r.failedShards.isEmpty)
        #expect(Set(r.groups.map(\.domainIdentifier)) == Set(byDomain.keys))
        for g in r.groups {
            #expect(g.total == byDomain[g.domainIdentifier]?.count, "total of \(g.domainIdentifier)")
            #expect(g.items.compactMap { $0["objectID"]?.stringValue } == Array(byDomain[g.domainIdentifier]!.prefix(3)))
        }
        // Best group first: its best item is the search's best.
        #expect(r.groups.first?.items.first?["objectID"]?.stringValue == objectIDs(full).first)
        let firstOfGroups = r.groups.compactMap { $0.items.first?["objectID"]?.stringValue }
        let positions = firstOfGroups.map { id in objectIDs(full).firstIndex(of: id) ?? .max }
        #expect(positions == positions.sorted())

        // Continuation: every page of the biggest group, each item once, in the search's order.
        let big = try #require(r.groups.max { $0.total < $1.total })
        #expect(big.total > 4)
        var seen: [String] = []
        var page = 0
        while true {
            let p = try await client.continueSearch(big.continuation, page: page, hitsPerPage: 4).response
            let ids = objectIDs(p)
            if ids.isEmpty { break }
            #expect(p["nbHits"]?.intValue == big.total)
            seen += ids
            page += 1
        }
        #expect(seen == byDomain[big.domainIdentifier])
        #expect(page == (big.total + 3) / 4)
        // The parent domain's list leaves out its subdomain.
        let parent = try #require(r.groups.first { $0.domainIdentifier == "org.debian.python" })
        let parentAll = try await client.continueSearch(parent.continuation, page: 0, hitsPerPage: 1000).response
        #expect(!objectIDs(parentAll).contains("sub:1"))
        #expect(objectIDs(parentAll).count == parent.total)

        await #expect(throws: ClientError.self) { _ = try await client.continueSearch("not-a-token!") }
        await #expect(throws: ClientError.self) { _ = try await client.spotlight("python", perDomain: 0) }
    }

    /// Location: address words, radius and box, checked against distances computed here.
    @Test func addressAndDistanceSearch() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let cities = try geonamesCities(size: "15000", limit: 3000)
        #expect(cities.count == 3000)
        var stored = 0
        for start in stride(from: 0, to: cities.count, by: 500) {
            stored += try await client.publish(Array(cities[start..<min(cities.count, start + 500)])).stored
        }
        #expect(stored == cities.count)
        _ = try await client.publish([
            item(
                "store:mulberry", domain: "com.example.stores",
                [
                    "title": .string("Corner Grocery"), "thoroughfare": .string("Mulberry Street"), "postalCode": .string("10013"),
                    "city": .string("New York"), "stateOrProvince": .string("NY"), "country": .string("United States"),
                    "namedLocation": .string("Little Italy"), "latitude": .number(40.7193), "longitude": .number(-73.9973),
                ]),
            item(
                "store:elm", domain: "com.example.stores",
                [
                    "title": .string("Corner Bakery"), "thoroughfare": .string("Elm Street"), "postalCode": .string("10013"),
                    "city": .string("New York"), "latitude": .number(40.7170), "longitude": .number(-74.0030),
                ]),
        ])

        let street = try await client.search(.object(["query": .string("Mulberry Street")])).response
        #expect(objectIDs(street) == ["store:mulberry"])
        let postal = try await client.search(
            .object([
                "query": .string("10013"), "hitsPerPage": .number(10),
                "restrictSearchableAttributes": .array([.string("postalCode")]),
            ])
        ).response
        #expect(Set(objectIDs(postal)) == ["store:mulberry", "store:elm"])
        let grouped = try await client.spotlight("Mulberry Street")
        #expect(grouped.groups.first?.domainIdentifier == "com.example.stores")
        #expect(grouped.groups.first?.items.compactMap { $0["objectID"]?.stringValue } == ["store:mulberry"])

        // Radius: the set, the order and the distances, against the haversine computed here.
        let center = (lat: 55.7558, lng: 37.6173), radius = 1_500_000.0  // Moscow
        func distance(_ c: JSONValue) -> Double {
            let a = c["attributes"]!
            return haversine(center.lat, center.lng, a["latitude"]!.doubleValue!, a["longitude"]!.doubleValue!)
        }
        let inside = cities.filter { distance($0) <= radius }
        let expected = inside.filter { abs(distance($0) - radius) > 1 }  // leave out the undecidable border
        #expect(expected.count > 20)
        let around = try await client.search(
            .object([
                "aroundLatLng": .string("\(center.lat),\(center.lng)"),
                "aroundRadius": .number(radius), "hitsPerPage": .number(1000),
            ])
        ).response
        let aroundHits = around["hits"]?.arrayValue ?? []
        let aroundIDs = Set(objectIDs(around))
        let expectedIDs = Set(expected.compactMap { $0["uniqueIdentifier"]?.stringValue })
        let insideIDs = Set(inside.compactMap { $0["uniqueIdentifier"]?.stringValue })
        #expect(expectedIDs.subtracting(aroundIDs).isEmpty, "cities within the radius not found")
        #expect(aroundIDs.subtracting(insideIDs).isEmpty, "hits outside the radius")
        let byID = Dictionary(uniqueKeysWithValues: cities.map { ($0["uniqueIdentifier"]!.stringValue!, $0) })
        var last = -1.0
        for h in aroundHits {
            let d = distance(byID[h["objectID"]!.stringValue!]!)
            let reported = try #require(h["_geoDistance"]?.doubleValue)
            #expect(abs(reported - d) <= 1, "distance of \(h["objectID"]!)")
            #expect(d >= last - 1)
            last = d
        }
        // The same through Spotlight's view: every group's items are within the radius.
        let near = try await client.spotlight(
            "", perDomain: 2,
            params: .object([
                "aroundLatLng": .string("\(center.lat),\(center.lng)"), "aroundRadius": .number(radius),
            ]))
        #expect(near.groups.reduce(0) { $0 + $1.total } == around["nbHits"]?.intValue)

        // Box: exactly the cities inside, computed here.
        let box = (lat1: 40.0, lng1: 30.0, lat2: 60.0, lng2: 60.0)
        let inBox = cities.filter {
            let a = $0["attributes"]!
            let lat = a["latitude"]!.doubleValue!, lng = a["longitude"]!.doubleValue!
            return lat >= box.lat1 && lat <= box.lat2 && lng >= box.lng1 && lng <= box.lng2
        }
        #expect(inBox.count > 20)
        let boxed = try await client.search(
            .object([
                "insideBoundingBox": .array([.array([.number(box.lat1), .number(box.lng1), .number(box.lat2), .number(box.lng2)])]),
                "hitsPerPage": .number(1000),
            ])
        ).response
        let boxedIDs = Set(objectIDs(boxed)), inBoxIDs = Set(inBox.compactMap { $0["uniqueIdentifier"]?.stringValue })
        #expect(boxedIDs.count == inBoxIDs.count)
        #expect(boxedIDs.symmetricDifference(inBoxIDs).isEmpty, "box differs from the cities computed inside it")
    }
}

/// Great-circle distance in metres on a sphere of the mean Earth radius, computed independently of the store.
func haversine(_ lat1: Double, _ lng1: Double, _ lat2: Double, _ lng2: Double) -> Double {
    let r = 6_371_008.8, rad = Double.pi / 180
    let dLat = (lat2 - lat1) * rad, dLng = (lng2 - lng1) * rad
    let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * rad) * cos(lat2 * rad) * sin(dLng / 2) * sin(dLng / 2)
    return 2 * r * asin(min(1, a.squareRoot()))
}

/// The GeoNames cities of `../shared/datasets/geonames_cities.py`.
func geonamesCities(size: String, limit: Int) throws -> [JSONValue] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let script = root.deletingLastPathComponent().appendingPathComponent("shared/datasets/geonames_cities.py").path
    guard FileManager.default.fileExists(atPath: script) else { throw FixtureError("the test data \(script) is missing") }
    let r = try ChildProcess.run("/usr/bin/env", ["python3", script, "--size", size, "--limit", String(limit)])
    guard r.status == 0, !r.timedOut else {
        throw FixtureError(
            "\(script) failed with status \(r.status)\(r.timedOut ? " (timed out)" : ""): \(String(decoding: r.stderr, as: UTF8.self).suffix(400))")
    }
    return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
}
