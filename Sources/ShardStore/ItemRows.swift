import Items
import SQLite

/// Every item's stored row (its unique identifier and its JSON, exactly the
/// `items` columns' bytes), in memory beside the ``PostingIndex`` it was read
/// with, so that a search takes its page's hits from memory instead of a
/// SQLite lookup each.
///
/// Why: read from SQLite, a two-word search's 20 hits are ~9% of its cycle
/// through a one-shard cluster, half of it finding each row (B-tree descent,
/// WAL index, statement steps), where the peers' engines answer the whole
/// query in the time of those lookups. The JSON is still read by the same functions
/// (``ShardStore/storedResult(json:attributes:uid:layout:)``), from these
/// bytes, for a search's lexical and semantic hits alike
/// (``ShardStore/fetchResultAndUID(_:attributes:rows:)``).
///
/// Exact without a key of its own: an item's row never changes while it
/// exists. `items.id` comes from the `meta` counter `items.nextid`, never
/// reused, and a replaced item gets a new id; only a copy of another file
/// (a new `items.epoch`) gives old ids other rows, and it changes the word
/// index's key too, so the index these rows belong to is no longer used. A
/// row deleted since is never asked for: its id is in no current match.
/// Ids written since the read are not held, and are read from SQLite.
///
/// Flat arrays: the rows' bytes back to back and where each starts, and per
/// id its row (``absent`` when none): the JSON's bytes plus ~12 bytes an
/// item (~60 MiB for 64,000 package descriptions). Not read past ``maxBytes``.
struct ItemRows: Sendable {
    /// Row `r`'s identifier is `bytes[start[2r]..<start[2r + 1]]`, its JSON
    /// `bytes[start[2r + 1]..<start[2r + 2]]`.
    private let bytes: Flat<UInt8>
    private let start: Flat<UInt32>
    /// Per item id, its row (``absent`` when it has none).
    private let row: Flat<UInt32>
    /// Row `r`'s `attributes` object: where it begins and ends in its JSON
    /// (``absent`` when the row has no layout), and its members' keys at
    /// `keys[keyStart[r]..<keyStart[r + 1]]`, each the offset in the JSON
    /// of the key's opening quote (see ``AttributesLayout``).
    private let attributesAt: Flat<UInt32>
    private let attributesEnd: Flat<UInt32>
    private let keyStart: Flat<UInt32>
    private let keys: Flat<UInt32>

    static let absent = UInt32.max
    /// The rows' bytes held at most when built on the heap.
    static let maxBytes = 1 << 30
    /// The same, built in files (``BuildSpace``): what 32-bit offsets allow.
    static let maxBytesInFiles = Int(UInt32.max)

    var count: Int { start.count / 2 }
    private var flats: [Int] {
        [bytes.byteCount, start.byteCount, row.byteCount, attributesAt.byteCount, attributesEnd.byteCount, keyStart.byteCount, keys.byteCount]
    }
    var memoryBytes: Int { flats.reduce(0, +) }
    /// The bytes held on the heap (none when mapped from a derived file).
    var heapBytes: Int { bytes.isOnHeap ? memoryBytes : 0 }

    init(decoding r: inout DerivedReader) throws(DerivedFile.Failure) {
        bytes = try r.flat()
        start = try r.flat()
        row = try r.flat()
        attributesAt = try r.flat()
        attributesEnd = try r.flat()
        keyStart = try r.flat()
        keys = try r.flat()
        let rows = start.count / 2
        try r.check(
            start.count == 2 * rows + 1 && Int(start.last ?? 1) == bytes.count && attributesAt.count == rows
                && attributesEnd.count == rows && keyStart.count == rows + 1 && Int(keyStart.last ?? 1) == keys.count
                && row.allSatisfy { $0 == Self.absent || Int($0) < rows },
            "item rows")
    }

    func encode(into w: inout DerivedWriter) {
        w.put(bytes)
        w.put(start)
        w.put(row)
        w.put(attributesAt)
        w.put(attributesEnd)
        w.put(keyStart)
        w.put(keys)
    }

