import COpenBLAS
import Foundation
import Items
import SQLite

/// A shard's item vectors in memory: one contiguous row-major `[Float]`
/// (`count × dimension`), so that scoring every item against a query is one
/// matrix-vector product (OpenBLAS `sgemv`), which runs at memory speed.
///
/// One index per shard file per process, shared by the process's read
/// connections (a query worker opens several), loaded lazily by the first
/// semantic search and brought up to date at a search that sees a newer
/// commit: rows whose `seq` is past the last one loaded are (re)loaded, and
/// only when the table then holds fewer rows than memory are deleted ones
/// looked for (one scan of the ids). A write therefore costs a reader the
/// rows it changed, not a reload.
public final class VectorIndex: @unchecked Sendable {
    // Everything below is guarded by `lock`.
    private let lock = NSLock()
    private(set) var dimension = 0
    private var matrix: [Float] = []
    private var ids: [Int64] = []
    private var slot: [Int64: Int] = [:]
    /// The `vectors.seq` of the last rows loaded.
    private var loadedSeq: Int64 = 0

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: VectorIndex] = [:]

    /// The index of the shard file at `path`, shared within the process.
    static func shared(path: String) -> VectorIndex {
        registryLock.lock(); defer { registryLock.unlock() }
        if let index = registry[path] { return index }
        let index = VectorIndex()
        registry[path] = index
        return index
    }

    var count: Int { lock.lock(); defer { lock.unlock() }; return ids.count }

    /// `ids` sorted, worked out once per change.
    private var sortedIDs: [Int64]?

    /// The ids of the items held, sorted.
    func allIDs() -> [Int64] {
        lock.lock(); defer { lock.unlock() }
        if let sortedIDs { return sortedIDs }
        let sorted = ids.sorted()
        sortedIDs = sorted
        return sorted
    }

    /// Brings the index up to date with what `db`'s current read transaction sees.
    func refresh(_ db: Database) throws {
        lock.lock(); defer { lock.unlock() }
        let before = (ids.count, loadedSeq)
        defer { if (ids.count, loadedSeq) != before { sortedIDs = nil } }
        let seq = Int64(try db.prepare("SELECT value FROM meta WHERE key = 'vectors.seq'").scalar()?.string ?? "0") ?? 0
        if seq < loadedSeq { // a shard emptied and written again, or an older snapshot: start over
            matrix = []; ids = []; slot = [:]; loadedSeq = 0; dimension = 0
        }
        if seq > loadedSeq {
            let s = try db.prepare("SELECT item, vector FROM vectors WHERE seq > ?")
            try s.bind(loadedSeq, at: 0)
            while try s.step() {
                let id = s.int64(at: 0)
                guard let data = s.data(at: 1), data.count >= 4, data.count % 4 == 0 else { continue }
                let n = data.count / 4
                if dimension == 0 { dimension = n }
                guard n == dimension else { continue }
                let at: Int
                if let existing = slot[id] {
                    at = existing
                } else {
                    at = ids.count
                    ids.append(id)
                    slot[id] = at
                    matrix.append(contentsOf: repeatElement(0, count: dimension))
                }
                matrix.withUnsafeMutableBytes { raw in
                    _ = data.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: raw[(at * dimension * 4)..<((at + 1) * dimension * 4)]))
                }
            }
            loadedSeq = seq
        }
        let stored = Int(try db.prepare("SELECT count(*) FROM vectors").scalar()?.int64 ?? 0)
        if stored != ids.count {
            var present = Set<Int64>()
            present.reserveCapacity(stored)
            try db.prepare("SELECT item FROM vectors").forEachRow { present.insert($0.int64(at: 0)) }
            for id in ids where !present.contains(id) { removeLocked(id) }
        }
    }

    /// Moves the last row into the removed one's place.
    private func removeLocked(_ id: Int64) {
        guard let at = slot.removeValue(forKey: id) else { return }
        let last = ids.count - 1
        if at != last {
            ids[at] = ids[last]
            slot[ids[at]] = at
            let d = dimension
            matrix.withUnsafeMutableBufferPointer { m in
                for j in 0..<d { m[at * d + j] = m[last * d + j] }
            }
        }
        ids.removeLast()
        matrix.removeLast(dimension)
    }

    /// Each item's dot product with `query` (cosine, both being unit length):
    /// every item when `among` is nil, else those of `among` that have a vector.
    func scores(_ query: [Float], among: [Int64]? = nil) throws -> [(id: Int64, score: Float)] {
        lock.lock(); defer { lock.unlock() }
        guard !ids.isEmpty else { return [] }
        guard query.count == dimension else {
            throw StoreError(.invalidQuery, "the query vector has \(query.count) numbers; this shard's vectors have \(dimension)")
        }
        let d = dimension
        // A few candidates: one dot product each; many: one product over all rows.
        if let among, among.count * 8 < ids.count {
            var out: [(id: Int64, score: Float)] = []
            out.reserveCapacity(among.count)
            matrix.withUnsafeBufferPointer { m in
                query.withUnsafeBufferPointer { q in
                    for id in among {
                        guard let at = slot[id] else { continue }
                        out.append((id, cblas_sdot(blasint(d), m.baseAddress! + at * d, 1, q.baseAddress!, 1)))
                    }
                }
            }
            return out
        }
        var all = [Float](repeating: 0, count: ids.count)
        matrix.withUnsafeBufferPointer { m in
            query.withUnsafeBufferPointer { q in
                all.withUnsafeMutableBufferPointer { y in
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, blasint(ids.count), blasint(d), 1,
                                m.baseAddress!, blasint(d), q.baseAddress!, 1, 0, y.baseAddress!, 1)
                }
            }
        }
        if let among {
            var out: [(id: Int64, score: Float)] = []
            out.reserveCapacity(among.count)
            for id in among { if let at = slot[id] { out.append((id, all[at])) } }
            return out
        }
        return zip(ids, all).map { ($0, $1) }
    }

    /// The `k` best of `scores`, best first; equal scores by smaller id.
    static func top(_ scores: [(id: Int64, score: Float)], k: Int) -> [(id: Int64, score: Float)] {
        guard k > 0, !scores.isEmpty else { return [] }
        func better(_ a: (id: Int64, score: Float), _ b: (id: Int64, score: Float)) -> Bool {
            a.score != b.score ? a.score > b.score : a.id < b.id
        }
        if scores.count <= k { return scores.sorted(by: better) }
        // Keep the k best seen in a sorted buffer; most rows fail the first comparison.
        var best = Array(scores.prefix(k)).sorted(by: better)
        for s in scores.dropFirst(k) where better(s, best[k - 1]) {
            var lo = 0, hi = k - 1
            while lo < hi { let mid = (lo + hi) / 2; if better(s, best[mid]) { hi = mid } else { lo = mid + 1 } }
            best.removeLast()
            best.insert(s, at: lo)
        }
        return best
    }
}

