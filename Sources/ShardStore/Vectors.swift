import COpenBLAS
import Foundation
import Items
import SQLite
import Synchronization
import VectorKernels

/// A shard's item vectors in memory: one contiguous row-major `[Float]`
/// (`count × dimension`), and beside it each row as 8-bit codes with its
/// scale and the length of its rounding error.
///
/// Exact top-k by cosine (dot product, the vectors being unit length) in two
/// passes. The first reads the codes of every row (a quarter of the float
/// rows' memory, which is what a scan of 100,000 rows is bound by) and gives
/// each row an approximate score with a proven error bound: with `v = ŝ·c + e`
/// and the query `q = q̂ + f` likewise, `|q·v − q̂·ŝc| ≤ ‖q̂‖·‖e‖ + ‖f‖·‖v‖`.
/// The k-th best lower bound is a floor that at least k rows reach; a row
/// whose upper bound is below it cannot be in the top k. The second pass
/// scores the remaining rows exactly in float32 (`sdot`), so the answer is
/// exactly the float32 top k: the codes only decide what need not be read.
/// With few candidates (a selective filter) only the second pass runs.
///
/// One index per shard file per process, shared by the process's read
/// connections (a query worker opens several), loaded lazily by the first
/// semantic search and brought up to date at a search that sees a newer
/// commit: rows whose `seq` is past the last one loaded are (re)loaded, and
/// only when the table then holds fewer rows than memory are deleted ones
/// looked for (one scan of the ids). A write therefore costs a reader the
/// rows it changed, not a reload.
///
/// `@unchecked Sendable`: every field is read and written only under `lock`;
/// a search scans the matrix in place while holding it, which a `Mutex`'s
/// closure over a copy-on-write array would make no safer and no faster.
package final class VectorIndex: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var dimension = 0
    private var matrix: [Float] = []
    private var codes: [Int8] = []
    /// Per row: the codes' scale, ‖v − scale·codes‖ and ‖v‖.
    private var scales: [Float] = []
    private var errors: [Float] = []
    private var norms: [Float] = []
    private var ids: [Int64] = []
    private var slot: [Int64: Int] = [:]
    /// The `vectors.seq` of the last rows loaded.
    private var loadedSeq: Int64 = 0
    /// `ids` sorted, worked out once per change.
    private var sortedIDs: [Int64]?

    private static let registry = Mutex<[String: VectorIndex]>([:])

    /// The index of the shard file at `path`, shared within the process.
    static func shared(path: String) -> VectorIndex {
        registry.withLock { r in
            if let index = r[path] { return index }
            let index = VectorIndex()
            r[path] = index
            return index
        }
    }

    var count: Int { lock.lock(); defer { lock.unlock() }; return ids.count }

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
        if seq < loadedSeq {  // a shard emptied and written again, or an older snapshot: start over
            matrix = []; codes = []; scales = []; errors = []; norms = []; ids = []; slot = [:]; loadedSeq = 0; dimension = 0
        }
        if seq > loadedSeq {
            let s = try db.prepare("SELECT item, vector FROM vectors WHERE seq > ?")
            try s.bind(loadedSeq, at: 0)
            while try s.step() {
                guard let data = s.data(at: 1), data.count >= 4, data.count % 4 == 0 else { continue }
                if dimension == 0 { dimension = data.count / 4 }
                guard data.count / 4 == dimension else { continue }
                var v = [Float](repeating: 0, count: dimension)
                _ = v.withUnsafeMutableBytes { data.copyBytes(to: $0) }
                storeLocked(s.int64(at: 0), v)
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

    private func storeLocked(_ id: Int64, _ v: [Float]) {
        let d = dimension
        let at: Int
        if let existing = slot[id] {
            at = existing
        } else {
            at = ids.count
            ids.append(id)
            slot[id] = at
            matrix.append(contentsOf: repeatElement(0, count: d))
            codes.append(contentsOf: repeatElement(0, count: d))
            scales.append(0); errors.append(0); norms.append(0)
        }
        let q = v.withUnsafeBufferPointer { vb in
            codes.withUnsafeMutableBufferPointer { Int8Dot.quantize(vb, into: UnsafeMutableBufferPointer(rebasing: $0[(at * d)..<((at + 1) * d)])) }
        }
        for j in 0..<d { matrix[at * d + j] = v[j] }
        scales[at] = q.scale
        errors[at] = q.error
        norms[at] = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
    }

    /// Moves the last row into the removed one's place.
    private func removeLocked(_ id: Int64) {
        guard let at = slot.removeValue(forKey: id) else { return }
        let last = ids.count - 1, d = dimension
        if at != last {
            ids[at] = ids[last]
            slot[ids[at]] = at
            for j in 0..<d {
                matrix[at * d + j] = matrix[last * d + j]
                codes[at * d + j] = codes[last * d + j]
            }
            scales[at] = scales[last]; errors[at] = errors[last]; norms[at] = norms[last]
        }
        ids.removeLast()
        matrix.removeLast(d); codes.removeLast(d)
        scales.removeLast(); errors.removeLast(); norms.removeLast()
    }

    private func checkDimension(_ query: [Float]) throws {
        guard query.count == dimension else {
            throw StoreError(.invalidQuery, "the query vector has \(query.count) numbers; this shard's vectors have \(dimension)")
        }
    }

    /// The exact float32 dot product of row `at` with `query`.
    private func exact(_ at: Int, _ query: UnsafePointer<Float>) -> Float {
        matrix.withUnsafeBufferPointer { m in cblas_sdot(blasint(dimension), m.baseAddress! + at * dimension, 1, query, 1) }
    }

    /// The exact scores of the given items (those that have a vector).
    func scores(_ query: [Float], of items: [Int64]) throws -> [(id: Int64, score: Float)] {
        lock.lock(); defer { lock.unlock() }
        guard !ids.isEmpty, !items.isEmpty else { return [] }
        try checkDimension(query)
        return query.withUnsafeBufferPointer { q in items.compactMap { id in slot[id].map { (id, exact($0, q.baseAddress!)) } } }
    }

    /// The `k` items with the best dot product with `query`, best first
    /// (equal scores by smaller id): among every row when `among` is nil, else
    /// among those of `among` (sorted) that have a vector. Exact.
    func nearest(_ query: [Float], k: Int, among: [Int64]? = nil) throws -> [(id: Int64, score: Float)] {
        lock.lock(); defer { lock.unlock() }
        guard !ids.isEmpty, k > 0 else { return [] }
        try checkDimension(query)
        let n = ids.count, d = dimension
        return query.withUnsafeBufferPointer { qb -> [(id: Int64, score: Float)] in
            let q = qb.baseAddress!
            // A few candidates: score them exactly, nothing else.
            if let among, among.count * 16 < n {
                return Self.top(among.compactMap { id in slot[id].map { (id, exact($0, q)) } }, k: k)
            }
            var allowed: [Bool]?
            if let among {
                var mask = [Bool](repeating: false, count: n)
                for id in among { if let at = slot[id] { mask[at] = true } }
                allowed = mask
            }
            // First pass: codes.
            var qCodes = [Int8](repeating: 0, count: d)
            let (qScale, qError) = qCodes.withUnsafeMutableBufferPointer { Int8Dot.quantize(qb, into: $0) }
            let qHatNorm = qCodes.reduce(Float(0)) { $0 + Float($1) * Float($1) }.squareRoot() * qScale
            var dots = [Int32](repeating: 0, count: n)
            codes.withUnsafeBufferPointer { c in
                qCodes.withUnsafeBufferPointer { qc in dots.withUnsafeMutableBufferPointer { Int8Dot.dots(c, dimension: d, qc, into: $0) } }
            }
            // Floating-point slack on top of the bound, for the sums above.
            let slack: Float = 1e-5
            // The k best lower bounds, in a small sorted buffer (descending); the floor is its last.
            var floorBuffer = [Float](repeating: -.infinity, count: k)
            var upper = [Float](repeating: -.infinity, count: n)
            var allowedCount = 0
            for i in 0..<n where allowed?[i] ?? true {
                allowedCount += 1
                let approx = scales[i] * qScale * Float(dots[i])
                let b = qHatNorm * errors[i] + qError * norms[i] + slack
                upper[i] = approx + b
                let low = approx - b
                if low > floorBuffer[k - 1] {
                    var j = k - 1
                    while j > 0, floorBuffer[j - 1] < low { floorBuffer[j] = floorBuffer[j - 1]; j -= 1 }
                    floorBuffer[j] = low
                }
            }
            guard allowedCount > 0 else { return [] }
            let floor = allowedCount <= k ? -Float.infinity : floorBuffer[k - 1]
            // Second pass: exact scores of the rows that may reach the floor.
            var candidates: [(id: Int64, score: Float)] = []
            for i in 0..<n where upper[i] >= floor {
                candidates.append((ids[i], exact(i, q)))
            }
            return Self.top(candidates, k: k)
        }
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
    package func semanticTexts(_ items: [JSONValue]) throws -> [(uniqueIdentifier: String, text: String)] {
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
    package func vectorCount() throws -> Int {
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
    /// times; searches use the same index through ``search(_:rawItems:isCancelled:)``.
    package func nearest(_ vector: [Float], k: Int) throws -> [(uniqueIdentifier: String, score: Float)] {
        do {
            return try db.transaction(.deferred) {
                try reloadIfChanged()
                let best = try vectorIndex().nearest(vector, k: k)
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
