import Foundation
import SQLite

/// Where each item's unique identifier comes among the shard's, in Swift's
/// `String` order: the order that breaks ties between equally ranked hits
/// (``QueryPlan/SearchRanking/precedes(_:_:_:_:plan:)``, here and in the
/// coordinator's merge), as one integer per item id.
///
/// Why: a common word ties thousands of matches on every criterion (all of
/// "also"'s are in descriptions, none exact), and reading each one's
/// identifier to order them would be most of such a search (a lookup by id
/// per match). With this, only the page's hits have their identifier read.
///
/// Read with the ``PostingIndex``, in its transaction, so exactly as
/// current as its lists: every item a search finds from them is here.
/// Identifiers that are equal as Strings (canonically equivalent, with
/// different bytes) share a place: their order is left open, as comparing
/// the Strings would leave it.
struct ItemOrder: Sendable {
    /// `place[id]`: the item's place; ``absent`` for ids with no item.
    private let place: Flat<UInt32>

    static let absent = UInt32.max

    init(db: Database) throws {
        var ids: [Int64] = [], uids: [String] = []
        let s = try db.prepare("SELECT id, uid FROM items")
        defer { try? s.reset() }
        var maxID: Int64 = -1
        while try s.step() {
            let id = s.int64(at: 0)
            ids.append(id)
            uids.append(s.string(at: 1) ?? "")
            maxID = max(maxID, id)
        }
        var place = [UInt32](repeating: Self.absent, count: maxID >= 0 && maxID < Int64(UInt32.max) ? Int(maxID) + 1 : 0)
        if maxID < Int64(UInt32.max) {
            let sorted = uids.indices.sorted { uids[$0] < uids[$1] }
            var at: UInt32 = 0
            for (k, i) in sorted.enumerated() {
                if k > 0, uids[sorted[k - 1]] < uids[i] { at += 1 }
                if ids[i] >= 0 { place[Int(ids[i])] = at }
            }
        }
        self.place = Flat(place)
    }

    init(decoding r: inout DerivedReader) throws(DerivedFile.Failure) {
        place = try r.flat()
    }

    func encode(into w: inout DerivedWriter) { w.put(place) }

    /// The item's place, nil when it was not in the shard when read.
    @inline(__always)
    func place(of id: Int64) -> UInt32? {
        guard id >= 0, id < Int64(place.count) else { return nil }
        let p = place[Int(id)]
        return p == Self.absent ? nil : p
    }

    var memoryBytes: Int { place.byteCount }
    var heapBytes: Int { place.isOnHeap ? place.byteCount : 0 }
}