extension ShardStore {
    /// The text each item of a batch is embedded from, for the items that
    /// have one (see ``SemanticText``), decoded with the shard's schema as
    /// ``write(_:evicting:vectors:)`` will decode them. Items that do not
    /// decode are left out (the write rejects them).
    public func semanticTexts(_ items: [JSONValue]) throws -> [(uniqueIdentifier: String, text: String)] {
        try reloadIfChanged()
        guard !schema.semantic.isEmpty || items.contains(where: { $0["entity"] != nil }) else { return [] }
        let decoder = ItemDecoder(schema: schema)
        var out: [(uniqueIdentifier: String, text: String)] = []
        for json in items {
            guard let item = try? decoder.decode(json), let text = SemanticText.text(of: item, schema: schema) else { continue }
            out.append((item.uniqueIdentifier, text))
        }
        return out
    }

    /// Vectors stored in the shard.
    public func vectorCount() throws -> Int {
        Int(try db.prepare("SELECT count(*) FROM vectors").scalar()?.int64 ?? 0)
    }

    /// The next `vectors.seq`, taken once per write transaction that stores vectors.
    func nextVectorSeq() throws -> Int64 {
        let current = Int64(try db.prepare("SELECT value FROM meta WHERE key = 'vectors.seq'").scalar()?.string ?? "0") ?? 0
        try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('vectors.seq', ?)").run([.text(String(current + 1))])
        return current + 1
    }

    /// Replaces an item's vector (nil deletes it).
    func storeVector(_ vector: [Float]?, item id: Int64, seq: Int64) throws {
        let delete = try db.prepare("DELETE FROM vectors WHERE item = ?")
        try delete.bind(id, at: 0)
        try delete.run()
        guard let vector, !vector.isEmpty else { return }
        let insert = try db.prepare("INSERT INTO vectors(item, seq, vector) VALUES (?, ?, ?)")
        try insert.bind(id, at: 0)
        try insert.bind(seq, at: 1)
        try insert.bind(vector.withUnsafeBufferPointer { Data(buffer: $0) }, at: 2)
        try insert.run()
    }

    /// The shard's vector index, current for this connection's read transaction.
    func vectorIndex() throws -> VectorIndex {
        let index = VectorIndex.shared(path: path)
        if searchCache.vectorsVersion != dataVersion {
            try index.refresh(db)
            searchCache.vectorsVersion = dataVersion
        }
        return index
    }

    /// Exact nearest neighbours of `vector` among the shard's items, by
    /// cosine: the `k` best with their unique identifiers. What the benchmark
    /// times; searches use the same index through ``search(_:isCancelled:)``.
    public func nearest(_ vector: [Float], k: Int) throws -> [(uniqueIdentifier: String, score: Float)] {
        do {
            return try db.transaction(.deferred) {
                try reloadIfChanged()
                let best = VectorIndex.top(try vectorIndex().scores(vector), k: k)
                let s = try db.prepare("SELECT uid FROM items WHERE id = ?")
                return try best.map { hit in
                    try s.bind(hit.id, at: 0)
                    defer { try? s.reset() }
                    return (try s.step() ? s.string(at: 0) ?? "" : "", hit.score)
                }
            }
        } catch {
            throw StoreError.wrap(error, "vector search failed")
        }
    }
}
