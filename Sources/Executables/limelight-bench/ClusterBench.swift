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
