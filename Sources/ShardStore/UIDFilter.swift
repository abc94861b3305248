import SQLite

/// A Bloom filter of the unique identifiers a shard holds, kept by its
/// writing connection so that looking up an identifier it does not hold
/// costs a few hashes instead of an index search.
///
/// Most identifiers a writer looks up are not there: a new item's upsert
/// asks whether it replaces one, and every publish to a cluster of S shards
/// asks each shard to evict the batch's items that went elsewhere (an item
/// whose domain moved), S - 1 of every S of them absent, each an index
/// search of a few microseconds. The filter answers "certainly not" for
/// ~99% of them; "maybe" goes to the index, so answers never change.
///
/// The filter may only ever hold more than the shard (never less), which is
/// why it is this connection's alone: every item this connection stores is
/// added as its row is inserted, a failed transaction leaves extra bits (still
/// a superset), and a change by any other connection — or a content replaced
/// from a copy — drops it (``ShardStore/reloadIfChanged()``), to be read
/// again from the items table at the next lookup. Deleted items keep their bits until then.
struct UIDFilter {
    private var bits: [UInt64]
    private let bitCount: Int
    /// Identifiers added (with repeats).
    private(set) var count = 0
    /// Past this many, false positives grow past ~1% and the filter is read anew, larger.
    let capacity: Int
    static let hashes = 7

    /// A filter for `capacity` identifiers at ~1% false positives (10 bits each).
    init(capacity: Int) {
        self.capacity = max(1, capacity)
        bitCount = max(64, self.capacity * 10)
        bits = [UInt64](repeating: 0, count: (bitCount + 63) / 64)
    }

    /// Two independent 64-bit hashes of the identifier's UTF-8 bytes; the
    /// filter's seven probes are `a + i * b` (Kirsch and Mitzenmacher). A
    /// String and the same text read from SQLite hash alike.
    private static func hashes(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64) {
        var h1 = Hasher(), h2 = Hasher()
        h1.combine(bytes: UnsafeRawBufferPointer(bytes))
        h2.combine(0x9E37_79B9_7F4A_7C15 as UInt64)
        h2.combine(bytes: UnsafeRawBufferPointer(bytes))
        return (UInt64(bitPattern: Int64(h1.finalize())), UInt64(bitPattern: Int64(h2.finalize())) | 1)
    }

    mutating func insert(_ bytes: UnsafeBufferPointer<UInt8>) {
        let (a, b) = Self.hashes(bytes)
        for i in 0..<UInt64(Self.hashes) {
            let bit = Int((a &+ i &* b) % UInt64(bitCount))
            bits[bit >> 6] |= 1 << UInt64(bit & 63)
        }
        count += 1
    }

    mutating func insert(_ uid: String) {
        var uid = uid
        uid.withUTF8 { insert($0) }
    }

    /// False when the identifier was certainly never added.
    func mayContain(_ uid: String) -> Bool {
        var uid = uid
        let (a, b) = uid.withUTF8 { Self.hashes($0) }
        for i in 0..<UInt64(Self.hashes) {
            let bit = Int((a &+ i &* b) % UInt64(bitCount))
            if bits[bit >> 6] & (1 << UInt64(bit & 63)) == 0 { return false }
        }
        return true
    }
}

extension ShardStore {
    /// Whether an item with this identifier may be stored here: false means
    /// it certainly is not, and its index lookup can be skipped (see
    /// ``UIDFilter``). Reads the filter on first use after a change by another
    /// connection, sized for twice the items held.
    func mayHold(uid: String) throws -> Bool {
        if uidFilter == nil {
            let n = Int(try db.prepare("SELECT count(*) FROM items").scalar()?.int64 ?? 0)
            var filter = UIDFilter(capacity: max(4096, 2 * n))
            try db.prepare("SELECT uid FROM items").forEachRow { row in
                _ = row.withUTF8(at: 0) { filter.insert($0) }
            }
            uidFilter = filter
        }
        if uidFilter!.mayContain(uid) { return true }
        uidLookupsSkipped += 1
        return false
    }

    /// Adds an identifier this connection has just stored; a filter past its
    /// capacity is dropped and read again, larger, when next needed.
    func filterStored(uid: String) {
        guard uidFilter != nil else { return }
        uidFilter!.insert(uid)
        if uidFilter!.count > uidFilter!.capacity { uidFilter = nil }
    }
}
