import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

/// The repository's sample Debian packages (300), parsed.
let samplePackages: [JSONValue] = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let text = (try? String(contentsOf: root.appendingPathComponent("samples/debian-packages.jsonl"), encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
}()

func objectIDs(_ r: JSONValue) -> [String] { r["hits"]?.arrayValue?.compactMap { $0["objectID"]?.stringValue } ?? [] }

/// Parameter search through a real cluster: ranking, facets, paging, shards.
@Suite(.serialized)
struct SearchClusterTests {
    static func cluster(shards: Int) async throws -> (ClusterFixture, LimelightClient) {
        let (f, c) = try await ClusterFixture.simple(shards: shards)
        #expect(samplePackages.count == 300)
        // At least once: under a loaded machine the fixture's 1 s liveness can
        // declare the indexer lost mid-write, and the batch must then be sent again.
        let outcome = try await c.publishUntilAcknowledged(samplePackages, retryFor: .seconds(60))
        #expect(outcome.stored == 300, "\(outcome.lastFailure ?? "")")
        return (f, c)
    }

    @Test func rankingFacetsAndPagingOnTheSamplePackages() async throws {
        let (cluster, client) = try await Self.cluster(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }

        // Navigational: the package named so comes first; one typo still finds it.
        let emacs = try await client.search(.object(["query": .string("emacs")])).response
        #expect(objectIDs(emacs).first == "deb:emacs")
        let typo = try await client.search(.object(["query": .string("emcas"), "getRankingInfo": .bool(true)])).response
        #expect(objectIDs(typo).prefix(3).contains("deb:emacs"))
        #expect(typo["hits"]?.arrayValue?.first?["_rankingInfo"]?["nbTypos"]?.intValue == 1)

        // Facet counts over the whole set equal counts made here from the file.
        var sections: [String: Int] = [:]
        for p in samplePackages { sections[p["attributes"]?["section"]?.stringValue ?? "", default: 0] += 1 }
        let all = try await client.search(
            .object([
                "facets": .array([.string("section"), .string("installedSize")]),
                "maxValuesPerFacet": .number(1000), "hitsPerPage": .number(0),
            ])
        ).response
        #expect(all["nbHits"]?.intValue == 300)
        #expect(all["facets"]?["section"]?.objectValue?.compactMapValues(\.intValue) == sections)
        let sizes = samplePackages.compactMap { $0["attributes"]?["installedSize"]?.doubleValue }
        #expect(all["facets_stats"]?["installedSize"]?["min"]?.doubleValue == sizes.min())
        #expect(all["facets_stats"]?["installedSize"]?["sum"]?.doubleValue == sizes.reduce(0, +))

        // A disjunctive facet keeps the counts of the values not picked.
        let top = sections.max { $0.value < $1.value }!.key
        let refined = try await client.search(
            .object([
                "facets": .array([.string("section")]), "disjunctiveFacets": .array([.string("section")]),
                "facetFilters": .array([.array([.string("section:\(top)")])]), "hitsPerPage": .number(0),
            ])
        ).response
        #expect(refined["nbHits"]?.intValue == sections[top])
        #expect(refined["facets"]?["section"]?.objectValue?.count == sections.count)

        // Numeric filters, counted here too.
        let big = sizes.filter { $0 > 1000 }.count
        let numeric = try await client.search(.object(["numericFilters": .array([.string("installedSize > 1000")]), "hitsPerPage": .number(0)]))
            .response
        #expect(numeric["nbHits"]?.intValue == big)
        let filters = try await client.search(
            .object(["filters": .string("installedSize > 1000 AND NOT section:\(top)"), "hitsPerPage": .number(0)])
        ).response
        let bigElsewhere = samplePackages.filter {
            ($0["attributes"]?["installedSize"]?.doubleValue ?? 0) > 1000 && $0["attributes"]?["section"]?.stringValue != top
        }.count
        #expect(filters["nbHits"]?.intValue == bigElsewhere)

        // Paging through everything gives each item once.
        var seen: [String] = []
        var page = 0
        while true {
            let r = try await client.search(
                .object([
                    "page": .number(Double(page)), "hitsPerPage": .number(23),
                    "attributesToRetrieve": .array([.string("title")]),
                ])
            ).response
            let ids = objectIDs(r)
            if ids.isEmpty { break }
            seen += ids
            #expect(r["nbPages"]?.intValue == 14)
            page += 1
        }
        #expect(seen.count == 300)
        #expect(Set(seen).count == 300)
        #expect(Set(seen) == Set(samplePackages.compactMap { $0["uniqueIdentifier"]?.stringValue }))

        // A deep page (every shard sends its best offset + length, the
        // coordinator keeps the page) is the slice of one long page, hit
        // for hit: attributes, highlights and ranking information.
        for query in ["", "lib"] {
            let params: [String: JSONValue] = ["query": .string(query), "getRankingInfo": .bool(true)]
            let long = try await client.search(.object(params.merging(["hitsPerPage": .number(30)]) { $1 })).response
            let longHits = try #require(long["hits"]?.arrayValue)
            #expect(longHits.count >= 12, "\(query): \(longHits.count) hits")
            for page in 1...2 {
                let r = try await client.search(.object(params.merging(["hitsPerPage": .number(6), "page": .number(Double(page))]) { $1 }))
                    .response
                #expect(r["hits"]?.arrayValue == Array(longHits[(page * 6)..<((page + 1) * 6)]), "\(query) page \(page)")
                #expect(r["nbHits"] == long["nbHits"])
            }
        }
    }

    @Test func highlightsAndSnippetsMarkTheMatchedWords() async throws {
        let (cluster, client) = try await Self.cluster(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let r = try await client.search(
            .object([
                "query": .string("intrusion detection"), "attributesToSnippet": .array([.string("contentDescription:6")]),
                "attributesToRetrieve": .array([.string("title"), .string("displayName")]),
                "highlightPreTag": .string("["), "highlightPostTag": .string("]"),
            ])
        ).response
        let hit = try #require(r["hits"]?.arrayValue?.first)
        #expect(hit["objectID"]?.stringValue == "deb:aide")
        #expect(hit["contentDescription"] == nil)  // not retrieved, only snippeted
        let display = hit["_highlightResult"]?["displayName"]
        #expect(display?["value"]?.stringValue == "Advanced [Intrusion] [Detection] Environment - dynamic binary")
        #expect(display?["matchLevel"]?.stringValue == "full")
        #expect(display?["matchedWords"]?.arrayValue?.compactMap(\.stringValue) == ["intrusion", "detection"])
        let snippet = hit["_snippetResult"]?["contentDescription"]?["value"]?.stringValue ?? ""
        #expect(snippet.contains("[intrusion] [detection]"))
        #expect(snippet.hasSuffix("…"))
    }

    @Test func scoresDoNotDependOnTheShardAnItemLivesOn() async throws {
        let queries = ["data", "library files", "emacs", "postgresql client", "documentation", "linux gnu"]
        var answers: [[[String: JSONValue]]] = []
        for shards in [1, 5] {
            let (cluster, client) = try await Self.cluster(shards: shards)
            var perQuery: [[String: JSONValue]] = []
            for q in queries {
                let r = try await client.search(
                    .object([
                        "query": .string(q), "hitsPerPage": .number(50), "getRankingInfo": .bool(true),
                        "attributesToRetrieve": .array([.string("title")]),
                    ])
                ).response
                var ranks: [String: JSONValue] = [:]
                for h in r["hits"]?.arrayValue ?? [] { ranks[h["objectID"]?.stringValue ?? ""] = h["_rankingInfo"] }
                ranks["order"] = .array(objectIDs(r).map { .string($0) })
                ranks["nbHits"] = r["nbHits"]
                perQuery.append(ranks)
            }
            answers.append(perQuery)
            client.close(); cluster.stopAll(); cluster.removeData()
        }
        for (i, q) in queries.enumerated() {
            #expect((answers[0][i]["nbHits"]?.intValue ?? 0) > 0, "\(q)")
            #expect(answers[0][i] == answers[1][i], "\(q): one shard and five shards disagree")
        }
    }

    @Test func badParametersAreErrorsThatNameThem() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        do {
            _ = try await client.search(.object(["filters": .string("price > 1 OR (a:b AND c:d)")]))
            Issue.record("accepted")
        } catch let e as ClientError {
            #expect(e.server?.code == "bad_filter")
            #expect(e.server?.field == "filters")
            #expect(e.server?.position == 13)
        }
        do {
            _ = try await client.search(.object(["hitsPerPge": .number(3)]))
            Issue.record("accepted")
        } catch let e as ClientError {
            #expect(e.server?.code == "unknown_parameter")
            #expect(e.server?.field == "hitsPerPge")
        }
        // The cluster still serves.
        #expect(try await client.search(.object([:])).response["nbHits"]?.intValue == 0)
    }
}

/// The Swift Searcher against a real cluster.
@Suite(.serialized)
struct SearcherTests {
    @Test func loadMoreAppendsPagesAndIsGuarded() async throws {
        let (cluster, client) = try await SearchClusterTests.cluster(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        var params = SearchParams(query: "")
        params.hitsPerPage = 40
        params.other["attributesToRetrieve"] = .array([.string("title")])
        let searcher = Searcher(client: client, params: params)
        await searcher.search()
        var r = try #require(await searcher.results)
        #expect(r.hits.count == 40 && r.nbPages == 8)
        // Concurrent calls: one loads, the other does nothing.
        async let a: Void = searcher.loadMore()
        async let b: Void = searcher.loadMore()
        _ = await (a, b)
        r = try #require(await searcher.results)
        #expect(r.hits.count == 80)
        while r.hasMore {
            await searcher.loadMore()
            r = try #require(await searcher.results)
        }
        #expect(r.hits.count == 300)
        #expect(Set(r.hits.compactMap { $0["objectID"]?.stringValue }).count == 300)
        await searcher.loadMore()  // nothing more: no change
        #expect(await searcher.results?.hits.count == 300)
    }

    @Test func refinementsNarrowAndDisjunctiveFacetsKeepTheirCounts() async throws {
        let (cluster, client) = try await SearchClusterTests.cluster(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        var sections: [String: Int] = [:]
        for p in samplePackages { sections[p["attributes"]?["section"]?.stringValue ?? "", default: 0] += 1 }
        let two = sections.sorted { $0.value > $1.value }.prefix(2).map(\.key)
        let searcher = Searcher(client: client)
        let events = await searcher.events()
        await searcher.setFacet(withName: "section", disjunctive: true)
        await searcher.addFacetRefinement(name: "section", value: two[0])
        await searcher.toggleFacetRefinement(name: "section", value: two[1])
        await searcher.search(userInfo: ["from": "test"])
        var r = try #require(await searcher.results)
        #expect(r.nbHits == sections[two[0]]! + sections[two[1]]!)
        #expect(r.facets["section"] == sections)  // disjunctive: every value still counted
        await searcher.toggleFacetRefinement(name: "section", value: two[1])
        await searcher.search()
        r = try #require(await searcher.results)
        #expect(r.nbHits == sections[two[0]]!)
        // A negated refinement on a conjunctive facet, and a numeric one.
        await searcher.setFacet(withName: "section", disjunctive: false)
        await searcher.removeFacetRefinement(name: "section", value: two[0])
        await searcher.addFacetRefinement(name: "section", value: two[0], inclusive: false)
        await searcher.addNumericRefinement(NumericRefinement(name: "installedSize", op: .greaterThan, value: 1000))
        await searcher.search()
        r = try #require(await searcher.results)
        let expected = samplePackages.filter {
            $0["attributes"]?["section"]?.stringValue != two[0] && ($0["attributes"]?["installedSize"]?.doubleValue ?? 0) > 1000
        }.count
        #expect(r.nbHits == expected)
        // The events came in order: refinements, then the search fired and its result.
        var kinds: [String] = []
        for await e in events {
            switch e {
            case .refinementChanged: kinds.append("refinement")
            case .searchFired(_, _, let info): kinds.append("fired\(info["from"] ?? "")")
            case .result(_, let info): kinds.append("result\(info["from"] ?? "")")
            case .error: kinds.append("error")
            case .staleDropped: kinds.append("stale")
            }
            if kinds.count == 5 { break }
        }
        #expect(kinds == ["refinement", "refinement", "refinement", "firedtest", "resulttest"])
    }

    @Test func aStaleAnswerNeverReplacesANewerOne() async throws {
        let (cluster, client) = try await SearchClusterTests.cluster(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let searcher = Searcher(client: client)
        let events = await searcher.events()
        let collected = Task { () -> [SearcherEvent] in
            var out: [SearcherEvent] = []
            for await e in events { out.append(e) }
            return out
        }
        // A slow search (every hit highlighted and snippeted), then a fast one,
        // until the slow answer arrives second at least once.
        var staleSeen = false
        for _ in 0..<25 where !staleSeen {
            await searcher.update {
                $0.query = "e"
                $0.hitsPerPage = 1000
                $0.facets = ["section", "architecture", "priority", "depends", "authorNames"]
                $0.other["attributesToSnippet"] = .array([.string("contentDescription:30"), .string("displayName:5")])
                $0.other["getRankingInfo"] = .bool(true)
            }
            async let slow: Void = searcher.search(userInfo: ["which": "slow"])
            try await Task.sleep(for: .milliseconds(2))
            await searcher.update {
                $0.query = "emacs"
                $0.hitsPerPage = 1
                $0.facets = []
                $0.other = [:]
            }
            await searcher.search(userInfo: ["which": "fast"])
            await slow
            // Whatever the order, the newest request's answer is what is shown.
            let shown = try #require(await searcher.results)
            #expect(shown.response["query"]?.stringValue == "emacs")
            #expect(shown.hits.count == 1)
            try await Task.sleep(for: .milliseconds(50))
            staleSeen = await searcher.staleAnswersDropped > 0
        }
        #expect(staleSeen, "the slow answer never came second in 25 tries")
        _ = collected
    }
}

/// `limelight search` as a user runs it.
@Suite(.serialized)
struct SearchCommandTests {
    @Test func printsTheResponseAndExitsAsDocumented() async throws {
        let (cluster, client) = try await SearchClusterTests.cluster(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let ep = ["--endpoint", cluster.clientEndpoint]
        let ok = try CommandLineTests.limelight(["search", "--params", #"{"query": "emacs", "hitsPerPage": 2}"#] + ep)
        #expect(ok.status == 0)
        let lines = ok.stdout.split(separator: "\n")
        #expect(lines.count == 1)  // the response object, and nothing else
        let response = try JSONValue.parse(String(lines[0]))
        #expect(objectIDs(response).first == "deb:emacs")
        #expect(response["hitsPerPage"]?.intValue == 2)

        // --params @file
        let file = cluster.data + "/params.json"
        try Data(#"{"facets": ["section"], "hitsPerPage": 0}"#.utf8).write(to: URL(fileURLWithPath: file))
        let fromFile = try CommandLineTests.limelight(["search", "--params", "@" + file] + ep)
        #expect(fromFile.status == 0)
        #expect(try JSONValue.parse(fromFile.stdout)["nbHits"]?.intValue == 300)

        // A bad filter: exit 2, the message and a caret under the position on stderr.
        let bad = try CommandLineTests.limelight(["search", "--params", #"{"filters": "a:b OR (c:d AND e:f)"}"#] + ep)
        #expect(bad.status == 2)
        #expect(bad.stdout.isEmpty)
        #expect(bad.stderr.contains("filters"))
        #expect(bad.stderr.contains("       ^"))
        // An unknown parameter and JSON that is not an object: exit 2.
        #expect(try CommandLineTests.limelight(["search", "--params", #"{"hitsPerPages": 1}"#] + ep).status == 2)
        #expect(try CommandLineTests.limelight(["search", "--params", "[1]"] + ep).status == 2)
        #expect(try CommandLineTests.limelight(["search", "--params", "{not json"] + ep).status == 2)
        // No server: exit 3.
        let down = try CommandLineTests.limelight(["search", "--params", "{}", "--endpoint", "tcp://127.0.0.1:1", "--timeout", "0.5"])
        #expect(down.status == 3)
    }

    @Test func aMissingShardIsNamedAndExits4() async throws {
        let f = try ClusterFixture(shards: 2)
        defer { f.stopAll(); f.removeData() }
        try f.startCoordinator()
        try f.startIndexer("indexer-0", shards: [0, 1])
        try f.startQueryWorker("query-0", shards: [0])
        let client = try LimelightClient(endpoint: f.clientEndpoint)
        defer { client.close() }
        try await Task.sleep(for: .milliseconds(500))
        let r = try CommandLineTests.limelight(["search", "--params", "{}", "--endpoint", f.clientEndpoint])
        #expect(r.status == 4)
        #expect(r.stderr.contains("shard 1"))
        #expect(try JSONValue.parse(r.stdout)["exhaustiveNbHits"]?.boolValue == false)
    }
}