    /// Reads every row, in the caller's read transaction; nil when an id
    /// does not fit 32 bits or the rows hold more than `maxBytes`.
    init?(db: Database, maxBytes: Int = ItemRows.maxBytes, space: BuildSpace = .heap) throws {
        let size = try db.prepare("SELECT coalesce(sum(length(CAST(uid AS BLOB)) + length(CAST(json AS BLOB))), 0), coalesce(max(id), -1) FROM items")
        defer { try? size.reset() }
        guard try size.step() else { return nil }
        let total = Int(size.int64(at: 0)), maxID = size.int64(at: 1)
        guard total <= min(maxBytes, Int(UInt32.max)), maxID < Int64(UInt32.max) - 1 else { return nil }
        var bytes = try space.builder(UInt8.self, capacity: total)
        var start = try space.builder(UInt32.self)
        start.append(0)
        var row = [UInt32](repeating: Self.absent, count: Int(maxID + 1))
        var attributesAt = try space.builder(UInt32.self), attributesEnd = try space.builder(UInt32.self)
        var keyStart = try space.builder(UInt32.self), keys = try space.builder(UInt32.self)
        keyStart.append(0)
        let s = try db.prepare("SELECT id, uid, json FROM items")
        defer { try? s.reset() }
        while try s.step() {
            let id = s.int64(at: 0)
            guard id >= 0, id <= maxID else { return nil }
            row[Int(id)] = UInt32(start.count / 2)
            for column in 1...2 {
                _ = s.withUTF8(at: column) { bytes.append(contentsOf: $0) }
                guard bytes.count <= Int(UInt32.max) else { return nil }
                start.append(UInt32(bytes.count))
            }
            let layout = s.withUTF8(at: 2) { AttributesLayout($0) } ?? nil
            attributesAt.append(layout.map { UInt32($0.start) } ?? Self.absent)
            attributesEnd.append(layout.map { UInt32($0.end) } ?? Self.absent)
            if let layout { keys.append(contentsOf: layout.keys) }
            keyStart.append(UInt32(keys.count))
        }
        self.bytes = try bytes.finish()
        self.start = try start.finish()
        self.row = try space.flat(row)
        self.attributesAt = try attributesAt.finish()
        self.attributesEnd = try attributesEnd.finish()
        self.keyStart = try keyStart.finish()
        self.keys = try keys.finish()
    }

    /// Calls `body` with item `id`'s identifier, JSON and the layout of its
    /// attributes (nil when the row has none); nil when it is not held.
    func withRow<T>(
        _ id: Int64,
        _ body: (
            _ uid: UnsafeBufferPointer<UInt8>, _ json: UnsafeBufferPointer<UInt8>,
            _ layout: AttributesLayout?
        ) throws -> T
    ) rethrows -> T? {
        guard id >= 0, id < Int64(row.count) else { return nil }
        let r = Int(row[Int(id)])
        guard r != Int(Self.absent) else { return nil }
        let uid = Int(start[2 * r])..<Int(start[2 * r + 1]), json = Int(start[2 * r + 1])..<Int(start[2 * r + 2])
        let layout =
            attributesAt[r] == Self.absent
            ? nil
            : AttributesLayout(
                start: Int(attributesAt[r]), end: Int(attributesEnd[r]),
                keys: keys[Int(keyStart[r])..<Int(keyStart[r + 1])])
        return try bytes.withUnsafeBufferPointer { all in
            try body(UnsafeBufferPointer(rebasing: all[uid]), UnsafeBufferPointer(rebasing: all[json]), layout)
        }
    }
}

/// Where a stored item's `attributes` object and its members' keys are in
/// its JSON, so that a result's few attributes are read without stepping
/// over the others (see ``StrictJSONReader/parseItem(_:keepingAttributes:uid:layout:)``).
///
/// Why: reading a hit's title out of its ~1 KB of JSON would step over every
/// attribute before it (the description, the dependencies: keys are
/// sorted), half of a search's 20 hits' cost with the rows in memory.
///
/// Worked out for JSON as the store writes it (``JSONWriter``: compact):
/// a row whose `attributes` member is not an object, or whose attribute
/// keys hold an escape (its bytes are then not its text), or that does not
/// read as JSON, has none and is read whole.
struct AttributesLayout: Equatable {
    /// The offsets of the object's `{` and of the byte after its `}`.
    let start: Int
    let end: Int
    /// Each member's key: the offset of its opening quote (a slice of
    /// ``ItemRows``' array: no copy per hit).
    let keys: Slice<Flat<UInt32>>

    init(start: Int, end: Int, keys: Slice<Flat<UInt32>>) {
        self.start = start
        self.end = end
        self.keys = keys
    }

    init?(_ json: UnsafeBufferPointer<UInt8>) {
        var reader = StrictJSONReader(bytes: json)
        var found: (Int, Int, [UInt32])?
        let read = reader.members { reader in
            guard let key = reader.string(), reader.colon() else { return false }
            guard key == "attributes" else { return reader.skipValue() }
            guard found == nil else { return false }
            let start = reader.i
            var keys: [UInt32] = []
            let attributes = reader.members { reader in
                let at = reader.i
                guard let k = reader.string(), reader.i - at == k.utf8.count + 2, at <= Int(UInt32.max) else { return false }
                keys.append(UInt32(at))
                return reader.colon() && reader.skipValue()
            }
            guard attributes else { return false }
            found = (start, reader.i, keys)
            return true
        }
        guard read else { return nil }
        guard let found else { return nil }
        start = found.0
        end = found.1
        keys = Flat(found.2)[...]
    }

    static func == (a: AttributesLayout, b: AttributesLayout) -> Bool {
        a.start == b.start && a.end == b.end && a.keys.elementsEqual(b.keys)
    }
}
