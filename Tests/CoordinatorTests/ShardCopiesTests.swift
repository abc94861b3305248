import Testing

@testable import Coordinator

/// ``ShardCopies/stalled(at:limit:)``: which copies the sweep abandons.
@Suite struct ShardCopiesTests {
    static func copy(_ id: String, size: Int, installing: Bool, progressed: ContinuousClock.Instant) -> ShardCopies.Copy {
        var c = ShardCopies.Copy(id: id, shard: 0, source: "ix-a", target: "ix-b", replica: "b")
        c.size = size
        c.installing = installing
        c.progressed = progressed
        return c
    }

    @Test func aCopyThatMovedNoChunkForTheLimitIsStalledAndOneBeingInstalledGetsTimeForItsSize() {
        let now = ContinuousClock.now
        var copies = ShardCopies()
        let sixtySecondsAgo = now - .seconds(61)
        // Mid-copy, silent past the limit: stalled.
        copies.running["silent"] = Self.copy("silent", size: 5_000_000_000, installing: false, progressed: sixtySecondsAgo)
        // The last chunk sent 61 s ago of a 5 GB file: installing gets 500 s more.
        copies.running["installing"] = Self.copy("installing", size: 5_000_000_000, installing: true, progressed: sixtySecondsAgo)
        // A small file being installed gets next to nothing more.
        copies.running["small"] = Self.copy("small", size: 80_000, installing: true, progressed: sixtySecondsAgo)
        // Moving: not stalled.
        copies.running["moving"] = Self.copy("moving", size: 5_000_000_000, installing: false, progressed: now - .seconds(1))
        #expect(copies.stalled(at: now, limit: .seconds(60)) == ["silent", "small"])
        #expect(copies.stalled(at: now + .seconds(500), limit: .seconds(60)) == ["installing", "moving", "silent", "small"])
        #expect(copies.stalled(at: now + .seconds(440), limit: .seconds(60)).contains("installing") == false)
    }
}
