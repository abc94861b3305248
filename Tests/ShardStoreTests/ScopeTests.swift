import Foundation
import Items
import QueryPlan
import SpotlightQuery
import Testing

@testable import ShardStore

/// App scopes (`domain(["@APP"])` ANDed into every keyed request, see
/// `TenantScope`) and every other domain condition, answered from the
/// connections' domain index, against the plain definition: in each query
/// language, on the writer's connection and on a reader's (a query worker's),
/// after writes, replacements, deletes and domain deletes.
@Suite struct ScopeDifferentialTests {
    /// Apps' reserved domains with nested subdomains, and domains that share
    /// a prefix without being below (`@ab`, `@a-b`, `@a/b`, `org.ab`): `-`
    /// sorts before `.` and `/` right after it.
    static let domains = [
        "@a", "@a.org.x", "@a.org.x.y", "@a.org.xy", "@a-b", "@a/b", "@ab", "@ab.org.x",
        "@abc", "org.a", "org.a.b", "org.ab", "",
    ]
    static let scopes = ["@a", "@a.org", "@a.org.x", "@a.org.x.y", "@ab", "@abc", "@a-b", "org", "org.a", "@", "", "@zz"]

    static func corpus(_ rng: inout SplitMix64, prefix: String, domains: [String] = domains) -> [JSONValue] {
        DifferentialTests.corpus(&rng).map { item in
            guard case .object(var o) = item else { return item }
            o["uniqueIdentifier"] = .string(prefix + (o["uniqueIdentifier"]?.stringValue ?? ""))
            o["domainIdentifier"] = .string(domains.randomElement(using: &rng)!)
            return .object(o)
        }
    }

    /// The shard's items as the definition sees them, kept beside the store.
    struct Shadow {
        var items: [String: Item] = [:]

        mutating func put(_ jsons: [JSONValue]) throws {
            for json in jsons {
                let item = try ItemDecoder().decode(json)
                items[item.uniqueIdentifier] = item
            }
        }

        func matching(_ p: QueryPlan.Predicate) -> Set<String> {
            Set(items.values.filter { Reference.matches(p, $0) }.map(\.uniqueIdentifier))
        }
    }

    static let queryStrings = [
        #"** == "window"cdw"#, #"** == "kernel"cdw && ** == "data"cdw"#, #"title == "Kernel*"c"#,
        #"title == "*indow*"c"#, #"InRange(rating, 1, 3)"#, #"** == "tool*"cdw"#, #"title == "*""#,
    ]

    /// One round of checks on both connections: random plans, the Spotlight
    /// query strings above, the stream of a word query with a limit, and
    /// parameter searches, each within a random scope.
    static func check(_ stores: [ShardStore], _ shadow: Shadow, _ rng: inout SplitMix64, _ when: String) throws {
        for _ in 0..<60 {
            let scope = scopes.randomElement(using: &rng)!
            let p = DifferentialTests.predicate(&rng, depth: 2)
            let scoped = QueryPlan.Predicate.and([.domain([scope]), p]).simplified()
            let expected = shadow.matching(scoped)
            for store in stores {
                #expect(try store.idSet(scoped) == expected, "\(when): \(scoped)")
                #expect(try store.count(matching: scoped) == expected.count, "\(when): \(scoped)")
            }
        }
        let parser = SpotlightQueryParser()
        for text in queryStrings {
            for scope in scopes {
                let scoped = QueryPlan.Predicate.and([.domain([scope]), try parser.parse(text)]).simplified()
                let expected = shadow.matching(scoped)
                for store in stores {
                    #expect(try store.idSet(scoped) == expected, "\(when): \(scope) \(text)")
                    // With a limit, the word and substring streams stop early:
                    // what they deliver is still within the scope.
                    let limited = try store.ids(scoped, limit: 3)
                    #expect(limited.count == min(3, expected.count) && expected.isSuperset(of: limited), "\(when): \(scope) \(text)")
                }
            }
        }
        // A search within a scope gives what the same search within the
        // scope's items named one by one gives (no domain index on that path).
        for _ in 0..<20 {
            let scope = scopes.randomElement(using: &rng)!
            let members = Array(shadow.matching(.domain([scope])))
            var plan = SearchPlan(
                words: [["window"], ["kernel", "data"], ["tool"], [], ["cafe"]].randomElement(using: &rng)!,
                window: 1_000)
            plan.facets = ["tag"]
            let extra: QueryPlan.Predicate = Bool.random(using: &rng) ? .all : range("rating", 1, 4)
            var named = plan
            plan.filter = QueryPlan.Predicate.and([.domain([scope]), extra]).simplified()
            named.filter = QueryPlan.Predicate.and([.identifier(members), extra]).simplified()
            for store in stores {
                let got = try store.search(plan), want = try store.search(named)
                #expect(got == want, "\(when): \(scope) \(plan.words)")
                #expect(got.nbHits <= members.count)
            }
        }
    }

