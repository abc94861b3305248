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
            VectorBench.self,
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

/// End to end through a real cluster: publish to durable acknowledgement, and queries through the coordinator.
struct ClusterBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cluster", abstract: "Through the coordinator, for several shard counts.")
    @OptionGroup var corpus: CorpusOptions
    @Option(help: "Shard counts to measure.") var shards: [Int] = [1, 2, 4]
    @Option(help: "Items per publish batch.") var batch = 1000
    @Option(help: "Publish batches in flight.") var window = 4
    @Option(help: "Extra arguments for limelight up (e.g. --up-argument=--local-queries).") var upArgument: [String] = []
    @Option(help: "Seconds to wait after the first search, for the query workers' index reads to end (0: none).") var indexWait = 10.0
    @Flag(help: "Time on Swift's pool rather than on the client's socket thread (LimelightClient.executor).") var pool = false
    @Option(help: "Tantivy on two-word queries exact and with the free-text search's typo tolerance (scripts/peer-typos.py); 'none' to skip.")
    var typoPeer = "scripts/peer-typos.py"
    @Flag(help: "Leave the cluster's and the client's socket threads where the kernel puts them (--socket-cpu anywhere), as before placements.")
    var unplaced = false
    @Flag(
        help:
            "Run the cluster without keys (limelight up --no-require-keys), unscoped; by default it runs as users run it: keys required, every request with an app's key."
    )
    var keyless = false

    /// Where the cluster's and the client's socket threads run (see
    /// ``ThreadPlacement``): the cluster's processes on the first CPU this
    /// process may use, the timed client beside them, and for the
    /// free-text kinds and the floor a second client on the next CPU, as a
    /// client that happened to start there would be. `--unplaced`: none.
    var placements: (cluster: ThreadPlacement, same: ThreadPlacement, other: ThreadPlacement?) {
        let cpus = ThreadPlacement.allowedCPUs()
        guard !unplaced, let first = cpus.first else { return (.anywhere, .anywhere, nil) }
        return (.cpu(first), .cpu(first), cpus.dropFirst().first.map { .cpu($0) })
    }

    func run() async throws {
        let lines = try corpus.loadLines()
        let items = lines.compactMap { try? JSONValue.parse($0) }
        let words = QueryWords(lines: lines, count: corpus.queries)
        let peersBefore = corpus.runPeers()
        let bin = ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0] as NSString as String)
        let binDir = (bin as NSString).deletingLastPathComponent
        var best = 0.0
        var firstP50: [String: Double] = [:]
        print(
            "Limelight cluster through the coordinator (limelight up: min(shards, 2) indexers and query workers), on loopback, "
                + (keyless ? "keyless (--no-require-keys)" : "keys required: the app's admin key, then its search key and a secured key"))
        print(String(repeating: "-", count: 96))
        print("shards  publish items/s   kind       p50 ms   p99 ms   first batch p50 ms   p99 ms")
        // The floor under the search kinds (``noMatchSearches(count:)``): a
        // ping (nil), and a search that finds nothing.
        let floor: [(String, [JSONValue?])] = [
            ("ping", Array(repeating: nil, count: corpus.queries)),
            ("no match", noMatchSearches(count: corpus.queries).map { Optional($0) }),
        ]
        let placed = placements
        print(
            "socket threads: the cluster's on \(placed.cluster), the client's on \(placed.same)"
                + (placed.other.map { " (and, marked, on \($0))" } ?? ""))
        for n in shards {
            let cluster = try BenchCluster(
                binDir: binDir, shards: n, extra: upArgument + (keyless ? ["--no-require-keys"] : []),
                socketCPU: placed.cluster)
            defer { cluster.stop() }
            let client = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey, placement: placed.same)
            defer { client.close() }
            let t0 = Date()
            var stored = 0
            try await withThrowingTaskGroup(of: Int.self) { group in
                var inFlight = 0
                var i = 0
                while i < items.count {
                    let chunk = Array(items[i..<min(items.count, i + batch)])
                    i += batch
                    if inFlight >= window, let s = try await group.next() { stored += s; inFlight -= 1 }
                    group.addTask { try await client.publish(chunk).stored }
                    inFlight += 1
                }
                for try await s in group { stored += s }
            }
            let rate = Double(stored) / Date().timeIntervalSince(t0)
            best = max(best, rate)
            /// One kind's line; the first shard count's p50 kept under `key` for the ratios.
            func row(_ kind: String, _ lat: [Double], _ note: String, key: String) {
                print(
                    "\(String(n).leftPad(6))  \(String(Int(rate)).leftPad(15))   \(kind.padding(toLength: 14, withPad: " ", startingAt: 0))  \(fmt(percentile(lat, 50)).leftPad(7))  \(fmt(percentile(lat, 99)).leftPad(7))   \(note)"
                )
                if n == shards.first { firstP50[key] = percentile(lat, 50) }
            }
            // The timed loops run on the client's socket thread
            // (`LimelightClient.executor`), as a caller sending one request
            // after another is advised to (`--pool`: on Swift's pool instead).
            try await withTaskExecutorPreference(pool ? nil : client.executor) {
                for (kind, qs) in queryKinds(words, count: corpus.queries) where corpus.wants(kind) {
                    var lat: [Double] = [], first: [Double] = []
                    for q in qs {
                        let t = Date()
                        var sawFirst = false
                        for try await e in client.query(Body.QueryRequest(query: q, fetchAttributes: ["title"], limit: 20, batchSize: 20)).events {
                            if case .batch = e, !sawFirst { sawFirst = true; first.append(Date().timeIntervalSince(t) * 1000) }
                        }
                        lat.append(Date().timeIntervalSince(t) * 1000)
                    }
                    print(
                        "\(String(n).leftPad(6))  \(String(Int(rate)).leftPad(15))   \(kind.padding(toLength: 9, withPad: " ", startingAt: 0))  \(fmt(percentile(lat, 50)).leftPad(7))  \(fmt(percentile(lat, 99)).leftPad(7))  \(fmt(percentile(first, 50)).leftPad(19))  \(fmt(percentile(first, 99)).leftPad(7))"
                    )
                }
                let searches = searchKinds(words, count: corpus.queries).filter { corpus.wants($0.0) }
                if let first = searches.first?.1.first, indexWait > 0 {
                    // The first search starts the query workers' reads of their
                    // shards' posting and forward indexes, in the background (a
                    // few seconds of CPU each): let them end, so that the kind
                    // timed first is not timed beside them.
                    _ = try await client.search(first)
                    try await Task.sleep(for: .seconds(indexWait))
                }
                for (kind, qs) in searches {
                    row(kind, try await timeSearches(client, qs.map { Optional($0) }), "(search)", key: kind)
                }
                for (kind, qs) in floor where corpus.wants(kind) {
                    row(kind, try await timeSearches(client, qs), "(floor)", key: kind)
                }
            }
            // The search kinds again with the app's search key, and with a
            // secured key whose filter every search of it carries: what a
            // search box in front of users sends.
            if cluster.adminKey != nil {
                let search = try await client.keys(Body.Keys(action: "create", role: "search")).apiKey ?? ""
                let secured = try cluster.securedKey(binDir: binDir, parent: search, filters: "NOT section:oldlibs")
                for (label, key) in [("search key", search), ("secured key", secured)] {
                    let keyed = try LimelightClient(endpoint: cluster.endpoint, key: key, placement: placed.same)
                    defer { keyed.close() }
                    try await withTaskExecutorPreference(pool ? nil : keyed.executor) {
                        for (kind, qs) in searchKinds(words, count: corpus.queries) where corpus.wants(kind) {
                            row(kind, try await timeSearches(keyed, qs.map { Optional($0) }), "(search, \(label))", key: kind + " @" + label)
                        }
                    }
                }
            }
            // The free-text kinds and the floor again from a client whose
            // socket threads are on another CPU than the cluster's.
            if let other = placed.other {
                let far = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey, placement: other)
                defer { far.close() }
                let kinds =
                    searchKinds(words, count: corpus.queries).filter { ["search 2 words", "2 words strict"].contains($0.0) }
                    .map { ($0.0, $0.1.map { Optional($0) }) } + floor
                try await withTaskExecutorPreference(pool ? nil : far.executor) {
                    for (kind, qs) in kinds where corpus.wants(kind) {
                        row(kind, try await timeSearches(far, qs), "(client on CPU \(other))", key: kind + " @other")
                    }
                }
            }
            if corpus.wants("suggest") { try await benchSuggest(client, words, count: corpus.queries, shards: n, rate: rate) }
            print(
                "resident memory after the queries (anonymous + file-backed): "
                    + cluster.residentMemory().map { "\($0.name) \($0.megabytes) MB (\($0.anonymous) + \($0.file))" }.joined(separator: ", ")
                    + "; data folder \(cluster.dataBytes() / 1_000_000) MB (\(stored > 0 ? cluster.dataBytes() / stored : 0) bytes an item)")
        }
        let peersAfter = corpus.runPeers()
        printPeers(peersAfter, ours: best, before: peersBefore)
        printRatios(firstP50, shards: shards.first ?? 1, before: peersBefore, after: peersAfter)
        if corpus.peers != "none", corpus.engines.split(separator: ",").contains("tantivy") {
            printTypoPeer(corpus.runScript(typoPeer, ["--peers", corpus.peers, "--queries", String(corpus.queries)]), ours: firstP50)
        }
    }
}

