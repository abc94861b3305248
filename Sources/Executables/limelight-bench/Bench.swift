import ArgumentParser
import Foundation
import Items
import LimelightClient
import Logging
import QueryPlan
import SearchParameters
import ShardStore
import SpotlightQuery
import WireProtocol
import ZeroMQ

/// Benchmarks, printed beside the peers (raw SQLite FTS5 and Tantivy) in one run.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limelight-bench",
        abstract: "Index a corpus and time queries, beside ../shared/bench/peers.py on the same corpus.",
        subcommands: [
            StoreBench.self, ClusterBench.self, ScaleBench.self, WritesBench.self, RESTBench.self, PathBench.self, LoadBench.self, StagesBench.self,
            EmbedBench.self,
            VectorBench.self, DeriveBench.self,
        ],
        defaultSubcommand: StoreBench.self)
}

struct CorpusOptions: ParsableArguments {
    @Option(help: "JSON Lines corpus (e.g. from ../shared/datasets/debian_packages.py).") var corpus: String
    @Option(help: "Queries of each kind.") var queries = 200
    @Option(help: "peers.py to run on the same corpus; 'none' to skip.") var peers = "../shared/bench/peers.py"
    @Option(help: "Peer engines (peers.py: sqlite-fts5, tantivy, xapian).") var engines = "sqlite-fts5,tantivy,xapian"
    @Option(help: "Query kinds to time (comma-separated); all when omitted.") var kinds: String?

    func wants(_ kind: String) -> Bool { kinds.map { $0.split(separator: ",").contains(Substring(kind)) } ?? true }

    func loadLines() throws -> [String] {
        let text = try String(contentsOfFile: corpus, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// Runs peers.py and returns its JSON rows.
    func runPeers() -> [[String: Any]] {
        guard peers != "none" else { return [] }
        return runScript(peers, ["--engines", engines, "--queries", String(queries * 2)])
    }

    /// Runs a Python script on the corpus with `--json` and returns its JSON
    /// rows (none when the script is missing or fails).
    func runScript(_ script: String, _ arguments: [String]) -> [[String: Any]] {
        guard script != "none", FileManager.default.fileExists(atPath: script),
            let (output, _) = try? runToEnd("/usr/bin/env", ["python3", script, corpus] + arguments + ["--json"])
        else { return [] }
        return output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

/// Runs a program to its end: what it wrote on standard output, and its exit status.
func runToEnd(_ executable: String, _ arguments: [String]) throws -> (output: String, status: Int32) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (String(decoding: data, as: UTF8.self), p.terminationStatus)
}

/// Words for queries: drawn from the corpus's descriptions with a fixed seed, as peers.py does.
struct QueryWords {
    var words: [String] = []
    var sizes: [Double] = []
    /// The pool's 40 most frequent words ("python", "library", "data"…):
    /// what people type first, each matching thousands of items.
    var common: [String] = []

    init(lines: [String], count: Int) {
        var rng = SplitMix64(state: 7)
        let stop: Set<String> = ["with", "this", "that", "from", "package", "contains", "files"]
        var pool: [String] = []
        for _ in 0..<min(2000, lines.count) {
            let line = lines[Int(rng.next() % UInt64(lines.count))]
            guard let v = try? JSONValue.parse(line), let a = v["attributes"] else { continue }
            let text = (a["displayName"]?.stringValue ?? "") + " " + (a["contentDescription"]?.stringValue ?? "")
            for w in Words.split(text, camelCase: false) where (4...12).contains(w.count) && w.allSatisfy({ $0.isASCII && $0.isLetter }) {
                let lw = w.lowercased()
                if !stop.contains(lw) { pool.append(lw) }
            }
            if let s = a["installedSize"]?.doubleValue { sizes.append(s) }
        }
        for _ in 0..<count { words.append(pool[Int(rng.next() % UInt64(pool.count))]) }
        let frequency = Dictionary(pool.map { ($0, 1) }, uniquingKeysWith: +)
        common = frequency.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(40).map(\.key)
        sizes.sort()
    }
}

extension QueryWords {
    /// Each word with another drawn at random (`seed`), as a search of 20
    /// hits with their titles: the benchmarks' two-word free-text query.
    func twoWordSearches(seed: UInt64) -> [JSONValue] {
        var rng = SplitMix64(state: seed)
        return words.map { a -> JSONValue in
            let b = words[Int(rng.next() % UInt64(words.count))]
            return .object(["query": .string("\(a) \(b)"), "attributesToRetrieve": .array([.string("title")])])
        }
    }
}

/// User+system CPU time of the whole process (all threads), in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(0), &usage)  // RUSAGE_SELF
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// CPU time of the calling thread, in seconds: query latency without the
/// time other processes on a shared machine took from us.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func percentile(_ xs: [Double], _ p: Double) -> Double {
    guard !xs.isEmpty else { return .nan }
    let s = xs.sorted()
    return s[min(s.count - 1, Int((p / 100 * Double(s.count - 1)).rounded()))]
}

func fmt(_ d: Double, _ places: Int = 3) -> String { String(format: "%.\(places)f", d) }

/// The query kinds measured, as Spotlight query strings.
func queryKinds(_ w: QueryWords, count: Int) -> [(String, [String])] {
    var rng = SplitMix64(state: 11)
    let word = w.words.prefix(count).map { "** == \"\($0)\"cdw" }
    let prefix = w.words.prefix(count).map { "** == \"\($0.prefix(4))*\"cdw" }
    let wildcard = w.words.prefix(count).map { "title == \"*\($0.prefix(4))*\"c" }
    // The same over a long text (package descriptions run to hundreds of bytes).
    let wildcardLong = w.words.prefix(count).map { "contentDescription == \"*\($0.prefix(4))*\"c" }
    let ranges = (0..<count).map { _ -> String in
        let a = w.sizes[Int(rng.next() % UInt64(w.sizes.count))]
        return "InRange(installedSize, \(Int(a)), \(Int(a * 1.1 + 10)))"
    }
    let prefix3 = w.words.prefix(count).map { "** == \"\($0.prefix(3))*\"cdw" }
    // Two words typed, as half of peers.py's queries are.
    let twoWords = (0..<count).map { i -> String in
        let a = w.words[i], b = w.words[Int(rng.next() % UInt64(w.words.count))]
        return "** == \"\(a)\"cdw && ** == \"\(b)\"cdw"
    }
    return [
        ("word", word), ("two words", twoWords), ("prefix", prefix), ("wildcard", wildcard), ("wildcard long", wildcardLong), ("InRange", ranges),
        ("prefix3", prefix3),
    ]
}

/// Indexes straight into one shard store and times queries against it.
struct StoreBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "store", abstract: "The store and query language on one machine.")
    @OptionGroup var corpus: CorpusOptions
    @Option(help: "Items per write transaction.") var batch = 1000
    @Option(help: "Print this many of the slowest queries of each kind.") var slowest = 0
    @Option(help: "Keep the shard at this path; when it exists already, skip indexing and only time queries.") var database: String?
    @Flag(help: "Time suggestions only with the suggestion index read (not first term by term).") var suggestionIndexOnly = false
    @Option(
        help:
            "Store every item as this app's (its reserved domain and identifier, as a publish with the app's key does) and time each query kind and search twice, in turn: unscoped, and scoped to the app as its keys scope every request."
    )
    var app: String?
    @Option(
        help:
            "With --app: deal the items among this many apps in turn (the first is --app's, the others named after it), so that the scope is a part of the shard."
    )
    var apps = 1

