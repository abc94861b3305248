import Foundation
import Items
import SQLite

/// The slots a shard keeps after a split: a domain's slot is
/// `hash(domain) mod slots` and the shard keeps those with
/// `slot mod shards == shard`. The hash is ``Items/DomainHash``, the one the
/// coordinator routes by: only the exact domain decides, not its parent's,
/// so `org.debian.games` may stay where `org.debian` leaves.
package struct SlotFilter: Sendable, Hashable {
    package var slots: Int
    package var shards: Int
    package var shard: Int

    package init(slots: Int, shards: Int, shard: Int) {
        self.slots = slots
        self.shards = shards
        self.shard = shard
    }

    /// Whether the shard keeps the items of the domain of these UTF-8 bytes.
    package func keeps<C: Collection<UInt8>>(utf8 domain: C) -> Bool {
        guard slots > 0, shards > 0 else { return false }
        return Int(DomainHash.fnv1a(utf8: domain) % UInt64(slots)) % shards == shard
    }

    package func keeps(domain: String) -> Bool { keeps(utf8: domain.utf8) }

    /// As the `meta` row `split.keep` holds it.
    var stored: String { "\(slots):\(shards):\(shard)" }

    init?(stored: String) {
        let parts = stored.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 3 else { return nil }
        self.init(slots: parts[0], shards: parts[1], shard: parts[2])
    }
}

/// After a split a shard holds rows of slots another shard now owns. The
/// switch only marks them (``markMoved(keeping:)``, one small transaction,
/// so the map can change within milliseconds); from then on every read of
/// this file — by the indexer's connection or a query worker's — leaves the
/// items of those domains out (``slotScope()``, applied with the domain
/// conditions in ``scoped(_:_:)``, so queries, counts, searches, facets and
/// suggestions alike), and the indexer deletes them in the background in
/// small transactions (``purgeMovedBatch(limit:)``) that do not hold the
/// shard's writer for long; the last one removes the mark.
extension ShardStore {
    /// The mark of a purge under way, if any.
    package func movedSlots() throws -> SlotFilter? {
        try db.prepare("SELECT value FROM meta WHERE key = 'split.keep'").scalar()?.string.flatMap(SlotFilter.init(stored:))
    }

    /// Marks the rows of every domain `keep` refuses as moved: left out of
    /// every answer from this commit on, deleted by later
    /// ``purgeMovedBatch(limit:)`` calls. Returns how many items it left out.
    package func markMoved(keeping keep: SlotFilter) throws -> Int {
        try requireWritable("mark moved slots")
        do {
            return try db.transaction(.immediate) {
                let s = try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('split.keep', ?1)")
                try s.bind(keep.stored, at: 0)
                try s.run()
                var moved = 0
                try db.prepare("SELECT domain, count(*) FROM items GROUP BY domain").forEachRow { row in
                    if !keep.keeps(domain: row.string(at: 0) ?? "") { moved += Int(row.int64(at: 1)) }
                }
                logger.info("marked the slots another shard owns", metadata: ["store.moved": "\(moved)", "store.kept": "\(keep.stored)"])
                return moved
            }
        } catch {
            throw StoreError.wrap(error, "cannot mark moved slots")
        }
    }

    /// Deletes up to `limit` items of the domains the mark says moved, in
    /// one transaction, found through the domain index (`items_domain`);
    /// when none is left, removes the mark in the same transaction.
    /// `remaining` is false once the purge is done (or none was under way).
    package func purgeMovedBatch(limit: Int) throws -> (deleted: Int, remaining: Bool) {
        try requireWritable("purge moved slots")
        // Read first: no write transaction while no purge is under way.
        guard try movedSlots() != nil else { return (0, false) }
        do {
            return try db.transaction(.immediate) {
                guard let keep = try movedSlots() else { return (0, false) }
                var ids: [Int64] = []
                let domains = try db.prepare("SELECT DISTINCT domain FROM items").map { $0.string(at: 0) ?? "" }
                for domain in domains where !keep.keeps(domain: domain) && ids.count < limit {
                    let select = try db.prepare("SELECT id FROM items WHERE domain = ?1 LIMIT ?2")
                    try select.bind(domain, at: 0)
                    try select.bind(Int64(limit - ids.count), at: 1)
                    ids += try select.map { $0.int64(at: 0) }
                }
                for id in ids { try removeItem(id: id) }
                if ids.count < limit {
                    try db.execute("DELETE FROM meta WHERE key = 'split.keep'")
                    logger.info("purged the slots another shard owns", metadata: ["store.deleted": "\(ids.count)", "store.kept": "\(keep.stored)"])
                    return (ids.count, false)
                }
                return (ids.count, true)
            }
        } catch {
            throw StoreError.wrap(error, "cannot purge moved slots")
        }
    }

    /// Every slot filter a read applies now: the mark of a purge under way,
    /// and the map the request was routed by (``routedSlots``). Empty when
    /// every item is the shard's.
    package func slotFilters() throws -> [SlotFilter] {
        [try movedSlots(), routedSlots].compactMap { $0 }
    }

    /// The items of the domains this shard still owns while a purge is under
    /// way, or under the map the request was routed by; nil when neither
    /// applies (every item is the shard's). Each is read once per change of
    /// the data, from the connection's ``DomainIndex`` when it has one: a
    /// hash per distinct domain, not per item.
    func slotScope() throws -> ItemScope? {
        let marked = try heldWhileTheDataIsSame(\.kept) { () throws -> ItemScope? in
            guard let keep = try movedSlots() else { return nil }
            return try items(keptBy: keep)
        }
        guard let routed = routedSlots else { return marked }
        let version = dataSeen
        let scope: ItemScope
        if let (held, filter, value) = universeCache.routed, held == version, filter == routed {
            scope = value
        } else {
            scope = try items(keptBy: routed)
            universeCache.routed = (version, routed, scope)
        }
        return marked.map { $0.intersection(scope) } ?? scope
    }

    /// The items of the domains `keep` keeps.
    private func items(keptBy keep: SlotFilter) throws -> ItemScope {
        if let index = try currentDomainIndex() { return ItemScope(index.ids { keep.keeps(utf8: $0) }) }
        var ids: [Int64] = []
        let s = try db.prepare("SELECT domain, id FROM items")
        defer { try? s.reset() }
        while try s.step() {
            let id = s.int64(at: 1)
            if s.withUTF8(at: 0, { keep.keeps(utf8: $0) }) ?? keep.keeps(domain: "") { ids.append(id) }
        }
        return ItemScope(ids.sorted())
    }
}