/// Each search (nil: a ping) once after 20 to warm up, timed: milliseconds.
func timeSearches(_ client: LimelightClient, _ qs: [JSONValue?]) async throws -> [Double] {
    func once(_ q: JSONValue?) async throws {
        if let q { _ = try await client.search(q) } else { _ = try await client.ping() }
    }
    for q in qs.prefix(20) { try await once(q) }
    var lat: [Double] = []
    lat.reserveCapacity(qs.count)
    for q in qs {
        let t = Date()
        try await once(q)
        lat.append(Date().timeIntervalSince(t) * 1000)
    }
    return lat
}

/// Tantivy's two-word queries exact and with the free-text search's typo
/// tolerance (`scripts/peer-typos.py`, the two timed query by query in
/// turn), and our two kinds over the one of the same semantics: the
/// benchmark sets our typo-tolerant search beside Tantivy's exact one.
func printTypoPeer(_ rows: [[String: Any]], ours: [String: Double]) {
    guard !rows.isEmpty else { return }
    print("Tantivy on two-word queries only, exact and with the same typo tolerance (scripts/peer-typos.py):")
    for r in rows {
        let name = (r["query"] as? String) ?? "?"
        let p50 = (r["query_p50_ms"] as? Double) ?? 0, p99 = (r["query_p99_ms"] as? Double) ?? 0
        let mine = name == "typos" ? "search 2 words" : "2 words strict"
        let ratio = ours[mine].map { p50 > 0 ? "; \(mine) over it: \(fmt($0 / p50, 2))x" : "" } ?? ""
        print("  tantivy \(name.padding(toLength: 6, withPad: " ", startingAt: 0)) p50 \(fmt(p50)) ms  p99 \(fmt(p99)) ms\(ratio)")
    }
}