    func run() async throws {
        let lines = try corpus.loadLines()
        let dir = NSTemporaryDirectory() + "limelight-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let path = database ?? dir + "/shard.sqlite"
        let reuse = database.map { FileManager.default.fileExists(atPath: $0) } ?? false
        let store = try ShardStore(path: path, mode: .readWrite, logger: logger)
        // Parsed before the clock starts, as peers.py loads its corpus first.
        let scope = app.map(BenchScope.init)
        let parsed: [JSONValue] = reuse ? [] : lines.compactMap { try? JSONValue.parse($0) }
        let items = parsed.indices.map { i -> JSONValue in
            guard let app else { return parsed[i] }
            return BenchScope(app: i % apps == 0 ? app : app + String(i % apps)).qualify(parsed[i])
        }
        let t0 = Date()
        let cpu0 = processCPUSeconds()
        var stored = 0
        var i = 0
        while i < items.count {
            stored += try store.write(Array(items[i..<min(items.count, i + batch)])).filter(\.isStored).count
            i += batch
        }
        let indexSeconds = Date().timeIntervalSince(t0)
        let indexCPU = processCPUSeconds() - cpu0
        let words = QueryWords(lines: lines, count: corpus.queries)
        let reader = try ShardStore(path: path, mode: .readOnly, logger: logger)
        let parser = SpotlightQueryParser()
        print(
            "Limelight store: \(stored) items indexed at \(Int(Double(stored) / indexSeconds)) items/s (\(fmt(indexSeconds, 1)) s wall, \(fmt(indexCPU, 1)) s CPU: \(Int(Double(stored) / indexCPU)) items per CPU-second)"
        )
        print(String(repeating: "-", count: 72))
        print("query kind      p50 ms     p99 ms    mean hits   CPU p50 ms  CPU p99 ms   (limit 20, one shard)")
        var mix: [Double] = []
        if corpus.wants("wildcard") {
            // The first substring query on a connection (and the first after a
            // commit) reads the vocabulary's terms and builds their trigrams.
            let t = Date()
            _ = try reader.run(Query(predicate: try parser.parse("title == \"*qzqz*\"c"), limit: 20)) { _ in }
            print("first substring query of a connection (reads the vocabulary): \(fmt(Date().timeIntervalSince(t) * 1000)) ms")
        }
        for (kind, qs) in queryKinds(words, count: corpus.queries) where corpus.wants(kind) {
            // A few untimed queries first: the first ones after opening read
            // the shard's pages from the OS, which peers.py never measures
            // (it queries right after indexing).
            for q in qs.prefix(20) {
                _ = try reader.run(Query(predicate: try parser.parse(q), fetchAttributes: ["title"], limit: 20, batchSize: 20)) { _ in }
            }
            let plans = try qs.map { try parser.parse($0) }
            let timed = try timeInTurn(plans.count, scoped: app != nil) { i, scoped in
                try reader.run(
                    Query(
                        predicate: scope.map { scoped ? $0.restrict(plans[i]) : plans[i] } ?? plans[i], fetchAttributes: ["title"], limit: 20,
                        batchSize: 20)
                ) { _ in }
            }
            if kind == "word" || kind == "two words" { mix += timed[0].lat }
            for (label, t) in zip([kind, kind + " @app"], timed) {
                for k in t.cpu.indices.sorted(by: { t.cpu[$0] > t.cpu[$1] }).prefix(slowest) { print("    \(fmt(t.cpu[k])) ms CPU: \(qs[k])") }
                print("\(label.padding(toLength: 12, withPad: " ", startingAt: 0))  \(t.row)")
            }
        }
        if !mix.isEmpty {
            print("word mix (one and two words, as peers.py): p50 \(fmt(percentile(mix, 50))) ms, p99 \(fmt(percentile(mix, 99))) ms")
        }
        let searches = searchKinds(words, count: corpus.queries).filter { corpus.wants($0.0) }
        if !searches.isEmpty {
            // Searches take their word lookups from the shard's posting index
            // once it is read (in the background in a query worker): read it
            // first, so that they are timed as they run between writes.
            let t = Date()
            let c = threadCPUSeconds()
            let read = try reader.buildSuggestionIndex()
            print(
                "posting index: \(read.terms) terms, \(read.ids) postings, \(fmt(Double(read.bytes) / 1_048_576, 1)) MiB, read in \(fmt(Date().timeIntervalSince(t) * 1000, 1)) ms (\(fmt((threadCPUSeconds() - c) * 1000, 1)) ms CPU); forward index: \(read.forwardTokens) tokens, \(read.forwardTerms) terms, \(fmt(Double(read.forwardBytes) / 1_048_576, 1)) MiB, \(fmt(read.forwardSeconds * 1000, 1)) ms CPU of it; item rows: \(fmt(Double(read.rowsBytes) / 1_048_576, 1)) MiB; on the heap \(fmt(Double(read.heapBytes) / 1_048_576, 1)) MiB, derived file \(fmt(Double(read.fileBytes) / 1_048_576, 1)) MiB"
            )
        }
        for (kind, qs) in searches {
            let plans = try qs.map { try SearchRequest(params: $0).plan }
            for p in plans.prefix(20) { _ = try reader.search(p) }
            let timed = try timeInTurn(plans.count, scoped: app != nil) { i, scoped in
                try reader.search(scope.map { scoped ? $0.restrict(plans[i]) : plans[i] } ?? plans[i]).nbHits
            }
            for (label, t) in zip([kind, kind + " @app"], timed) {
                for k in t.cpu.indices.sorted(by: { t.cpu[$0] > t.cpu[$1] }).prefix(slowest) { print("    \(fmt(t.cpu[k])) ms CPU: \(qs[k])") }
                print("\(label.padding(toLength: 14, withPad: " ", startingAt: 0))\(t.row)   (nbHits)")
            }
        }
        reader.forgetSuggestionIndex()
        if corpus.wants("suggest") || corpus.kinds?.contains("suggest ") == true {
            try benchSuggest(
                { try ShardStore(path: path, mode: .readOnly, logger: logger) }, words, count: corpus.queries,
                only: corpus.wants("suggest") ? { _ in true } : { corpus.wants($0) }, indexOnly: suggestionIndexOnly)
        }
        printPeers(corpus.runPeers(), ours: Double(stored) / indexSeconds)
    }
}

