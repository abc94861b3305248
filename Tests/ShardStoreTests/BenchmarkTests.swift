import Foundation
import Items
import QueryPlan
import ShardStore
import Testing

/// Figures on the Debian corpus, beside `shared/bench/peers.py`: run with
/// `LIMELIGHT_BENCH=1 swift test -c release --filter BenchmarkTests`
/// (`LIMELIGHT_BENCH_CORPUS` overrides the corpus path). Prints, asserts nothing.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["LIMELIGHT_BENCH"] == "1"))
struct BenchmarkTests {
    static func percentile(_ xs: [Double], _ p: Double) -> Double {
        let s = xs.sorted()
        return s[min(s.count - 1, Int((p / 100 * Double(s.count - 1)).rounded()))]
    }

    @Test func debianCorpus() throws {
        let env = ProcessInfo.processInfo.environment
        let path = env["LIMELIGHT_BENCH_CORPUS"] ?? "/work/data/debian.jsonl"
        let corpusText = try String(contentsOfFile: path, encoding: .utf8)
        let limit = Int(env["LIMELIGHT_BENCH_ITEMS"] ?? "") ?? Int.max
        let items = try corpusText.split(separator: "\n").prefix(limit).map { try JSONValue.parse(String($0)) }
        let dir = TempDir()
        // LIMELIGHT_BENCH_DB keeps the shard for a look with the sqlite3 shell.
        let dbPath = env["LIMELIGHT_BENCH_DB"] ?? dir.path("bench.db")
        // LIMELIGHT_BENCH_REUSE=1 with LIMELIGHT_BENCH_DB times queries on a kept shard.
        let reuse = env["LIMELIGHT_BENCH_REUSE"] == "1" && FileManager.default.fileExists(atPath: dbPath)
        if !reuse {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dbPath + suffix) }
        }
        let store = try ShardStore(path: dbPath, logger: testLogger)

        func cpuSeconds() -> Double {
            var usage = rusage()
            getrusage(__rusage_who_t(0), &usage)  // RUSAGE_SELF
            return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        }
        let cpu0 = cpuSeconds()
        let t0 = Date()
        var stored = 0
        for start in stride(from: 0, to: reuse ? 0 : items.count, by: 1000) {
            stored += try store.write(Array(items[start..<min(items.count, start + 1000)])).filter(\.isStored).count
        }
        let indexSeconds = Date().timeIntervalSince(t0)
        let indexCPU = cpuSeconds() - cpu0
        let stats = try store.stats()
        if !reuse {
            print(
                String(
                    format:
                        "limelight-store: %d items (%d stored) indexed at %.0f items/s (%.0f per CPU-second); %.1f MB file + %.1f MB WAL; %d values, %d words",
                    items.count, stored, Double(items.count) / indexSeconds, Double(items.count) / indexCPU, Double(stats.fileBytes) / 1e6,
                    Double(stats.walBytes) / 1e6, stats.valueCount, stats.wordCount))
        }

        // Query words as peers.py picks them: from display names and descriptions.
        var rng = SplitMix64(state: 7)
        var words: [String] = []
        let stop: Set = ["with", "this", "that", "from", "package", "contains", "files"]
        let regex = try NSRegularExpression(pattern: "[A-Za-z]{4,12}")
        for _ in 0..<2000 {
            guard case .object(let attrs)? = items.randomElement(using: &rng)!["attributes"] else { continue }
            let s = (attrs["displayName"]?.stringValue ?? "") + " " + (attrs["contentDescription"]?.stringValue ?? "")
            for m in regex.matches(in: s, range: NSRange(s.startIndex..., in: s)) {
                let w = (s as NSString).substring(with: m.range).lowercased()
                if !stop.contains(w) { words.append(w) }
            }
        }
        func word() -> String { words.randomElement(using: &rng)! }
        func timed(_ name: String, _ n: Int, sort: [SortKey] = [], _ make: (Int) -> QueryPlan.Predicate) throws {
            if let only = env["LIMELIGHT_BENCH_ONLY"], !name.hasPrefix(only) { return }
            var latencies: [Double] = []
            var hits = 0
            for i in 0..<n {
                let p = make(i)
                let t = Date()
                hits += try store.run(Query(predicate: p, sort: sort, limit: 20, batchSize: 20)) { _ in }
                latencies.append(Date().timeIntervalSince(t) * 1000)
            }
            print(
                String(
                    format: "  %@: p50 %.3f ms, p99 %.3f ms (%d queries, %.1f hits avg)", name,
                    Self.percentile(latencies, 50), Self.percentile(latencies, 99), n, Double(hits) / Double(n)))
        }
        let n = Int(env["LIMELIGHT_BENCH_QUERIES"] ?? "400")!
        guard n > 0 else { return }
        func wordQuery(_ i: Int) -> QueryPlan.Predicate {
            i % 2 == 0 ? text("*", word(), "cdwt") : .and([text("*", word(), "cdwt"), text("*", word(), "cdwt")])
        }
        try timed("word (1-2 words, top 20 by relevance)", n, sort: [.relevance], wordQuery)
        try timed("word (1-2 words, first 20 found)", n, wordQuery)
        try timed("prefix (** == \"abc*\"cdwt, first 20)", n) { _ in text("*", String(word().prefix(3)) + "*", "cdwt") }
        try timed("wildcard title (title == \"*abcd*\"c, first 20)", n) { _ in
            let w = word()
            return text("title", "*" + String(w.dropFirst().prefix(4)) + "*", "c")
        }
        try timed("wildcard every text (** == \"*abcd*\"c, first 20)", n / 10) { _ in
            let w = word()
            return text("*", "*" + String(w.dropFirst().prefix(4)) + "*", "c")
        }
        // Substring queries while indexing goes on: a query worker's
        // connection asks a title wildcard after each small commit (10 items
        // rewritten). Its first query reads the vocabulary (what each such
        // query paid before the items written since a watermark were checked
        // instead); the rest answer through that stale vocabulary.
        if env["LIMELIGHT_BENCH_ONLY"].map({ "wildcard after".hasPrefix($0) || $0.hasPrefix("wildcard after") }) ?? true {
            let reader = try ShardStore(path: dbPath, mode: .readOnly, logger: testLogger)
            func wildcard() -> QueryPlan.Predicate { text("title", "*" + String(word().dropFirst().prefix(4)) + "*", "c") }
            var t = Date()
            _ = try reader.run(Query(predicate: wildcard(), limit: 20, batchSize: 20)) { _ in }
            let first = Date().timeIntervalSince(t) * 1000
            var latencies: [Double] = []
            let commits = min(n, 200)
            for i in 0..<commits {
                let start = (i * 10) % max(1, items.count - 10)
                _ = try store.write(Array(items[start..<min(items.count, start + 10)]))
                t = Date()
                _ = try reader.run(Query(predicate: wildcard(), limit: 20, batchSize: 20)) { _ in }
                latencies.append(Date().timeIntervalSince(t) * 1000)
            }
            print(
                String(
                    format:
                        "  wildcard after a 10-item commit (title == \"*abcd*\"c, a reader, first 20): first query (reads the vocabulary) %.1f ms; then p50 %.3f ms, p99 %.3f ms (%d commits)",
                    first, Self.percentile(latencies, 50), Self.percentile(latencies, 99), commits))
        }
        try timed("InRange(installedSize), first 20", n) { _ in
            let lo = Double(Int.random(in: 0..<5000, using: &rng))
            return range("installedSize", lo, lo + 500)
        }
        try timed("InRange(installedSize) sorted by installedSize, top 20", n, sort: [.attribute("installedSize", ascending: true)]) { _ in
            let lo = Double(Int.random(in: 0..<5000, using: &rng))
            return range("installedSize", lo, lo + 500)
        }
    }
}