    @Test(arguments: [1, 2] as [UInt64])
    func scopesAgreeWithTheDefinitionThroughWritesAndDeletes(seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let dir = TempDir()
        let writer = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        var shadow = Shadow()
        let stores = [writer, reader]

        let first = Self.corpus(&rng, prefix: "a")
        try writer.put(first)
        try shadow.put(first)
        try Self.check(stores, shadow, &rng, "first write")

        // Items added only: the index is patched with them, new domains too.
        let added = Self.corpus(&rng, prefix: "b", domains: ["@a.org.new", "@a", "@ab.z", "org.a.b.c"]).prefix(50)
        try writer.put(Array(added))
        try shadow.put(Array(added))
        try Self.check(stores, shadow, &rng, "items added")

        // Items replaced (some into another domain), deleted, a domain deleted.
        let replaced = Self.corpus(&rng, prefix: "a").prefix(40)
        try writer.put(Array(replaced))
        try shadow.put(Array(replaced))
        try Self.check(stores, shadow, &rng, "items replaced")
        let gone = shadow.items.keys.sorted().filter { _ in Int.random(in: 0..<5, using: &rng) == 0 }
        #expect(try writer.delete(ids: gone) == gone.count)
        for uid in gone { shadow.items[uid] = nil }
        try Self.check(stores, shadow, &rng, "items deleted")
        let below = shadow.matching(.domain(["@a.org.x"]))
        #expect(try writer.delete(domains: ["@a.org.x"]) == below.count)
        for uid in below { shadow.items[uid] = nil }
        try Self.check(stores, shadow, &rng, "a domain deleted")

        // Added again after a rebuild, then everything gone and written anew.
        let more = Self.corpus(&rng, prefix: "c").prefix(30)
        try writer.put(Array(more))
        try shadow.put(Array(more))
        try Self.check(stores, shadow, &rng, "items added after deletes")
        _ = try writer.deleteAll()
        shadow.items = [:]
        let last = Self.corpus(&rng, prefix: "d").prefix(60)
        try writer.put(Array(last))
        try shadow.put(Array(last))
        try Self.check(stores, shadow, &rng, "all deleted, then written")
    }

    /// The index is patched with items added and items removed (from the
    /// removal log), not read again; when the log no longer reaches back to
    /// the index (a gap in it), removals make it read again. Both
    /// connections follow the same data.
    @Test func changesPatchTheIndexAndAGapInTheLogRereadsIt() throws {
        var rng = SplitMix64(state: 9)
        let dir = TempDir()
        let writer = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        try writer.put(Self.corpus(&rng, prefix: "a"))
        let scope = QueryPlan.Predicate.domain(["@a"])
        _ = try reader.idSet(scope)
        _ = try writer.idSet(scope)
        let reads = (reader.domainIndexReads, writer.domainIndexReads)
        #expect(reads == (1, 1))

        try writer.put([item("new1", domain: "@a.fresh"), item("new2", domain: "@b")])
        #expect(try reader.idSet(scope).contains("new1") && !reader.idSet(scope).contains("new2"))
        #expect(try writer.idSet(.domain(["@a.fresh"])) == ["new1"])
        #expect(reader.domainIndexReads == 1 && writer.domainIndexReads == 1)

        #expect(try writer.delete(ids: ["new1"]) == 1)
        #expect(try !reader.idSet(scope).contains("new1"))
        #expect(try writer.idSet(.domain(["@a.fresh"])).isEmpty)
        #expect(reader.domainIndexReads == 1 && writer.domainIndexReads == 1)

        // Replacements: removed and stored under new ids, in one commit.
        try writer.put([item("new2", domain: "@a"), item("new3", domain: "@a.fresh")])
        #expect(try reader.idSet(scope).isSuperset(of: ["new2", "new3"]))
        #expect(try !writer.idSet(.domain(["@b"])).contains("new2"))
        #expect(reader.domainIndexReads == 1 && writer.domainIndexReads == 1)

        // Two deletes, and the log's entry of the first lost: the readers
        // cannot know it from the log and read the index again.
        #expect(try writer.delete(ids: ["new2"]) == 1)
        #expect(try writer.delete(ids: ["new3"]) == 1)
        try writer.db.execute("DELETE FROM removed WHERE seq = (SELECT max(seq) - 1 FROM removed)")
        #expect(try !reader.idSet(scope).contains("new2") && !reader.idSet(scope).contains("new3"))
        #expect(reader.domainIndexReads == 2)
    }

    /// The removal log keeps its last ``RemovalLog/kept`` entries at least
    /// and twice that at most, with no gap, however many items are removed.
    @Test func theRemovalLogStaysBoundedAndWhole() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        let n = 5 * RemovalLog.kept + 123
        try writer.db.execute(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < \(n)) INSERT INTO removed(item) SELECT i FROM k")
        let rows = try writer.db.prepare("SELECT count(*), min(seq), max(seq) FROM removed")
        #expect(try rows.step())
        let (count, least, most) = (rows.int64(at: 0), rows.int64(at: 1), rows.int64(at: 2))
        try rows.reset()
        #expect(most == Int64(n) && most - least + 1 == count)
        #expect(count >= Int64(RemovalLog.kept) && count < Int64(2 * RemovalLog.kept))
    }

    /// A scope's bits and ids stay one set through appends, and narrow,
    /// intersect and join as the sorted lists do.
    @Test func scopeBitsAreItsIDs() {
        var rng = SplitMix64(state: 97)
        func ids(_ n: Int, below: Int64) -> [Int64] { IDs.sortedUnique((0..<n).map { _ in Int64.random(in: 0..<below, using: &rng) }) }
        var a = ItemScope(ids(300, below: 2_000))
        let b = ItemScope(ids(500, below: 2_000))
        var expected = a.ids
        for step in 0..<5 {
            let more = IDs.sortedUnique((0..<40).map { _ in Int64(2_000 + 700 * step) + Int64.random(in: 0..<700, using: &rng) })
            a.append(more)
            expected += more
            #expect(a.ids == expected && a.bits.ids == expected)
        }
        let candidates = ids(900, below: 6_000)
        #expect(a.filter(candidates) == IDs.intersect(candidates, expected))
        #expect(a.intersection(b).ids == IDs.intersect(expected, b.ids) && a.intersection(b).bits.ids == IDs.intersect(expected, b.ids))
        #expect(a.union(b).ids == IDs.union(expected, b.ids) && a.union(b).bits.ids == IDs.union(expected, b.ids))
    }
}