/// An app's scope as its keys make it (Tenancy's `TenantScope`, whose
/// crypto this benchmark does without): items stored under the reserved
/// domain `@APP` and identifiers tagged `@APP/`, and every plan ANDed with
/// `domain(["@APP"])`.
struct BenchScope {
    let app: String
    var root: String { "@" + app }

    func qualify(_ item: JSONValue) -> JSONValue {
        guard case .object(var o) = item else { return item }
        if let uid = o["uniqueIdentifier"]?.stringValue { o["uniqueIdentifier"] = .string(root + "/" + uid) }
        let domain = o["domainIdentifier"]?.stringValue ?? ""
        o["domainIdentifier"] = .string(domain.isEmpty ? root : root + "." + domain)
        return .object(o)
    }

    func restrict(_ p: QueryPlan.Predicate) -> QueryPlan.Predicate {
        QueryPlan.Predicate.and([.domain([root]), p]).simplified()
    }

    func restrict(_ plan: SearchPlan) -> SearchPlan {
        var plan = plan
        plan.filter = restrict(plan.filter)
        plan.disjunctiveFilters = plan.disjunctiveFilters.mapValues { restrict($0) }
        return plan
    }
}

/// One query kind's timings: wall and thread CPU milliseconds per query, and hits in all.
struct KindTimes {
    var lat: [Double] = []
    var cpu: [Double] = []
    var hits = 0

