import ArgumentParser
import Foundation
import Items
import Logging
import QueryPlan
import SearchParameters
import ShardStore

/// Times a shard's exact vector search: the top 20 by dot product over
/// `--count` stored vectors (100,000 by default), through the same in-memory
/// index and code a query worker uses, and the same with a filter, and a
/// hybrid parameter search (words and vector) on the shard.
///
/// The vectors are random unit vectors of the model's 384 dimensions, not
/// embeddings: embedding 100,000 texts would take over an hour on two cores,
/// and an exact search's cost does not depend on what the numbers mean (every
/// vector is read once per query).
struct VectorBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vectors", abstract: "Exact top-k vector search over a shard's vectors, and hybrid search.")

    @Option(help: "Vectors stored in the shard.") var count = 100_000
    @Option(help: "Numbers per vector (all-MiniLM-L6-v2: 384).") var dimension = 384
    @Option(help: "Best hits wanted.") var k = 20
    @Option(help: "Queries timed.") var queries = 200

    func run() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-vector-bench-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("shard.sqlite").path
        var logger = Logger(label: "limelight.bench")
        logger.logLevel = .warning

        var rng = SplitMix64(state: 14)
        func unitVector() -> [Float] {
            // Sums of uniforms (≈ normal), normalised: directions spread evenly.
            var v = (0..<dimension).map { _ in Float((0..<4).reduce(0.0) { s, _ in s + Double(rng.next() % 1_000_000) / 1_000_000 } - 2) }
            let norm = (v.reduce(0) { $0 + $1 * $1 }).squareRoot()
            for i in v.indices { v[i] /= norm }
            return v
        }
        let sections = ["utils", "libs", "python", "devel", "net", "doc", "misc", "admin"]
        let writer = try ShardStore(path: path, mode: .readWrite, logger: logger)
        let clock = ContinuousClock()
        let t0 = clock.now
        for start in stride(from: 0, to: count, by: 5000) {
            var items: [JSONValue] = []
            var vectors: [String: [Float]] = [:]
            for i in start..<min(count, start + 5000) {
                let uid = "v\(i)"
                items.append(
                    .object([
                        "uniqueIdentifier": .string(uid), "domainIdentifier": .string("bench"),
                        "attributes": .object([
                            "title": .string("item \(i) word\(i % 100)"),
                            "section": .string(sections[i % sections.count]),
                        ]),
                    ]))
                vectors[uid] = unitVector()
            }
            _ = try writer.write(items, vectors: vectors)
        }
        print(String(format: "stored %d items with %d-float vectors in %.1f s", count, dimension, seconds(clock.now - t0)))

        let reader = try ShardStore(path: path, mode: .readOnly, logger: logger)
        print(
            "load average before the queries: "
                + ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " "))
        var t = clock.now
        _ = try reader.nearest(unitVector(), k: k)
        print(String(format: "first search (loads the index into memory): %.0f ms", seconds(clock.now - t) * 1000))

        func time(_ label: String, _ body: ([Float]) throws -> Int) rethrows {
            var ms: [Double] = [], cpu: [Double] = []
            var found = 0
            for _ in 0..<queries {
                let q = unitVector()
                t = clock.now
                let c0 = processCPUSeconds()
                found += try body(q)
                cpu.append((processCPUSeconds() - c0) * 1000)
                ms.append(seconds(clock.now - t) * 1000)
            }
            // CPU time too: on a shared machine the wall clock counts other processes' turns.
            print(
                String(
                    format: "%@: p50 %.2f ms, p99 %.2f ms; CPU p50 %.2f ms (%d queries, %.0f hits each)", label,
                    percentile(ms, 50), percentile(ms, 99), percentile(cpu, 50), queries, Double(found) / Double(queries)))
        }
        try time("vector top-\(k) over \(count) vectors") { try reader.nearest($0, k: k).count }
        var plan = SearchPlan(window: k)
        try time("search, ratio 1, no words") { q in
            plan.semantic = SemanticPlan(vector: q, ratio: 1)
            return try reader.search(plan).hits.count
        }
        plan = try SearchRequest(params: .object(["facetFilters": .array([.string("section:utils")]), "hitsPerPage": .number(Double(k))])).plan
        try time("search, ratio 1, filter section:utils (1/8 of the items)") { q in
            plan.semantic = SemanticPlan(vector: q, ratio: 1)
            return try reader.search(plan).hits.count
        }
        plan = SearchPlan(words: ["word7"], window: k)
        try time("hybrid search, one word (\(count / 100) matches), ratio 0.5") { q in
            plan.semantic = SemanticPlan(vector: q, ratio: 0.5)
            return try reader.search(plan).hits.count
        }
    }

    func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
