import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// A split's switch marks the slots a shard no longer owns
/// (``ShardStore/markMoved(keeping:)``) and purges them in the background
/// (``ShardStore/purgeMovedBatch(limit:)``): from the mark on, every read —
/// on the writer's connection and on a query worker's — answers as if they
/// were gone, batch after batch, writes in between.
@Suite struct SlotPurgeTests {
    static let filter = SlotFilter(slots: 4096, shards: 2, shard: 0)
    static let domains = (0..<40).map { "test.slots.d\($0)" }

    /// FNV-1a (``DomainHash``, the coordinator's routing hash), for two domains
    /// worked out by hand: `org.debian` is slot 0 mod 2, `org.debian.games` 1.
    @Test func slotsFollowTheDomainsOwnHash() {
        #expect(Self.filter.keeps(domain: "org.debian"))
        #expect(!Self.filter.keeps(domain: "org.debian.games"))
        #expect(SlotFilter(slots: 4096, shards: 2, shard: 1).keeps(domain: "org.debian.games"))
        #expect(!SlotFilter(slots: 0, shards: 2, shard: 0).keeps(domain: "org.debian"))
    }

    func fill(_ s: ShardStore) throws -> (kept: Set<String>, moved: Set<String>) {
        var items: [JSONValue] = []
        var kept: Set<String> = [], moved: Set<String> = []
        for i in 0..<400 {
            let domain = Self.domains[i % Self.domains.count]
            let id = "w:\(i)"
            items.append(item(id, domain: domain, #"{"title": "widget \#(i)", "section": "s\#(i % 3)"}"#))
            if Self.filter.keeps(domain: domain) { kept.insert(id) } else { moved.insert(id) }
        }
        try s.put(items)
        return (kept, moved)
    }

    /// Every kind of read, against the items that should be left in.
    /// Suggestions are checked while marked only: unmarked, they come from
    /// the vocabulary, which may lag by ``ShardStore/vocabularyMaxAge``.
    func expectAnswers(_ s: ShardStore, _ kept: Set<String>, _ when: String, marked: Bool = true) throws {
        #expect(try s.idSet(.all) == kept, "query, \(when)")
        #expect(try s.idSet(text("title", "widget*", "cd")) == kept, "word query, \(when)")
        #expect(try s.count(matching: .all) == kept.count, "count, \(when)")
        let r = try s.search(SearchPlan(words: ["widget"], facets: ["section"], window: 1_000))
        #expect(Set(r.hits.map(\.uniqueIdentifier)) == kept, "search, \(when)")
        #expect((r.facets["section"] ?? [:]).values.reduce(0, +) == kept.count, "facets, \(when)")
        let empty = try s.search(SearchPlan(words: [], window: 1_000))
        #expect(Set(empty.hits.map(\.uniqueIdentifier)) == kept, "browse, \(when)")
        if marked {
            let suggestion = try s.suggest(SearchPlan(words: ["widg"]), limit: 5).first { $0.text == "widget" }
            #expect(suggestion?.count == kept.count, "suggestion, \(when)")
        }
        let keptDomains = Set(Self.domains.filter { Self.filter.keeps(domain: $0) })
        #expect(Set(try s.domains().keys) == keptDomains, "domains, \(when)")
        for domain in Self.domains.prefix(6) {
            let found = try s.idSet(.domain([domain]))
            #expect(Self.filter.keeps(domain: domain) ? !found.isEmpty : found.isEmpty, "domain \(domain), \(when)")
        }
    }

    @Test func markedSlotsAreLeftOutUntilPurgedInBatches() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        var (kept, moved) = try fill(writer)
        #expect(!kept.isEmpty && !moved.isEmpty)
        let reader = try openStore(dir, mode: .readOnly)
        #expect(try reader.idSet(.all) == kept.union(moved))

        #expect(try writer.markMoved(keeping: Self.filter) == moved.count)
        #expect(try writer.movedSlots() == Self.filter)
        #expect(try writer.count() == kept.count)
        try expectAnswers(reader, kept, "after the mark")
        try expectAnswers(writer, kept, "after the mark, writer")

        var batches = 0
        while true {
            let (deleted, remaining) = try writer.purgeMovedBatch(limit: 7)
            #expect(deleted <= 7)
            batches += 1
            // A write between batches, in a kept domain.
            let domain = Self.domains.first { Self.filter.keeps(domain: $0) }!
            try writer.put([item("new:\(batches)", domain: domain, #"{"title": "widget new", "section": "s0"}"#)])
            kept.insert("new:\(batches)")
            if batches % 5 == 1 { try expectAnswers(reader, kept, "after batch \(batches)", marked: remaining) }
            if !remaining { break }
        }
        #expect(batches >= moved.count / 7)
        #expect(try writer.movedSlots() == nil)
        #expect(try writer.purgeMovedBatch(limit: 7).remaining == false)
        try expectAnswers(reader, kept, "after the purge", marked: false)
        // Gone from the file, not only from answers.
        #expect(try writer.count() == kept.count)
    }

    /// A query routed by the map after a split, to a shard that has not
    /// marked yet (``ShardStore/routedSlots``), reads as if the mark were
    /// there; the next request on the same connection, routed by no map,
    /// reads every row again. With a mark too, a row is read only when
    /// both keep it.
    @Test func aRequestRoutedByTheNewMapLeavesOutTheSlotsItGivesAway() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        let (kept, moved) = try fill(writer)
        let reader = try openStore(dir, mode: .readOnly)
        reader.routedSlots = Self.filter
        try expectAnswers(reader, kept, "routed by the new map")
        reader.routedSlots = nil
        #expect(try reader.idSet(.all) == kept.union(moved))
        #expect(try reader.count(matching: .all) == kept.count + moved.count)
        reader.routedSlots = SlotFilter(slots: 4096, shards: 2, shard: 1)
        #expect(try reader.idSet(.all) == moved)
        _ = try writer.markMoved(keeping: Self.filter)
        #expect(try reader.idSet(.all).isEmpty, "marked for shard 0, routed as shard 1")
        reader.routedSlots = Self.filter
        try expectAnswers(reader, kept, "marked and routed by the new map")
    }

    /// Marking again (a coordinator that took over resends the purge) after
    /// the purge finished finds nothing moved and changes nothing.
    @Test func markingAgainIsHarmless() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        let (kept, _) = try fill(s)
        _ = try s.markMoved(keeping: Self.filter)
        while try s.purgeMovedBatch(limit: 100).remaining {}
        #expect(try s.markMoved(keeping: Self.filter) == 0)
        #expect(try s.idSet(.all) == kept)
        #expect(try s.purgeMovedBatch(limit: 100).deleted == 0)
        #expect(try s.movedSlots() == nil)
    }
}