    /// p50, p99, mean hits, CPU p50 and p99, as the store benchmark's columns.
    var row: String {
        "\(fmt(percentile(lat, 50)).leftPad(9))  \(fmt(percentile(lat, 99)).leftPad(9))  \(fmt(Double(hits) / Double(max(1, lat.count)), 1).leftPad(10))  \(fmt(percentile(cpu, 50)).leftPad(10))  \(fmt(percentile(cpu, 99)).leftPad(10))"
    }
}

/// Times `count` queries (`run(i, scoped)` runs the i-th and returns its
/// hits): unscoped only, or with `scoped` each query both ways in turn, so
/// that the machine's drift from one minute to the next falls on both alike,
/// the unscoped first for one query and second for the next (what the first
/// run leaves in the caches helps the second). Returns the unscoped times,
/// then the scoped ones.
func timeInTurn(_ count: Int, scoped: Bool, _ run: (Int, Bool) throws -> Int) rethrows -> [KindTimes] {
    var times = Array(repeating: KindTimes(), count: scoped ? 2 : 1)
    for i in 0..<count {
        for k in i % 2 == 0 ? Array(times.indices) : times.indices.reversed() {
            let t = Date()
            let c = threadCPUSeconds()
            times[k].hits += try run(i, k == 1)
            times[k].cpu.append((threadCPUSeconds() - c) * 1000)
            times[k].lat.append(Date().timeIntervalSince(t) * 1000)
        }
    }
    return times
}

/// `before`: the same peers run before Limelight was, whose figures are
/// printed beside these, so a ratio can be taken against either. This
/// machine's speed drifts by a third from one minute to the next, and peers
/// timed only after Limelight put that drift into every ratio.
func printPeers(_ rows: [[String: Any]], ours: Double, before: [[String: Any]] = []) {
    guard !rows.isEmpty else { return }
    print(String(repeating: "-", count: 72))
    print("peers on the same corpus (peers.py: top 20 by BM25 for one- and two-word queries)")
    func read(_ r: [String: Any]) -> (name: String, p50: Double, p99: Double) {
        ((r["engine"] as? String) ?? "?", (r["query_p50_ms"] as? Double) ?? 0, (r["query_p99_ms"] as? Double) ?? 0)
    }
    for r in before {
        let (name, p50, p99) = read(r)
        print("\(name.padding(toLength: 12, withPad: " ", startingAt: 0))  before Limelight ran: query p50 \(fmt(p50)) ms  p99 \(fmt(p99)) ms")
    }
    for r in rows {
        let (name, p50, p99) = read(r)
        let rate = (r["index_docs_per_s"] as? Double) ?? Double((r["index_docs_per_s"] as? Int) ?? 0)
        print(
            "\(name.padding(toLength: 12, withPad: " ", startingAt: 0))  index \(Int(rate)) docs/s  query p50 \(fmt(p50)) ms  p99 \(fmt(p99)) ms   (Limelight/peer indexing: \(fmt(ours / max(1, rate), 2)))"
        )
    }
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
