import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

/// Two apps on one real cluster (coordinator, indexer, query worker as
/// processes, `--require-keys`): no item of one ever reaches the other, in any
/// query language; keys' rights, secured keys' restrictions and expiry, and
/// the limits' errors (docs/security.md).
@Suite(.serialized) struct TenancyTests {
    /// A started cluster with keys, and the master key `--master-key-file` made.
    static func cluster(shards: Int = 3) async throws -> (ClusterFixture, master: String) {
        let f = try ClusterFixture(shards: shards)
        try f.startCoordinator(extra: ["--keys", f.data + "/keys.sqlite", "--require-keys", "--master-key-file", f.data + "/master.key"])
        try f.startIndexer("indexer-0", shards: Array(0..<shards))
        try f.startQueryWorker("query-0", shards: Array(0..<shards))
        let probe = try LimelightClient(endpoint: f.clientEndpoint)
        defer { probe.close() }
        try await f.waitServed(probe)
        let master = try String(contentsOfFile: f.data + "/master.key", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let mode = try FileManager.default.attributesOfItem(atPath: f.data + "/master.key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        return (f, master)
    }

    static func makeKey(
        _ f: ClusterFixture, with key: String, app: String?, role: String, rateLimit: Double? = nil,
        maxItems: Int? = nil
    ) async throws -> String {
        let c = try LimelightClient(endpoint: f.clientEndpoint, key: key)
        defer { c.close() }
        let r = try await c.keys(Body.Keys(action: "create", app: app, role: role, rateLimit: rateLimit, maxItemsPerPublish: maxItems))
        return try #require(r.apiKey)
    }

    static let apps = ["alpha", "beta"]
    /// Words only one app's items hold, and words both hold.
    static let ownWords = ["alpha": ["apple", "apricot", "avocado", "almond"], "beta": ["banana", "bagel", "basil", "barley"]]
    static let sharedWords = ["fresh", "organic", "daily"]
    static let domains = ["org.example", "org.example.sub", "com.shop", ""]
    static let categories = ["fruit", "bakery", "herb"]
    static let perApp = 48

    /// The same identifiers and domains in both apps, similar texts; only
    /// `owner` and the own words tell them apart.
    static func items(_ app: String) -> [JSONValue] {
        (0..<perApp).map { i in
            let own = ownWords[app]!
            return .object([
                "uniqueIdentifier": .string("item-\(i)"),
                "domainIdentifier": .string(domains[i % domains.count]),
                "attributes": .object([
                    "title": .string("\(own[i % own.count]) \(sharedWords[i % sharedWords.count]) \(i)"),
                    "contentType": .string("Product"),
                    "keywords": .array([.string(categories[i % categories.count]), .string(sharedWords[(i + 1) % sharedWords.count])]),
                    "category": .string(categories[i % categories.count]),
                    "price": .number(Double(i)),
                    "owner": .string(app),
                ]),
            ])
        }
    }

    /// An item (or a search hit) that is not the app's, or shows a reserved name.
    static func leak(_ x: JSONValue, app: String) -> String? {
        let owner = x["attributes"]?["owner"] ?? x["owner"]
        if owner != .string(app) { return "owner \(owner.map { "\($0)" } ?? "missing") in \(x)" }
        for field in ["uniqueIdentifier", "objectID", "domainIdentifier"] {
            if let s = x[field]?.stringValue, s.contains("@") { return "reserved name in \(field): \(s)" }
        }
        return nil
    }

    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func noItemOfOneAppReachesAnotherInAnyQueryLanguage() async throws {
        let (f, master) = try await Self.cluster()
        defer { f.stopAll(); f.removeData() }
        var admin: [String: LimelightClient] = [:], search: [String: LimelightClient] = [:]
        for app in Self.apps {
            admin[app] = try LimelightClient(endpoint: f.clientEndpoint, key: try await Self.makeKey(f, with: master, app: app, role: "admin"))
            search[app] = try LimelightClient(endpoint: f.clientEndpoint, key: try await Self.makeKey(f, with: master, app: app, role: "search"))
            let ack = try await admin[app]!.publish(Self.items(app))
            #expect(ack.stored == Self.perApp && ack.rejected == 0)
            #expect(ack.results.allSatisfy { !($0.uniqueIdentifier ?? "").contains("@") })
            let entities: [JSONValue] = (0..<3).map { i in
                .object([
                    "type": .string("Landmark"), "id": .string("\(i)"),
                    "displayRepresentation": .object(["title": .string("\(app) landmark \(i)")]),
                    "properties": .object(["owner": .string(app)]), "domainIdentifier": .string("org.example"),
                ])
            }
            #expect(try await admin[app]!.donateEntities(entities).stored == 3)
        }
        defer { for c in admin.values { c.close() }; for c in search.values { c.close() } }
        let total = Self.perApp + 3

        // Each app sees exactly its own items, under the names it published.
        for app in Self.apps {
            let all = try await collect(search[app]!.query(spotlight(#"title == "*""#)))
            #expect(all.items.count == total)
            #expect(Set(uids(all.items)) == Set((0..<Self.perApp).map { "item-\($0)" } + (0..<3).map { "entity:Landmark:\($0)" }))
            #expect(all.items.compactMap { Self.leak($0, app: app) }.isEmpty)
        }

        var rng = SplitMix(state: 20_261_123)
        let words = Self.ownWords.values.flatMap { $0 } + Self.sharedWords
        var checked = [String: Int]()
        func pick<T>(_ xs: [T]) -> T { xs[Int.random(in: 0..<xs.count, using: &rng)] }
        for round in 0..<600 {
            let app = pick(Self.apps), other = app == "alpha" ? "beta" : "alpha"
            let c = Bool.random(using: &rng) ? search[app]! : admin[app]!
            let w = pick(words), n = Int.random(in: 0..<Self.perApp, using: &rng)
            var seen: [JSONValue] = []
            let language = ["spotlight", "cloudkit", "plan", "search", "suggest", "spotlight-groups"][round % 6]
            switch language {
            case "spotlight":
                let q = pick([
                    #"title == "*""#, #"title == "\#(w)*"cd"#, #"** == "\#(w)"cdw"#, "price > \(n)",
                    "InRange(price, \(n), \(n + 10))", #"owner == "\#(other)""#,
                    #"category == "fruit" || owner == "\#(other)""#, #"!(title == "\#(w)*"c)"#,
                    #"keywords == "\#(w)"cd && price < \#(n)"#,
                ])
                let r = try await collect(c.query(spotlight(q)))
                seen = r.items
                if q.hasPrefix("owner") { #expect(r.items.isEmpty, "\(app): \(q)") }
            case "cloudkit":
                let (dialect, format, args): (String, String, [JSONValue]) = pick([
                    ("cloudkit", "TRUEPREDICATE", []), ("cloudkit", "price > %@", [.number(Double(n))]),
                    ("cloudkit", "owner == %@", [.string(other)]),
                    ("nspredicate", "category == %@ OR owner == %@", [.string("herb"), .string(other)]),
                    ("nspredicate", "NOT (price < %@)", [.number(Double(n))]), ("cloudkit", "title BEGINSWITH %@", [.string(w)]),
                    ("nspredicate", "%K == %@ OR recordID IN %@", [.string("owner"), .string(other), .array([.string("item-\(n)")])]),
                ])
                // Page through with cursors: every page is the app's.
                var cursor: String?
                repeat {
                    let r = try await collect(
                        c.query(
                            Body.QueryRequest(
                                language: dialect, limit: 7, recordType: "Product",
                                predicate: format, arguments: args, cursor: cursor)))
                    seen += r.items
                    cursor = r.completion?.cursor
                } while cursor != nil
                if format.hasPrefix("owner") { #expect(seen.isEmpty) }
            case "plan":
                let p: JSONValue = pick([
                    .object(["op": .string("domain"), "domains": .array([.string(pick(Self.domains.filter { !$0.isEmpty }))])]),
                    .object(["op": .string("identifier"), "ids": .array([.string("item-\(n)"), .string("@\(other)/item-\(n)")])]),
                    .object(["op": .string("not"), "of": .array([.object(["op": .string("domain"), "domains": .array([.string("org")])])])]),
                    .object(["op": .string("domain"), "domains": .array([.string("@\(other)")])]),
                    .object(["op": .string("all")]),
                ])
                let r = try await collect(c.query(Body.QueryRequest(language: "plan", plan: p)))
                seen = r.items
                if p["op"] == .string("identifier") { #expect(uids(r.items) == ["item-\(n)"]) }
            case "search":
                var params: [String: JSONValue] = [
                    "query": .string(pick([w, "", String(w.prefix(3))])), "hitsPerPage": .number(1000),
                    "facets": .array([.string("owner"), .string("category")]),
                ]
                switch round % 4 {
                case 0: params["filters"] = .string("owner:\(other)")
                case 1: params["facetFilters"] = .array([.array([.string("category:fruit"), .string("owner:\(other)")])])
                case 2: params["disjunctiveFacets"] = .array([.string("owner")]); params["facetFilters"] = .array([.string("owner:\(other)")])
                default: params["numericFilters"] = .array([.string("price >= \(n)")])
                }
                let r = try await c.search(.object(params))
                seen = r.response["hits"]?.arrayValue ?? []
                // A deep page (its items rewritten to the app's names only
                // once the page is chosen) is the app's, and the long page's slice.
                var deep = params
                deep["hitsPerPage"] = .number(3)
                deep["page"] = .number(1)
                let d = try await c.search(.object(deep)).response["hits"]?.arrayValue ?? []
                #expect(d == Array(seen.dropFirst(3).prefix(3)), "\(app): page 1 of \(params)")
                seen += d
                let ownerFacet = r.response["facets"]?["owner"]?.objectValue ?? [:]
                #expect(Set(ownerFacet.keys).isSubset(of: [app]), "\(app) sees owner facet \(ownerFacet)")
            case "suggest":
                let text = pick([String(w.prefix(2)), String(w.prefix(1)), "\(pick(Self.sharedWords)) \(String(w.prefix(2)))"])
                let r = try await c.suggest(text, limit: 20, hitsPerPage: 50)
                let otherWords = Set(Self.ownWords[other]!)
                for s in r.suggestions {
                    let ws = s.suggestion.split(separator: " ").map(String.init)
                    #expect(otherWords.isDisjoint(with: ws), "\(app) is offered \(other)'s word: \(s.suggestion)")
                }
                seen = r.response?["hits"]?.arrayValue ?? []
            default:
                let r = try await c.spotlight(pick([w, String(w.prefix(3)), pick(Self.sharedWords)]), perDomain: 2)
                for g in r.groups {
                    #expect(!g.domainIdentifier.contains("@"))
                    seen += g.items
                    let more = try await c.continueSearch(g.continuation, hitsPerPage: 100)
                    let hits = more.response["hits"]?.arrayValue ?? []
                    #expect(hits.count == g.total, "continuation of \(g.domainIdentifier)")
                    seen += hits
                }
            }
            checked[language, default: 0] += 1
            let leaks = seen.compactMap { Self.leak($0, app: app) }
            #expect(leaks.isEmpty, "round \(round), \(language), app \(app): \(leaks.prefix(3))")
        }
        print("tenancy: \(checked.values.reduce(0, +)) random queries without a leak: \(checked.sorted { $0.key < $1.key })")

        // An association names the app's own item; the other app's item of the same identifier is untouched.
        try await admin["alpha"]!.associateEntity(item: "item-5", EntityAssociation(type: "Shelf", id: "s1", priority: 3))
        for app in Self.apps {
            let five = try await collect(
                search[app]!.query(
                    Body.QueryRequest(
                        language: "plan",
                        plan:
                            .object(["op": .string("identifier"), "ids": .array([.string("item-5")])])))
            ).items
            #expect(five.count == 1 && five.first?["entity"]?["type"] == (app == "alpha" ? .string("Shelf") : nil), "\(app): \(five)")
        }
        // The stats say how much, never what.
        let stats = String(decoding: try await admin["beta"]!.stats().serialized(), as: UTF8.self)
        #expect(!stats.contains("item-") && !stats.contains("banana") && !stats.contains("@beta"))

        // Writes stay in their app: alpha's deletes leave beta's items alone.
        #expect(try await admin["alpha"]!.deleteEntities(type: "Landmark") == 3)
        #expect(try await admin["alpha"]!.delete(ids: ["item-0"]) == 1)
        #expect(try await admin["alpha"]!.delete(domains: ["com.shop"]) == Self.perApp / 4)  // item-0 is in org.example
        let betaAll = try await collect(search["beta"]!.query(spotlight(#"title == "*""#)))
        #expect(betaAll.items.count == total)
        #expect(try await admin["alpha"]!.delete(all: true) == total - 3 - 1 - Self.perApp / 4)
        #expect(try await collect(search["alpha"]!.query(spotlight(#"title == "*""#))).items.isEmpty)
        #expect(try await collect(search["beta"]!.query(spotlight(#"title == "*""#))).items.count == total)
    }

    /// The error code of a refused request.
    static func refusal(_ body: () async throws -> Void) async -> String? {
        do { try await body(); return nil } catch let e as ClientError { return e.server?.code ?? "\(e.code)" } catch { return "\(error)" }
    }

    @Test func keysHaveTheirRightsAndNoMore() async throws {
        let (f, master) = try await Self.cluster(shards: 2)
        defer { f.stopAll(); f.removeData() }
        let adminKey = try await Self.makeKey(f, with: master, app: "alpha", role: "admin")
        let searchKey = try await Self.makeKey(f, with: master, app: "alpha", role: "search")
        let admin = try LimelightClient(endpoint: f.clientEndpoint, key: adminKey)
        let searcher = try LimelightClient(endpoint: f.clientEndpoint, key: searchKey)
        let nobody = try LimelightClient(endpoint: f.clientEndpoint)
        let stranger = try LimelightClient(endpoint: f.clientEndpoint, key: "llk_" + String(repeating: "0", count: 64))
        let boss = try LimelightClient(endpoint: f.clientEndpoint, key: master)
        defer { [admin, searcher, nobody, stranger, boss].forEach { $0.close() } }
        let one = [item("a", domain: "d", ["title": .string("one")])]

        #expect(try await admin.publish(one).stored == 1)
        #expect(await Self.refusal { _ = try await searcher.publish(one) } == "forbidden")
        #expect(await Self.refusal { _ = try await searcher.delete(all: true) } == "forbidden")
        #expect(await Self.refusal { _ = try await searcher.donateEntities([]) } == "forbidden")
        #expect(await Self.refusal { _ = try await searcher.stats() } == "forbidden")
        #expect(await Self.refusal { _ = try await searcher.keys(Body.Keys(action: "list")) } == "forbidden")
        #expect(await Self.refusal { _ = try await nobody.publish(one) } == "key_required")
        #expect(await Self.refusal { _ = try await nobody.search(.object([:])) } == "key_required")
        #expect(await Self.refusal { _ = try await stranger.search(.object([:])) } == "invalid_key")
        #expect(await Self.refusal { _ = try await boss.publish(one) } == "forbidden")
        #expect(await Self.refusal { _ = try await boss.search(.object([:])) } == "forbidden")
        #expect(try await nobody.ping().shardCount == 2)  // health checks need no key
        #expect(try await searcher.search(.object(["query": .string("one")])).response["nbHits"] == .number(1))
        _ = try await admin.stats()

        // An admin key manages its own app's keys only.
        #expect(await Self.refusal { _ = try await admin.keys(Body.Keys(action: "create", app: "beta", role: "search")) } == "forbidden")
        let own = try await admin.keys(Body.Keys(action: "create", role: "search"))
        #expect(own.keys.first?["app"] == .string("alpha"))
        let listed = try await admin.keys(Body.Keys(action: "list"))
        #expect(listed.keys.allSatisfy { $0["app"] == .string("alpha") } && listed.keys.count == 3)
        #expect(listed.keys.allSatisfy { $0["hash"] == nil && $0["apiKey"] == nil })
        let everyone = try await boss.keys(Body.Keys(action: "list"))
        #expect(everyone.keys.count == 4 && everyone.keys.contains { $0["role"] == .string("master") })

        // Revoked keys are refused, with the reason.
        _ = try await admin.keys(Body.Keys(action: "revoke", target: searchKey))
        let e = await Self.refusal { _ = try await searcher.search(.object([:])) }
        #expect(e == "key_revoked")
        #expect(await Self.refusal { _ = try await admin.keys(Body.Keys(action: "revoke", target: master)) } == "not_found")
    }

    @Test func securedKeysCarryTheirRestrictionsIntoEveryLanguage() async throws {
        let (f, master) = try await Self.cluster(shards: 2)
        defer { f.stopAll(); f.removeData() }
        let adminKey = try await Self.makeKey(f, with: master, app: "alpha", role: "admin")
        let parent = try await Self.makeKey(f, with: master, app: "alpha", role: "search")
        let admin = try LimelightClient(endpoint: f.clientEndpoint, key: adminKey)
        defer { admin.close() }
        #expect(try await admin.publish(Self.items("alpha")).stored == Self.perApp)

        func secure(_ args: [String]) throws -> String {
            let r = try CommandLineTests.limelight(["keys", "secure", "--parent", parent] + args)
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let fruit = try secure(["--filters", "category:fruit", "--valid-until", "2999-01-01T00:00:00Z"])
        let c = try LimelightClient(endpoint: f.clientEndpoint, key: fruit)
        defer { c.close() }
        let fruits = Set((0..<Self.perApp).filter { $0 % 3 == 0 }.map { "item-\($0)" })
        // The filter holds whatever the language, and cannot be widened.
        #expect(Set(uids(try await collect(c.query(spotlight(#"title == "*" || category == "herb""#))).items)) == fruits)
        #expect(
            Set(
                uids(
                    try await collect(
                        c.query(
                            Body.QueryRequest(
                                language: "cloudkit", recordType: "Product",
                                predicate: "TRUEPREDICATE"))
                    ).items)) == fruits)
        #expect(Set(uids(try await collect(c.query(Body.QueryRequest(language: "plan", plan: .object(["op": .string("all")])))).items)) == fruits)
        let s = try await c.search(
            .object(["query": .string(""), "hitsPerPage": .number(1000), "filters": .string("category:herb OR category:fruit")]))
        #expect(Set(s.response["hits"]?.arrayValue?.compactMap { $0["objectID"]?.stringValue } ?? []) == fruits)
        let sug = try await c.suggest("a", limit: 10, hitsPerPage: 100)
        #expect(sug.response?["hits"]?.arrayValue?.allSatisfy { $0["category"] == .string("fruit") } == true)
        let groups = try await c.spotlight("fresh", perDomain: 1)
        #expect(groups.groups.allSatisfy { g in g.items.allSatisfy { $0["category"] == .string("fruit") } })
        for g in groups.groups {
            let more = try await c.continueSearch(g.continuation, hitsPerPage: 100)
            #expect(more.response["hits"]?.arrayValue?.allSatisfy { $0["category"] == .string("fruit") } == true)
        }
        #expect(await Self.refusal { _ = try await c.publish([]) } == "forbidden")

        // Domains.
        let shop = try LimelightClient(endpoint: f.clientEndpoint, key: try secure(["--domains", "com.shop"]))
        defer { shop.close() }
        let shopItems = try await collect(shop.query(spotlight(#"title == "*""#))).items
        #expect(shopItems.count == Self.perApp / 4 && shopItems.allSatisfy { $0["domainIdentifier"] == .string("com.shop") })

        // Expiry, tampering, and the parent's revocation.
        let expired = try LimelightClient(endpoint: f.clientEndpoint, key: try secure(["--valid-until", "2001-01-01T00:00:00Z"]))
        defer { expired.close() }
        #expect(await Self.refusal { _ = try await expired.search(.object([:])) } == "key_expired")
        var text = String(decoding: Data(base64Encoded: fruit)!, as: UTF8.self)
        text = text.replacingOccurrences(of: "fruit", with: "herb!")
        let forged = try LimelightClient(endpoint: f.clientEndpoint, key: Data(text.utf8).base64EncodedString())
        defer { forged.close() }
        #expect(await Self.refusal { _ = try await forged.search(.object([:])) } == "invalid_key")
        let boss = try LimelightClient(endpoint: f.clientEndpoint, key: master)
        defer { boss.close() }
        _ = try await boss.keys(Body.Keys(action: "revoke", target: parent))
        #expect(await Self.refusal { _ = try await c.search(.object([:])) } == "key_revoked")
    }

    @Test func keyLimitsAreEnforcedWithClearErrors() async throws {
        let (f, master) = try await Self.cluster(shards: 2)
        defer { f.stopAll(); f.removeData() }
        let limited = try LimelightClient(
            endpoint: f.clientEndpoint,
            key: try await Self.makeKey(f, with: master, app: "alpha", role: "admin", rateLimit: 3, maxItems: 5))
        defer { limited.close() }
        let six = (0..<6).map { item("i\($0)", domain: "d", ["title": .string("t")]) }
        do {
            _ = try await limited.publish(six)
            Issue.record("a batch over the key's limit was accepted")
        } catch let e as ClientError {
            #expect(e.server?.code == "too_many_items")
            #expect(e.message.contains("at most 5 items") && e.message.contains("has 6"))
        }
        try await Task.sleep(for: .seconds(1.1))
        #expect(try await limited.publish(Array(six.prefix(5))).stored == 5)
        // Requests past 3 per second are refused; after a second they pass again.
        try await Task.sleep(for: .seconds(1.1))
        var codes: [String] = []
        for _ in 0..<8 {
            do { _ = try await limited.search(.object([:])); codes.append("ok") } catch let e as ClientError {
                codes.append(e.server?.code ?? "?")
                if e.server?.code == "rate_limited" { #expect(e.message.contains("3 requests per second")) }
            }
        }
        print("tenancy: 8 quick searches with a key limited to 3/s: \(codes)")
        #expect(codes.filter { $0 == "ok" }.count >= 3 && codes.filter { $0 == "ok" }.count <= 5)
        #expect(codes.contains("rate_limited"))
        try await Task.sleep(for: .seconds(1.1))
        _ = try await limited.search(.object([:]))
    }

    @Test func theCommandLineManagesKeysAndFindsTheKeysUpWrote() async throws {
        let data = NSTemporaryDirectory() + "limelight-keys-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (up, parts) = try ClusterFixture.startUp([
            "up", "--data", data, "--listen", "tcp://127.0.0.1:0", "--stats-port", "0",
            "--shards", "2", "--indexers", "1", "--query-workers", "1",
        ])  // keys required by default
        defer { kill(up.processIdentifier, SIGTERM); up.waitUntilExit() }
        try #require(parts.count == 4 && parts[0] == "ready")
        let ep = ["--endpoint", parts[1]]
        for file in ["limelight.key", "master.key", "keys.sqlite"] {
            let mode = try FileManager.default.attributesOfItem(atPath: data + "/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }
        let found = ["LIMELIGHT_DATA": data]

        // The default app's admin key is found in the data folder; without it the cluster refuses.
        let line = #"{"uniqueIdentifier": "k1", "domainIdentifier": "org.x", "attributes": {"title": "kiwi"}}"#
        #expect(try CommandLineTests.limelight(["publish", "-"] + ep, input: line + "\n", environment: found).status == 0)
        let mine = try CommandLineTests.limelight(["query", #"title == "*""#, "--json"] + ep, environment: found)
        #expect(mine.status == 0 && mine.stdout.split(separator: "\n").count == 1 && mine.stdout.contains(#""uniqueIdentifier":"k1""#))
        let predicate = try CommandLineTests.limelight(["predicate", "TRUEPREDICATE", "--record-type", "Fruit", "--json"] + ep, environment: found)
        #expect(predicate.status == 0 && predicate.stdout.isEmpty, "\(predicate.stderr)")  // k1 has no contentType
        let search = try CommandLineTests.limelight(["search", "--params", #"{"query": "kiwi"}"#] + ep, environment: found)
        #expect(search.status == 0 && search.stdout.contains(#""nbHits":1"#), "\(search.stdout) \(search.stderr)")
        let keyless = try CommandLineTests.limelight(["query", #"title == "*""#, "--json"] + ep)
        #expect(keyless.status != 0 && keyless.stdout.isEmpty && keyless.stderr.contains("requires an API key"))

        // keys create prints the key alone (the master key is found the same way).
        let made = try CommandLineTests.limelight(["keys", "create", "--app", "shop", "--role", "search"] + ep, environment: found)
        #expect(made.status == 0, "\(made.stderr)")
        let key = made.stdout.trimmingCharacters(in: .newlines)
        #expect(made.stdout == key + "\n" && key.hasPrefix("llk_") && key.count == 68)
        let theirs = try CommandLineTests.limelight(["query", #"title == "*""#, "--json", "--key", key] + ep)
        #expect(theirs.status == 0 && theirs.stdout.isEmpty)  // app "shop" has no items; "default"'s stay apart
        let theirSearch = try CommandLineTests.limelight(["search", "--params", #"{"query": "kiwi"}"#, "--key", key] + ep)
        #expect(theirSearch.status == 0 && theirSearch.stdout.contains(#""nbHits":0"#), "\(theirSearch.stdout)")
        let viaEnv = try CommandLineTests.limelight(["publish", "-"] + ep, input: line + "\n", environment: ["LIMELIGHT_KEY": key])
        #expect(viaEnv.status != 0 && viaEnv.stderr.contains("can only search"))
        let list = try CommandLineTests.limelight(["keys", "list", "--json"] + ep, environment: found)
        #expect(list.status == 0 && list.stdout.split(separator: "\n").count == 3 && list.stdout.contains(#""app":"shop""#))
        #expect(!list.stdout.contains(key))
        #expect(try CommandLineTests.limelight(["keys", "revoke", key] + ep, environment: found).status == 0)
        let revoked = try CommandLineTests.limelight(["query", #"title == "*""#, "--key", key] + ep)
        #expect(revoked.status != 0 && revoked.stderr.contains("revoked"))
        let secured = try CommandLineTests.limelight(["keys", "secure", "--parent", key, "--filters", "price <"])
        #expect(secured.status == 2 && secured.stdout.isEmpty && secured.stderr.contains("filters"))
    }
}
