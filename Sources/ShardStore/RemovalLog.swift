import SQLite

/// The shard's removal log: the ids of the items deleted, in the order of
/// their deletes, written by a trigger on `items` (see ``Layout``) so that
/// no statement that removes an item (a delete, a replacement, a purge, a
/// split's purge, every item at once) can leave it out.
///
/// What it is for: a reader's in-memory structures of the items (the
/// ``DomainIndex``, the facet columns, the universe) are patched with each
/// commit rather than read again. Item ids are never reused and come from
/// the `meta` counter `items.nextid`, so the items stored since a structure
/// was current are those at or above the counter it saw (a read by id
/// range), and the log gives those removed since: a structure is then exact
/// for the data of the new commit with a range read and a few log rows,
/// whatever the shard's size. A bulk re-publish, where every item is a
/// replacement (removed, stored again under a new id), is the case that
/// needs it: without the log, removals could only be found by reading every
/// id again.
///
/// The log keeps at least ``kept`` entries: at every ``kept``-th entry a
/// trigger drops those older than the last ``kept``. Entries' `seq` follow
/// each other with no gap (the largest is never dropped, so SQLite's next
/// rowid is always one past it), so a reader that finds the first entry
/// after its mark missing knows the log no longer reaches back to it and
/// reads its structure again.
enum RemovalLog {
    /// Entries the log keeps at least.
    static let kept = 32_768
}

/// Where the data stood when a structure was last current: every item id
/// below ``watermark`` accounted for, every removal up to ``removedSeq``
/// applied, in the content ``epoch`` names (a copy replacing the content
/// gives a new one).
struct ChangeMark: Equatable {
    var watermark: Int64
    var removedSeq: Int64
    var epoch: String
}

extension ShardStore {
    /// The mark of the data this connection reads now; nil when there is
    /// none to patch from: while it stores items (the id counter is in
    /// memory then), or when the shard has no id counter or no removal log
    /// (a file no writer of this build has opened yet).
    func changeMark() throws -> ChangeMark? {
        guard pendingItemID == nil, hasRemovalLog else { return nil }
        guard let next = try db.prepare("SELECT value FROM meta WHERE key = 'items.nextid'").scalar()?.string.flatMap({ Int64($0) })
        else { return nil }
        let seq = try db.prepare("SELECT max(seq) FROM removed").scalar()?.int64 ?? 0
        return ChangeMark(watermark: next, removedSeq: seq, epoch: try itemsEpoch())
    }

    /// The items removed after `old` up to `new`, sorted and unique (some may
    /// be at or above `old`'s watermark: stored and removed since); nil
    /// when they cannot be known from the log (it no longer reaches back to
    /// `old`, or the content was replaced), and the structure must be read again.
    func removed(since old: ChangeMark, upTo new: ChangeMark) throws -> [Int64]? {
        guard old.epoch == new.epoch, old.watermark <= new.watermark, old.removedSeq <= new.removedSeq else { return nil }
        guard old.removedSeq < new.removedSeq else { return [] }
        let s = try db.prepare("SELECT seq, item FROM removed WHERE seq > ? AND seq <= ? ORDER BY seq")
        try s.bind(old.removedSeq, at: 0)
        try s.bind(new.removedSeq, at: 1)
        defer { try? s.reset() }
        var expected = old.removedSeq + 1
        var ids: [Int64] = []
        while try s.step() {
            guard s.int64(at: 0) == expected else { return nil }
            expected += 1
            ids.append(s.int64(at: 1))
        }
        guard expected == new.removedSeq + 1 else { return nil }
        return IDs.sortedUnique(ids)
    }
}
