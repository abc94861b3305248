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

/// Where a query's time goes between the client's send and its last frame.
///
/// Each step adds one part of the path to the one before, so the difference
/// of two rows' medians is that part's cost:
/// 1. a ZeroMQ round trip (DEALER → ROUTER → DEALER on tcp loopback) between
///    two plain threads making blocking calls — the socket's own cost;
/// 2. the same through ``AsyncSocket`` on both ends, an echo task between —
///    adds our bridge from the socket's thread to Swift concurrency;
/// 3. a `ping` through the coordinator — adds the coordinator's decode,
///    dispatch, encode and outbox;
/// 4. the word query through the coordinator to the shards' query workers and
///    back (limit 20, title fetched) — adds the second hop, the plan, and the
///    store;
/// 5. the same query run on the shard files in this process — the store alone.
///
/// Medians of wall time, after a warm-up; the peers' in-process p50 is printed
/// beside for the free-text ratio.
struct PathBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "path", abstract: "Where a query's time goes on the message path.")
    @OptionGroup var corpus: CorpusOptions
    @Option(help: "Shards of the cluster.") var shards = 2
    @Option(help: "Round trips per step.") var trips = 2000
    @Option(help: "Extra arguments for limelight up (e.g. --up-argument=--local-queries).") var upArgument: [String] = []

    func run() async throws {
        let lines = try corpus.loadLines()
        let items = lines.compactMap { try? JSONValue.parse($0) }
        let words = QueryWords(lines: lines, count: corpus.queries)
        let bin = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let binDir = (bin as NSString).deletingLastPathComponent
        print("The message path of a word query (limit 20, title fetched), \(shards) shard(s): medians of \(trips) round trips")
        print(String(repeating: "-", count: 84))
        var rows: [(String, Double, Double)] = []
        func row(_ name: String, _ lat: [Double]) {
            let p50 = percentile(lat, 50), p99 = percentile(lat, 99)
            let added = rows.last.map { p50 - $0.1 }
            rows.append((name, p50, p99))
            print(
                "\(name.padding(toLength: 44, withPad: " ", startingAt: 0)) p50 \(fmt(p50)) ms  p99 \(fmt(p99)) ms"
                    + (added.map { "  (+\(fmt($0)))" } ?? ""))
        }
        let ipc = "ipc://" + NSTemporaryDirectory() + "limelight-path-\(getpid())"
        let overIPC = try rawRoundTrips(trips, endpoint: ipc)
        row("1 zmq round trip, blocking threads", try rawRoundTrips(trips, endpoint: "tcp://127.0.0.1:0"))
        row("2 + AsyncSocket on both ends", try await asyncRoundTrips(trips))

        let cluster = try BenchCluster(binDir: binDir, shards: shards, extra: upArgument)
        defer { cluster.stop() }
        let client = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey)
        defer { client.close() }
        var i = 0
        while i < items.count {
            _ = try await client.publish(Array(items[i..<min(items.count, i + 1000)]))
            i += 1000
        }
        for _ in 0..<200 { _ = try await client.ping() }
        var lat: [Double] = []
        for _ in 0..<trips {
            let t = Date()
            _ = try await client.ping()
            lat.append(Date().timeIntervalSince(t) * 1000)
        }
        row("3 + the coordinator (ping)", lat)

        let queries = words.words.map { "** == \"\($0)\"cdw" }
        func query(_ q: String, completionInBatch: Bool = true) async throws -> (Double, Double) {
            let t = Date()
            var first = 0.0
            let request = Body.QueryRequest(query: q, fetchAttributes: ["title"], limit: 20, batchSize: 20, completionInBatch: completionInBatch)
            for try await e in client.query(request).events {
                if case .batch = e, first == 0 { first = Date().timeIntervalSince(t) * 1000 }
            }
            return (Date().timeIntervalSince(t) * 1000, first)
        }
        for q in queries.prefix(50) { _ = try await query(q) }
        let cpuBefore = childCPU(of: cluster.process.processIdentifier)
        let ownBefore = processCPUSeconds()
        lat = []
        var first: [Double] = []
        for k in 0..<max(trips / 4, queries.count) {
            let (l, f) = try await query(queries[k % queries.count])
            lat.append(l)
            first.append(f)
        }
        row("4 + query workers and the store (query)", lat)
        let cpuAfter = childCPU(of: cluster.process.processIdentifier)
        let own = (processCPUSeconds() - ownBefore) * 1000 / Double(lat.count)
        var perProcess = "CPU per query: client \(fmt(own)) ms"
        for (name, seconds) in cpuAfter.sorted(by: { $0.key < $1.key }) {
            perProcess += ", \(name) \(fmt((seconds - (cpuBefore[name] ?? 0)) * 1000 / Double(lat.count))) ms"
        }
        print(perProcess)
        // The completion inside the last batch (what the clients ask for)
        // against its own message, query by query in turn.
        var inside: [Double] = [], apart: [Double] = []
        for k in 0..<max(trips / 4, queries.count) {
            let q = queries[k % queries.count]
            let (a, _) = try await query(q, completionInBatch: k % 2 == 0)
            let (b, _) = try await query(q, completionInBatch: k % 2 != 0)
            inside.append(k % 2 == 0 ? a : b)
            apart.append(k % 2 == 0 ? b : a)
        }
        print("  completion in the last batch, in turn      p50 \(fmt(percentile(inside, 50))) ms  p99 \(fmt(percentile(inside, 99))) ms")
        print("  completion as a message of its own         p50 \(fmt(percentile(apart, 50))) ms  p99 \(fmt(percentile(apart, 99))) ms")

        // The parameter search (`search`) of one and of two words, 20 hits
        // with their titles: the same path, with the coordinator's merge and
        // the Algolia-shaped response, and the shards' ranking.
        let oneWord = words.words.map { JSONValue.object(["query": .string($0), "attributesToRetrieve": .array([.string("title")])]) }
        let twoWords = words.twoWordSearches(seed: 7)
        // The first search starts the workers' reads of their posting and
        // forward indexes in the background; searches are timed after them.
        _ = try await client.search(oneWord[0])
        try await Task.sleep(for: .seconds(6))
        var searchRows: [(String, [JSONValue], [Double])] = []
        var coordinatorP50: [String: Double] = [:]
        for (name, params) in [("search, one word", oneWord), ("search, two words", twoWords)] {
            for p in params.prefix(50) { _ = try await client.search(p) }
            var l: [Double] = []
            for k in 0..<max(trips / 4, params.count) {
                let t = Date()
                _ = try await client.search(params[k % params.count])
                l.append(Date().timeIntervalSince(t) * 1000)
            }
            // The coordinator's own time, from the search's arrival to its
            // answer's send (its stats keep the last 4,096).
            let stats = try await client.stats()
            coordinatorP50[name] = stats["queryLatencyMs"]?["p50"]?.doubleValue
            searchRows.append((name, params, l))
        }

        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let stores = try (0..<shards).map { try ShardStore(path: cluster.dir + "/shard-\($0).sqlite", mode: .readOnly, logger: logger) }
        let parser = SpotlightQueryParser()
        var storeLat: [Double] = []
        for k in 0..<queries.count * 2 {
            let plan = try parser.parse(queries[k % queries.count])
            // Shards answer in parallel in the cluster: the slowest is the
            // store's share of the path.
            var slowest = 0.0
            for s in stores {
                let ts = Date()
                _ = try s.run(Query(predicate: plan, fetchAttributes: ["title"], limit: 20, batchSize: 20)) { _ in }
                slowest = max(slowest, Date().timeIntervalSince(ts) * 1000)
            }
            storeLat.append(slowest)
        }
        let storeP50 = percentile(storeLat, 50)
        print(String(repeating: "-", count: 84))
        print("1 over ipc:// instead of tcp loopback           p50 \(fmt(percentile(overIPC, 50))) ms  p99 \(fmt(percentile(overIPC, 99))) ms")
        print("the store alone (slowest shard, in process)   p50 \(fmt(storeP50)) ms  p99 \(fmt(percentile(storeLat, 99))) ms")
        print("time to first batch                          p50 \(fmt(percentile(first, 50))) ms  p99 \(fmt(percentile(first, 99))) ms")
        let p50 = rows.last!.1
        print("message path (query p50 - store p50)          \(fmt(p50 - storeP50)) ms of \(fmt(p50)) ms")
        for s in stores { _ = try s.buildSuggestionIndex() }
        var responseFigures = ""
        // The coordinator's own share of a two-word search, apart: the
        // response for one shard's 20 hits (merge, highlights, the Algolia
        // shape) and its frame, right after a search as in the cluster.
        do {
            var build: [Double] = [], encode: [Double] = [], decode: [Double] = [], size: [Double] = []
            let params = searchRows[1].1
            for k in 0..<2000 {
                let request = try SearchRequest(params: params[k % params.count])
                let answer = try stores[0].search(request.plan)
                var b = SearchResponseBuilder(request: request)
                b.add(
                    Body.ShardSearchResult(
                        shard: 0, hits: answer.hits.map { Body.RankedHit(id: $0.uniqueIdentifier, item: $0.item, rank: $0.rank) },
                        nbHits: answer.nbHits, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
                let t0 = Date()
                let response = RawJSON(trusted: ArraySlice(b.responseBytes(processingTimeMS: 1)))
                let t1 = Date()
                let frame = Envelope(id: "x", body: .searchResult(.written(response, failedShards: []))).encoded()
                let t2 = Date()
                _ = try Envelope.decode(frame, maxBytes: .max)
                build.append(t1.timeIntervalSince(t0) * 1e6); encode.append(t2.timeIntervalSince(t1) * 1e6)
                decode.append(Date().timeIntervalSince(t2) * 1e6); size.append(Double(frame.count))
            }
            responseFigures =
                "the coordinator's response to a two-word search (one shard's 20 hits): built p50 \(fmt(percentile(build, 50) / 1000)) ms, encoded p50 \(fmt(percentile(encode, 50) / 1000)) ms; "
                + "the client's decoding of its frame (p50 \(Int(percentile(size, 50))) bytes) p50 \(fmt(percentile(decode, 50) / 1000)) ms"
        }
        print("the parameter search (20 hits with their titles), through the coordinator and in process:")
        for (name, params, l) in searchRows {
            var alone: [Double] = []
            for k in 0..<params.count * 2 {
                let plan = try SearchRequest(params: params[k % params.count]).plan
                var slowest = 0.0
                for s in stores {
                    let ts = Date()
                    _ = try s.search(plan)
                    slowest = max(slowest, Date().timeIntervalSince(ts) * 1000)
                }
                alone.append(slowest)
            }
            print(
                "  \(name.padding(toLength: 20, withPad: " ", startingAt: 0)) p50 \(fmt(percentile(l, 50))) ms  p99 \(fmt(percentile(l, 99))) ms;"
                    + " the store alone (slowest shard) p50 \(fmt(percentile(alone, 50))) ms, so the path \(fmt(percentile(l, 50) - percentile(alone, 50))) ms;"
                    + " in the coordinator p50 \(coordinatorP50[name].map { fmt($0) } ?? "?") ms")
        }
        print(responseFigures)
        let peers = corpus.runPeers()
        for r in peers {
            let name = (r["engine"] as? String) ?? "?"
            let peer = (r["query_p50_ms"] as? Double) ?? .nan
            print(
                "\(name.padding(toLength: 12, withPad: " ", startingAt: 0)) in-process query p50 \(fmt(peer)) ms: Limelight word query over the socket / \(name) = \(fmt(p50 / peer, 1))x, first batch \(fmt(percentile(first, 50) / peer, 1))x"
            )
        }
    }

    /// Step 1: blocking sockets on two threads, no Swift concurrency; over
    /// `ipc://` too, to see what `limelight up` would gain from it between
    /// its children.
    func rawRoundTrips(_ n: Int, endpoint bindTo: String) throws -> [Double] {
        let context = try Context(ioThreads: 1)
        defer { context.shutdown() }
        nonisolated(unsafe) let router = try Socket(context: context, type: .router)
        try router.bind(bindTo)
        let endpoint = try router.lastEndpoint
        let echo = Thread {
            while let m = try? router.receive(), m.count >= 2 {
                if m.last == Data("stop".utf8) { _ = try? router.send(m); break }
                _ = try? router.send(m)
            }
            router.close()
        }
        echo.start()
        let dealer = try Socket(context: context, type: .dealer)
        try dealer.connect(endpoint)
        defer { dealer.close() }
        let payload = Data(repeating: 0x61, count: 200)
        var lat: [Double] = []
        for k in 0..<(n + 200) {
            let t = Date()
            _ = try dealer.send([payload])
            _ = try dealer.receive()
            if k >= 200 { lat.append(Date().timeIntervalSince(t) * 1000) }
        }
        _ = try dealer.send([Data("stop".utf8)])
        _ = try dealer.receive()
        return lat
    }

    /// Step 2: both ends are ``AsyncSocket``s; the echo is a task.
    func asyncRoundTrips(_ n: Int) async throws -> [Double] {
        let context = try Context(ioThreads: 1)
        defer { context.shutdown() }
        let router = try AsyncSocket(context: context, type: .router, name: "bench-router") { try $0.bind("tcp://127.0.0.1:0") }
        let endpoint = router.endpoint ?? ""
        let dealer = try AsyncSocket(context: context, type: .dealer, name: "bench-dealer") { try $0.connect(endpoint) }
        let echo = Task {
            for await m in router.messages { try? await router.send(m) }
        }
        defer { echo.cancel(); router.close(); dealer.close() }
        let payload = Data(repeating: 0x61, count: 200)
        var replies = dealer.messages.makeAsyncIterator()
        var lat: [Double] = []
        for k in 0..<(n + 200) {
            let t = Date()
            try await dealer.send([payload])
            _ = await replies.next()
            if k >= 200 { lat.append(Date().timeIntervalSince(t) * 1000) }
        }
        return lat
    }
}

/// CPU seconds (user + system) of each child of `pid`, by command name and
/// pid, from /proc: which process spends what on the path.
func childCPU(of pid: Int32) -> [String: Double] {
    var result: [String: Double] = [:]
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return result }
    var children: [String] = []
    for t in tasks {
        if let c = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/children", encoding: .utf8) {
            children += c.split(separator: " ").map(String.init)
        }
    }
    for child in children {
        guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"), let open = stat.firstIndex(of: "(")
        else { continue }
        let name = String(stat[stat.index(after: open)..<close])
        let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
        // Fields 14 and 15 of stat (utime, stime) are 12 and 13 after the name.
        guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { continue }
        result["\(name)[\(child)]"] = (u + s) / ticks
    }
    return result
}