/// The free-text ratio (a two-word search's p50 over Tantivy's, the
/// peer timed before and after Limelight in the same run), and the same
/// ratio for the floor under it (`ping`, `no match`): how much of the ratio
/// any search pays before its words are looked at.
func printRatios(_ ours: [String: Double], shards: Int, before: [[String: Any]], after: [[String: Any]]) {
    func p50(_ rows: [[String: Any]]) -> Double? {
        (rows.first { ($0["engine"] as? String) == "tantivy" }?["query_p50_ms"] as? Double).flatMap { $0 > 0 ? $0 : nil }
    }
    let peers = [p50(before), p50(after)].compactMap { $0 }
    guard !peers.isEmpty else { return }
    let kinds = ["search 2 words", "2 words strict", "no match", "ping"].flatMap { [$0, $0 + " @other"] }.filter { ours[$0] != nil }
    guard !kinds.isEmpty else { return }
    print("p50 over Tantivy's (timed before, after Limelight), \(shards) shard(s):")
    for k in kinds {
        let ratios = peers.map { fmt(ours[k]! / $0, 1) + "x" }.joined(separator: ", ")
        let name = k.hasSuffix(" @other") ? String(k.dropLast(7)) + " (client on another CPU)" : k
        print("  \(name.padding(toLength: 40, withPad: " ", startingAt: 0)) \(fmt(ours[k]!)) ms: \(ratios)")
    }
}

