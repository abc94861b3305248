import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// The identifier filter may skip a lookup only for an identifier the shard
/// does not hold: every way an item can arrive (this writer, another writer,
/// a copy, more items than the filter was sized for) must still find it.
@Suite struct UIDFilterTests {
    @Test func neverForgetsAndRarelyImagines() {
        var filter = UIDFilter(capacity: 20_000)
        for i in 0..<20_000 { filter.insert("deb:package-\(i)") }
        #expect((0..<20_000).allSatisfy { filter.mayContain("deb:package-\($0)") })
        let imagined = (0..<20_000).filter { filter.mayContain("deb:other-\($0)") }.count
        // 10 bits and 7 probes per identifier: ~0.8% expected.
        #expect(imagined < 600, "\(imagined) false positives of 20,000")
        // The same text as bytes (read from SQLite) and as a String hash alike.
        var bytesFilter = UIDFilter(capacity: 10)
        Array("é-uid".utf8).withUnsafeBufferPointer { bytesFilter.insert($0) }
        #expect(bytesFilter.mayContain("é-uid"))
    }

    @Test func absentIdentifiersSkipTheirLookupAndPresentOnesAreEvicted() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put((0..<50).map { item("here-\($0)", #"{"title": "t"}"#) })
        let before = store.uidLookupsSkipped
        _ = try store.write([item("new", #"{"title": "z"}"#)], evicting: (0..<1000).map { "elsewhere-\($0)" } + ["here-7"])
        // 1,000 absent evictions and one new item's upsert: nearly all skipped.
        #expect(store.uidLookupsSkipped - before > 950)
        #expect(try store.idSet(.all) == Set((0..<50).filter { $0 != 7 }.map { "here-\($0)" } + ["new"]))
        // A replaced item is still found (its old row goes).
        try store.put([item("here-3", #"{"title": "again"}"#)])
        #expect(try store.count() == 50)
    }

    @Test func itemsFromEveryPathAreFound() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([item("first", #"{"title": "a"}"#)])
        #expect(try store.delete(ids: ["nothing"]) == 0)  // builds the filter

        // Another writer's commit: the filter is read again.
        let other = try openStore(dir)
        try other.put([item("by-other", #"{"title": "b"}"#)])
        #expect(try store.delete(ids: ["by-other"]) == 1)
        try other.put([item("by-other-2", #"{"title": "b"}"#)])
        _ = try store.write([], evicting: ["by-other-2"])
        try other.put([item("by-other-3", #"{"title": "b"}"#)])
        #expect(try store.deleteEntities(type: "none", ids: ["x"]) == 0)
        #expect(try store.delete(ids: ["by-other-3"]) == 1)
        #expect(try store.idSet(.all) == ["first"])

        // More items than the filter was sized for: it is read again, larger.
        try store.put((0..<5000).map { item("bulk-\($0)") })
        #expect(try store.delete(ids: ["bulk-0", "bulk-4999", "first"]) == 3)

        // A content replaced from a copy.
        let source = try openStore(dir, "source.db")
        try source.put([item("copied", #"{"title": "c"}"#)])
        #expect(try source.snapshot(to: dir.path("snapshot")) >= 0)
        _ = try store.replaceContent(withCopyAt: dir.path("snapshot"))
        #expect(try store.delete(ids: ["copied"]) == 1)
        #expect(try store.count() == 0)
    }
}
