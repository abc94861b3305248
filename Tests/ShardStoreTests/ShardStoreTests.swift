import Foundation
import Items
import QueryPlan
import ShardStore
import Testing

@Suite struct WritingTests {
    @Test func publishingTwiceReplaces() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([item("a", #"{"title": "First"}"#)])
        try store.put([item("a", #"{"title": "Second"}"#)])
        #expect(try store.count() == 1)
        #expect(try store.ids(text("title", "First")) == [])
        #expect(try store.ids(text("title", "Second")) == ["a"])
        #expect(try store.ids(text("title", "first", "cdw")) == [], "the old value left the word index")
    }

    @Test func badItemsAreRejectedOneByOne() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let long = String(repeating: "x", count: ItemDecoder.maxTextBytes + 1)
        let outcomes = try store.write([
            item("good1", #"{"title": "ok"}"#),
            json(#"{"domainIdentifier": "org.example", "attributes": {"title": "no id"}}"#),
            item("wrongType", #"{"title": 5}"#),
            item("badDate", #"{"completionDate": "next tuesday"}"#),
            item("tooLong", #"{"title": "\#(long)"}"#),
            item("good2", #"{"title": "also ok"}"#),
        ])
        #expect(outcomes.count == 6)
        #expect(outcomes[0] == .stored(uniqueIdentifier: "good1"))
        #expect(outcomes[5] == .stored(uniqueIdentifier: "good2"))
        func code(_ o: WriteOutcome) -> ItemError.Code? {
            if case .rejected(_, let e) = o { return e.code }
            return nil
        }
        #expect(code(outcomes[1]) == .missingIdentifier)
        #expect(code(outcomes[2]) == .wrongType)
        #expect(code(outcomes[3]) == .invalidDate)
        #expect(code(outcomes[4]) == .valueTooLong)
        if case .rejected(let uid, let e) = outcomes[2] {
            #expect(uid == "wrongType")
            #expect(e.field == "attributes.title")
        }
        #expect(try store.count() == 2)
        #expect(try store.idSet(.all) == ["good1", "good2"])
    }

    @Test func deleteByIdsDomainsAndAll() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([
            item("a", domain: "org.debian", #"{"title": "a"}"#),
            item("b", domain: "org.debian.games", #"{"title": "b"}"#),
            item("c", domain: "org.debian.games.strategy", #"{"title": "c"}"#),
            item("d", domain: "org.debianx", #"{"title": "d"}"#),
            item("e", domain: "org.other", #"{"title": "e"}"#),
            item("f", domain: "org.debian-ports", #"{"title": "f"}"#),
        ])
        #expect(try store.delete(ids: ["e", "missing"]) == 1)
        #expect(try store.idSet(.domain(["org.debian"])) == ["a", "b", "c"])
        #expect(try store.delete(domains: ["org.debian"]) == 3)
        #expect(try store.idSet(.all) == ["d", "f"])
        #expect(try store.ids(text("title", "b")) == [], "the deleted items left the indexes")
        #expect(try store.deleteAll() == 2)
        #expect(try store.count() == 0)
        try store.put([item("g", #"{"title": "again"}"#)])
        #expect(try store.ids(text("*", "again", "cdw")) == ["g"])
    }

    @Test func expiredItemsAreInvisibleThenPurged() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([
            item("old", expires: "2001-01-01T00:00:00Z", #"{"title": "stale news"}"#),
            item("new", expires: "2999-01-01T00:00:00Z", #"{"title": "fresh news"}"#),
            item("forever", #"{"title": "evergreen news"}"#),
        ])
        #expect(try store.idSet(text("title", "news", "w")) == ["new", "forever"])
        #expect(try store.idSet(.not(text("title", "fresh*"))) == ["forever"])
        #expect(try store.count(matching: .all) == 2)
        #expect(try store.stats().expiredCount == 1)
        #expect(try store.purgeExpired(now: Date()) == 1)
        #expect(try store.count() == 2)
        #expect(try store.purgeExpired(now: Date(timeIntervalSinceReferenceDate: 4e10)) == 1)
        #expect(try store.idSet(.all) == ["forever"])
    }

    @Test func evictingDeletesInTheSameWrite() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([item("moved", domain: "org.a", #"{"title": "x"}"#), item("stays", #"{"title": "y"}"#)])
        let outcomes = try store.write([item("new", #"{"title": "z"}"#)], evicting: ["moved", "unknown"])
        #expect(outcomes == [.stored(uniqueIdentifier: "new")])
        #expect(try store.idSet(.all) == ["stays", "new"])
    }

    @Test func declarationsPersistAcrossReopening() throws {
        let dir = TempDir()
        do {
            let store = try openStore(dir)
            try store.declare([
                AttributeSpec(name: "releaseDate", type: .date),
                AttributeSpec(name: "secret", type: .text, searchable: false),
                AttributeSpec(name: "internalNote", type: .text, searchableByDefault: false),
            ])
        }
        let store = try openStore(dir)
        #expect(store.schema.spec(for: "releaseDate")?.type == .date)
        #expect(store.schema.spec(for: "secret")?.searchable == false)
        try store.put([
            item("a", #"{"releaseDate": "2026-11-01T12:00:00Z", "secret": "hidden words", "internalNote": "memo"}"#),
            item("b", #"{"releaseDate": "2020-01-01", "title": "memo"}"#),
        ])
        // A declared date is a date: a text that isn't one is rejected.
        let outcomes = try store.write([item("c", #"{"releaseDate": "soon"}"#)])
        #expect(!outcomes[0].isStored)
        let nov2026 = ISODate.parse("2026-11-01T00:00:00Z")!.timeIntervalSinceReferenceDate
        #expect(try store.ids(range("releaseDate", nov2026, nil)) == ["a"])
        #expect(throws: StoreError.self) { try store.ids(text("secret", "hidden")) }
        do {
            _ = try store.ids(text("secret", "hidden"))
        } catch let error as StoreError {
            #expect(error.code == .attributeNotSearchable)
        }
        #expect(try store.ids(text("*", "hidden*")) == [], "non-searchable values are not indexed")
        #expect(try store.ids(text("*", "memo")) == ["b"], "searchableByDefault: false keeps it out of *")
        #expect(try store.ids(text("internalNote", "memo")) == ["a"])
        // Non-searchable attributes are still stored and returned.
        var results: [StoredResult] = []
        try store.run(Query(predicate: .domain(["org.example"]))) { results += $0 }
        #expect(results.first { $0.item["uniqueIdentifier"] == .string("a") }?.item["attributes"]?["secret"] == .string("hidden words"))
        // Declarations are refused on read-only stores and for standard names.
        #expect(throws: StoreError.self) { try store.declare([AttributeSpec(name: "title", type: .number)]) }
        let reader = try openStore(dir, mode: .readOnly)
        #expect(throws: StoreError.self) { try reader.declare([AttributeSpec(name: "x", type: .text)]) }
        #expect(throws: StoreError.self) { try reader.write([item("z")]) }
        #expect(reader.schema.spec(for: "releaseDate")?.type == .date)
    }
}

@Suite struct QueryTests {
    /// A small shard with the shapes that matter.
    static func fixture(_ dir: TempDir) throws -> ShardStore {
        let store = try openStore(dir)
        let longText = String(repeating: "filler words about nothing in particular. ", count: 12)
        try store.put([
            item(
                "mywindow", domain: "org.apps",
                #"{"title": "MyWindowClass", "keywords": ["gui", "toolkit"], "rating": 4, "contentCreationDate": "2024-01-10T00:00:00Z"}"#),
            item(
                "broken", domain: "org.apps.games",
                #"{"title": "Broken Window", "keywords": ["glass"], "rating": 2, "contentCreationDate": "2025-06-01T00:00:00Z"}"#),
            item("nswindow", domain: "org.apps", #"{"title": "NSWindow", "rating": 5, "contentCreationDate": "2023-03-03T00:00:00Z"}"#),
            item("cafe", domain: "org.food", #"{"title": "Café Été", "displayName": "crème brûlée", "rating": 3.5}"#),
            item(
                "long", domain: "org.docs",
                #"{"title": "Manual", "contentDescription": "\#(longText)the hidden needle sits here. \#(longText)", "supportsNavigation": true}"#),
            item("custom", domain: "org.docs", #"{"title": "Numbers", "installedSize": 28591, "tags": ["alpha", "beta"]}"#),
        ])
        return store
    }

    @Test func everyPredicateCase() throws {
        let dir = TempDir()
        let store = try Self.fixture(dir)
        let everyone: Set = ["mywindow", "broken", "nswindow", "cafe", "long", "custom"]
        #expect(try store.idSet(.all) == everyone)
        #expect(try store.idSet(.none) == [])
        #expect(try store.idSet(.exists(.named("keywords"))) == ["mywindow", "broken"])
        #expect(try store.idSet(.exists(.named("displayName"))) == ["cafe"])
        #expect(try store.idSet(.exists(.allText)) == everyone)
        #expect(try store.idSet(.exists(.named("neverSeen"))) == [])
        #expect(try store.idSet(.domain(["org.apps"])) == ["mywindow", "broken", "nswindow"])
        #expect(try store.idSet(.domain(["org.food", "org.docs"])) == ["cafe", "long", "custom"])
        #expect(try store.idSet(range("rating", 3, 5)) == ["mywindow", "nswindow", "cafe"])
        #expect(try store.idSet(range("rating", 3, 5, inclusive: false)) == ["mywindow", "cafe"])
        #expect(try store.idSet(range("supportsNavigation", 1, 1)) == ["long"], "booleans compare as 0/1")
        #expect(try store.idSet(.and([.domain(["org.apps"]), range("rating", 4, nil)])) == ["mywindow", "nswindow"])
        #expect(try store.idSet(.or([text("title", "Manual"), range("rating", nil, 2)])) == ["long", "broken"])
        #expect(try store.idSet(.not(.domain(["org.apps"]))) == ["cafe", "long", "custom"])
        #expect(
            try store.idSet(.not(text("title", "*Window*")))
                == ["cafe", "long", "custom", "nswindow"].reduce(into: Set<String>()) { $0.insert($1) }.subtracting(["nswindow"]))
        // Nested: apps that are not (games or rated below 3), or anything with a tag.
        let nested: QueryPlan.Predicate = .or([
            .and([.domain(["org.apps"]), .not(.or([.domain(["org.apps.games"]), range("rating", nil, 3, inclusive: false)]))]),
            .exists(.named("tags")),
        ])
        #expect(try store.idSet(nested) == ["mywindow", "nswindow", "custom"])
        #expect(try store.idSet(.not(.and([text("*", "window", "cw"), .not(range("rating", 5, nil))]))) == ["nswindow", "cafe", "long", "custom"])
    }

    @Test func windowExampleFromAppleDocumentation() throws {
        let dir = TempDir()
        let store = try Self.fixture(dir)
        #expect(try store.idSet(text("title", "Window", "w")) == ["mywindow", "broken"])
        #expect(try store.idSet(text("*", "Window", "w")) == ["mywindow", "broken"])
        #expect(try store.idSet(text("title", "window", "w")) == [], "w alone is case-sensitive")
        #expect(try store.idSet(text("title", "window", "cw")) == ["mywindow", "broken"])
        #expect(try store.idSet(text("title", "NSWindow", "w")) == ["nswindow"])
        #expect(try store.idSet(text("title", "Broken Window", "w")) == ["broken"])
        #expect(try store.idSet(text("title", "Win*", "w")) == ["mywindow", "broken"])
        #expect(try store.idSet(text("title", "window broken", "ct")) == ["broken"], "t: any order")
        #expect(try store.idSet(text("title", "window broken", "cw")) == [], "w: a consecutive run")
    }

    @Test func caseAndDiacriticFolding() throws {
        let dir = TempDir()
        let store = try Self.fixture(dir)
        #expect(try store.idSet(text("title", "Café Été")) == ["cafe"])
        #expect(try store.idSet(text("title", "café été")) == [])
        #expect(try store.idSet(text("title", "café été", "c")) == ["cafe"])
        #expect(try store.idSet(text("title", "CAFE ETE", "cd")) == ["cafe"])
        #expect(try store.idSet(text("title", "Cafe Ete", "d")) == ["cafe"])
        #expect(try store.idSet(text("title", "Cafe Ete", "c")) == [], "without d, e is not é")
        #expect(try store.idSet(text("*", "ete", "cdw")) == ["cafe"])
        #expect(try store.idSet(text("displayName", "BRULEE", "cdt")) == ["cafe"])
        #expect(try store.idSet(text("displayName", "*RUL*", "cd")) == ["cafe"])
        #expect(try store.idSet(text("displayName", "*rûl*")) == ["cafe"])
        #expect(try store.idSet(text("displayName", "*RÛL*")) == [])
        #expect(try store.idSet(text("displayName", "*RUL*", "d")) == [], "d folds diacritics, not case")
        #expect(try store.idSet(text("displayName", "*rul*", "d")) == ["cafe"])
    }

    @Test func wildcardsAtStartMiddleAndEnd() throws {
        let dir = TempDir()
        let store = try Self.fixture(dir)
        #expect(try store.idSet(text("title", "My*")) == ["mywindow"])
        #expect(try store.idSet(text("title", "*Class")) == ["mywindow"])
        #expect(try store.idSet(text("title", "*Window*")) == ["mywindow", "broken", "nswindow"])
        #expect(try store.idSet(text("title", "*window*")) == [])
        #expect(try store.idSet(text("title", "*window*", "c")) == ["mywindow", "broken", "nswindow"])
        #expect(try store.idSet(text("title", "B*n W*w")) == ["broken"])
        #expect(try store.idSet(text("title", "*W*")) == ["mywindow", "broken", "nswindow"], "a one-letter literal scans")
        #expect(try store.idSet(text("title", "*")) == ["mywindow", "broken", "nswindow", "cafe", "long", "custom"])
        #expect(try store.idSet(text("keywords", "gl*")) == ["broken"], "lists match when any element does")
        #expect(try store.idSet(text("keywords", "toolkit")) == ["mywindow"])
        #expect(try store.idSet(text("tags", "beta")) == ["custom"])
        // The needle sits in a long value that the trigram index skips.
        #expect(try store.idSet(text("contentDescription", "*hidden needle*")) == ["long"])
        #expect(try store.idSet(text("*", "*NEEDLE*", "c")) == ["long"])
        #expect(try store.idSet(text("contentDescription", "needle", "w")) == ["long"])
        #expect(try store.idSet(text("contentDescription", "*eedl*", "w")) == ["long"])
        #expect(try store.idSet(text("contentDescription", "filler words*")) == ["long"])
        #expect(try store.idSet(text("contentDescription", "*particular. ")) == ["long"])
        // Text tests against numbers compare the number's canonical text.
        #expect(try store.idSet(text("installedSize", "28591")) == ["custom"])
        #expect(try store.idSet(text("installedSize", "28*")) == ["custom"])
        #expect(try store.idSet(text("rating", "3.5")) == ["cafe"])
        #expect(try store.idSet(text("*", "28591")) == [], "numbers are not text attributes")
    }

    @Test func datesAndNumbers() throws {
        let dir = TempDir()
        let store = try Self.fixture(dir)
        let d2024 = ISODate.parse("2024-01-01")!.timeIntervalSinceReferenceDate
        let d2025 = ISODate.parse("2025-01-01")!.timeIntervalSinceReferenceDate
        #expect(try store.idSet(range("contentCreationDate", d2024, d2025)) == ["mywindow"])
        #expect(try store.idSet(range("contentCreationDate", nil, d2024)) == ["nswindow"])
        #expect(try store.idSet(range("installedSize", 28591, 28591)) == ["custom"])
        #expect(try store.idSet(range("title", 0, nil)) == [], "ranges ignore text values")
    }

    @Test func sortingLimitsAndBatches() throws {
        let dir = TempDir()
        let store = try Self.fixture(dir)
        let rated = range("rating", 0, nil)
        #expect(try store.ids(rated, sort: [.attribute("rating", ascending: true)]) == ["broken", "cafe", "mywindow", "nswindow"])
        #expect(try store.ids(rated, sort: [.attribute("rating", ascending: false)], limit: 2) == ["nswindow", "mywindow"])
        #expect(try store.ids(.all, sort: [.attribute("title", ascending: true)]) == ["broken", "cafe", "long", "mywindow", "nswindow", "custom"])
        #expect(try store.ids(.all, sort: [.attribute("rating", ascending: false)]).suffix(2) == ["long", "custom"], "missing values sort last")
        var batches: [[String]] = []
        var sortValues: [[JSONValue]] = []
        let total = try store.run(Query(predicate: rated, sort: [.attribute("rating", ascending: true)], limit: 3, batchSize: 2)) { batch in
            batches.append(batch.map { $0.item["uniqueIdentifier"]!.stringValue! })
            sortValues += batch.map(\.sortValues)
        }
        #expect(total == 3)
        #expect(batches == [["broken", "cafe"], ["mywindow"]])
        #expect(sortValues == [[.number(2)], [.number(3.5)], [.number(4)]])
        #expect(StoredResult.precedes([.number(2)], [.number(3)], by: [.attribute("rating", ascending: true)]))
        #expect(StoredResult.precedes([.string("b")], [.null], by: [.attribute("title", ascending: false)]))
        var sizes: [Int] = []
        try store.run(Query(predicate: .all, batchSize: 2)) { sizes.append($0.count) }
        #expect(sizes == [2, 2, 2])
        #expect(try store.ids(.all, limit: 0) == [])
        #expect(throws: StoreError.self) { try store.run(Query(predicate: .all, batchSize: 0)) { _ in } }
    }

    @Test func relevanceOrdersByWordMatches() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put(
            [
                item("once", #"{"title": "kernel", "contentDescription": "a module for the system and other things we ship"}"#),
                item("twice", #"{"title": "kernel tools", "contentDescription": "kernel kernel"}"#),
                item("none", #"{"title": "editor"}"#),
            ] + (0..<20).map { item("filler\($0)", #"{"title": "unrelated \#($0)", "contentDescription": "nothing to see"}"#) })
        var results: [StoredResult] = []
        try store.run(Query(predicate: text("*", "kernel", "cdw"), sort: [.relevance])) { results += $0 }
        #expect(results.map { $0.item["uniqueIdentifier"]!.stringValue! } == ["twice", "once"])
        #expect((results[0].score ?? 0) > (results[1].score ?? 0))
    }

    @Test func fetchAttributesRestrictsTheItem() throws {
        let dir = TempDir()
        let store = try Self.fixture(dir)
        var results: [StoredResult] = []
        try store.run(Query(predicate: text("title", "Broken Window"), fetchAttributes: ["title", "rating"])) { results += $0 }
        #expect(results.count == 1)
        let item = results[0].item
        #expect(item["uniqueIdentifier"] == .string("broken"))
        #expect(item["domainIdentifier"] == .string("org.apps.games"))
        #expect(item["attributes"] == .object(["title": .string("Broken Window"), "rating": .number(2)]))
    }

    /// Fetching some attributes skips the others while reading the stored
    /// JSON; the answer must be the whole item, filtered.
    @Test func fetchAttributesAgreesWithFilteringTheWholeItem() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([
            item(
                "a",
                #"{"title": "Quote \" and \\ slash \/ tab\t é 日本 \ud83c\udf0d", "keywords": ["x", "y \"z\"", ""], "rating": 2.5, "flag": true, "contentDescription": "long {not} [json] \"text\"", "depends": ["lib{a}", "c]"], "comment": "a slash at the end \\", "headline": "\\\"q\\\\\" \\\\"}"#
            ),
            item("b", #"{"title": "plain", "rating": -3, "keywords": []}"#),
            item("c", #"{}"#),
        ])
        var whole: [String: JSONValue] = [:]
        try store.run(Query(predicate: .all)) { for r in $0 { whole[r.item["uniqueIdentifier"]!.stringValue!] = r.item } }
        #expect(whole.count == 3)
        for keep in [
            [], ["title"], ["title", "rating"], ["keywords", "flag", "contentDescription"], ["depends", "absent"], ["headline"],
            ["comment", "title"],
        ] as [[String]] {
            var got: [String: JSONValue] = [:]
            try store.run(Query(predicate: .all, fetchAttributes: keep)) { for r in $0 { got[r.item["uniqueIdentifier"]!.stringValue!] = r.item } }
            for (uid, item) in whole {
                guard case .object(var o) = item, case .object(let attrs)? = o["attributes"] else { Issue.record("no attributes"); continue }
                o["attributes"] = .object(attrs.filter { keep.contains($0.key) })
                #expect(got[uid] == .object(o), "\(uid) keeping \(keep)")
            }
        }
    }

    @Test func cancellationStopsALongQuery() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let batch = (0..<3000).map { i in
            item("i\(i)", #"{"title": "item number \#(i) of many", "contentDescription": "\#(String(repeating: "lorem ipsum dolor ", count: 20))"}"#)
        }
        try store.put(batch)
        var polls = 0
        var delivered = 0
        let started = Date()
        do {
            // Every item needs a scan of its long description: cancelled while scanning.
            try store.run(
                Query(predicate: .not(text("*", "*zzz*", "c")), batchSize: 10),
                isCancelled: {
                    polls += 1
                    return polls > 2
                }
            ) { delivered += $0.count }
            Issue.record("the query was not cancelled")
        } catch let error as StoreError {
            #expect(error.code == .cancelled)
        }
        #expect(delivered == 0)
        #expect(Date().timeIntervalSince(started) < 10)
        // Cancelled from the start: nothing is delivered.
        #expect(throws: StoreError.self) {
            try store.run(Query(predicate: .all), isCancelled: { true }) { delivered += $0.count }
        }
        // Cancelled after a while: stops promptly.
        var calls = 0
        delivered = 0
        #expect(throws: StoreError.self) {
            try store.run(
                Query(predicate: text("*", "*ipsum*", "c"), batchSize: 10),
                isCancelled: {
                    calls += 1
                    return calls > 3
                }
            ) { delivered += $0.count }
        }
        #expect(delivered < 3000)
    }

    @Test func readOnlyStoreSeesCommittedWrites() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        #expect(try reader.count() == 0)
        try writer.put([item("a", #"{"title": "fresh", "brandNew": "custom text"}"#)])
        #expect(try reader.ids(text("title", "fresh")) == ["a"])
        #expect(try reader.ids(text("brandNew", "custom*")) == ["a"], "a name created after the reader opened")
        try writer.declare([AttributeSpec(name: "when", type: .date)])
        try writer.put([item("b", #"{"when": "2026-01-01"}"#)])
        // The reader reloads its caches lazily, at its next query: until then
        // it has not seen the declaration, and the query below must reload it.
        #expect(reader.schema.spec(for: "when") == nil)
        #expect(try reader.idSet(range("when", 0, nil)) == ["b"])
        #expect(reader.schema.spec(for: "when")?.type == .date)
        _ = try writer.delete(ids: ["a"])
        #expect(try reader.ids(text("title", "fresh")) == [])
        let stats = try reader.stats()
        #expect(stats.itemCount == 1)
        #expect(stats.fileBytes > 0)
    }
}

@Suite struct FetchTests {
    /// Items come back exactly as the decoder produced them, escapes and all.
    @Test func storedItemsRoundTrip() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let source = json(
            #"""
            {"uniqueIdentifier": "q\"uote\\d/\u00e9\ud83c\udf0d", "domainIdentifier": "org.x",
             "expirationDate": "2999-01-01T00:00:00.250Z",
             "attributes": {"title": "tab\there\nnew line \u0001 ctl", "rating": -1.5e-3, "count": 12345678901,
                            "flag": false, "keywords": ["a", "", "ü"], "place": {"latitude": 37.33, "longitude": -122.03},
                            "completionDate": "2026-11-01T12:00:00+02:00"},
             "entity": {"type": "LandmarkEntity", "id": 42, "priority": 10}}
            """#)
        try store.put([source])
        let expected = try ItemDecoder().decode(source).json
        var results: [StoredResult] = []
        try store.run(Query(predicate: .all)) { results += $0 }
        #expect(results.map(\.item) == [expected])
    }
}

@Suite struct LargeSortTests {
    /// Past a few thousand candidates the store reads sort keys by index scan
    /// instead of item by item; both must give the same order.
    @Test func sortingManyCandidates() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let n = 2600
        try store.put(
            (0..<n).map { i in
                let size = (i * 7919) % 1000
                return i % 10 == 0
                    ? item("i\(i)", #"{"title": "T\#((i * 31) % 97)"}"#)
                    : item("i\(i)", #"{"title": "t\#((i * 31) % 97)", "size": \#(size)}"#)
            })
        let bySize = try store.ids(.all, sort: [.attribute("size", ascending: true)])
        let expected = (0..<n).sorted { a, b in
            let sa = a % 10 == 0 ? Int.max : (a * 7919) % 1000
            let sb = b % 10 == 0 ? Int.max : (b * 7919) % 1000
            return sa != sb ? sa < sb : a < b
        }.map { "i\($0)" }
        #expect(bySize == expected)
        // The same order item by item (few candidates) as by index scan (many).
        let byTitle = try store.ids(.all, sort: [.attribute("title", ascending: false)])
        let few = range("size", 0, 100)
        let fewByTitle = try store.ids(few, sort: [.attribute("title", ascending: false)])
        #expect(fewByTitle.count < 2000 && fewByTitle.count > 50)
        let subset = Set(fewByTitle)
        #expect(byTitle.filter { subset.contains($0) } == fewByTitle)
        // "t96" and "T96" share a folded key; the exact text breaks the tie.
        let first = try store.run(Query(predicate: .all, sort: [.attribute("title", ascending: false)], limit: 1)) { batch in
            #expect(batch[0].sortValues == [.string("t96")])
        }
        #expect(first == 1)
    }
}