/// A `limelight up` started for a benchmark: its data folder, its client
/// endpoint, and a stop that ends it and removes the folder.
struct BenchCluster {
    let dir: String
    let endpoint: String
    let process: Process
    /// `limelight up`'s ready line: `ready ENDPOINT STATS-URL REST-URL`.
    let readyLine: String
    /// Each process of the cluster (`up`'s children, named by their `--id`,
    /// or `coordinator`) and its resident memory in MB, from /proc: all of
    /// it, and its anonymous and file-backed parts (`RssAnon`, `RssFile`:
    /// mapped derived files and the binary count in the second).
    func residentMemory() -> [(name: String, megabytes: Int, anonymous: Int, file: Int)] {
        var out: [(String, Int, Int, Int)] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where Int32(entry) != nil {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let ppid = stat.split(separator: ")").last?.split(separator: " ").dropFirst().first.flatMap({ Int32($0) }),
                ppid == process.processIdentifier,
                let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8)
            else { continue }
            let argv = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            let name =
                argv.firstIndex(of: "--id").flatMap { argv.indices.contains($0 + 1) ? argv[$0 + 1] : nil }
                ?? (argv.first.map { ($0 as NSString).lastPathComponent } ?? entry)
            func kb(_ field: String) -> Int {
                status.split(separator: "\n").first { $0.hasPrefix(field + ":") }?
                    .split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            }
            out.append((name, kb("VmRSS") / 1024, kb("RssAnon") / 1024, kb("RssFile") / 1024))
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// Bytes of the cluster's data folder (shards, their logs, keys).
    func dataBytes() -> Int { dataBytes(matching: { _ in true }) }

    /// The admin key `limelight up` wrote; nil when it runs keyless.
    var adminKey: String? {
        FileManager.default.contents(atPath: dir + "/limelight.key").map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// A secured key made from `parent` with `filters`, by `limelight keys
    /// secure` (no call to the server), as an app's backend makes one.
    func securedKey(binDir: String, parent: String, filters: String) throws -> String {
        let (output, status) = try runToEnd(binDir + "/limelight", ["keys", "secure", "--parent", parent, "--filters", filters])
        guard status == 0 else { throw ValidationError("limelight keys secure failed") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `limelight up` with `min(shards, 2)` indexers and query workers
    /// (as the benchmark's figures are taken) and waits for its "ready" line.
    init(binDir: String, shards n: Int, extra: [String] = [], socketCPU: ThreadPlacement? = nil) throws {
        dir = NSTemporaryDirectory() + "limelight-cbench-\(UUID().uuidString)"
        let up = Process()
        up.executableURL = URL(fileURLWithPath: binDir + "/limelight")
        up.arguments =
            [
                "up", "--data", dir, "--listen", "tcp://127.0.0.1:0", "--stats-port", "0", "--shards", String(n),
                "--indexers", String(min(n, 2)), "--query-workers", String(min(n, 2)), "--log-level", "warning",
            ] + extra
        if let socketCPU {
            // Every process of the cluster reads it (--socket-cpu).
            up.environment = ProcessInfo.processInfo.environment.merging(["LIMELIGHT_SOCKET_CPU": socketCPU.description]) { $1 }
        }
        let out = Pipe()
        up.standardOutput = out
        try up.run()
        process = up
        var buf = Data()
        while !buf.contains(0x0A) {
            let d = out.fileHandleForReading.availableData
            if d.isEmpty { break }
            buf.append(d)
        }
        let ready = String(decoding: buf, as: UTF8.self).split(separator: " ")
        guard ready.first == "ready", ready.count > 1 else {
            kill(up.processIdentifier, SIGTERM); up.waitUntilExit()
            throw ValidationError("cluster did not start")
        }
        endpoint = String(ready[1]).trimmingCharacters(in: .whitespacesAndNewlines)
        readyLine = String(decoding: buf, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    }

    func stop() {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: dir)
    }
}
