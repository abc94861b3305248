import ArgumentParser
import Foundation
import Items
import LimelightClient
import QueryPlan
import WireProtocol
import ZeroMQ

/// A corpus of any size through `limelight up` as users run it (8 shards, 2
/// indexers, 2 query workers, keys required): the publish rate per part of
/// the corpus, every query kind with the app's admin key and the search
/// kinds with a search key and a secured key, resident memory per process
/// (anonymous and file-backed apart) and disk bytes per item, beside the
/// peers on the same corpus; and all of it as one JSON object for
/// `scripts/bench-chart.py`, which draws the figures against corpus size.
///
/// Why it streams: a 10-million-item corpus is about 8 GB of JSON, more than
/// the benchmark should hold; items are read, published and dropped batch by
/// batch, and the query words come from a reservoir sample of the lines.
struct ScaleBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale", abstract: "One corpus of any size through the default limelight up, streamed; figures as JSON too.")
    @Option(help: "JSON Lines corpus (e.g. from ../shared/datasets/scale_corpus.py); '-': standard input (with --items).") var corpus: String
    @Option(
        help:
            "The corpus's item count, when known: the corpus is then read once, so it can come through a pipe (scale_corpus.py --items N | limelight-bench scale --corpus - --items N) without its file, 8 GB at 10M."
    )
    var items: Int?
    @Option(help: "Queries of each kind.") var queries = 200
    @Option(help: "The peers' script (peers.py's interface; 'none' to skip).") var peers = "scripts/peers-sized.py"
    @Option(help: "Peer engines.") var engines = "sqlite-fts5,tantivy"
    @Option(help: "Shards (limelight up's default is 8).") var shards = 8
    @Option(help: "Items per publish batch.") var batch = 1000
    @Option(help: "Publish batches in flight.") var window = 4
    @Option(help: "Items per timed part of the publish (0: a tenth of the corpus, at most a million).") var part = 0
    @Option(help: "Extra arguments for limelight up.") var upArgument: [String] = []
    @Option(help: "Longest wait, in seconds, for the cluster to go idle after the publish (its index reads).") var idleWait = 1800.0
    @Option(help: "Write every figure as one JSON object here.") var json: String?
    @Flag(help: "Time the publish only (rate, CPU per process, disk bytes, the peers), no query kinds.") var publishOnly = false

    func validate() throws {
        if corpus == "-", items == nil { throw ValidationError("--corpus - (standard input) needs --items N") }
        if corpus == "-", peers != "none" {
            throw ValidationError("--corpus - (standard input) cannot be read again by the peers: give --peers none")
        }
    }

    func run() async throws {
        let total = try items ?? countLines(corpus)
        let part = self.part > 0 ? self.part : max(1, min(1_000_000, total / 10))
        let binDir = (((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]) as NSString)
            .deletingLastPathComponent
        print("Limelight at \(total) items: limelight up, \(shards) shards, keys required (admin key, search key, secured key)")
        let cluster = try BenchCluster(binDir: binDir, shards: shards, extra: upArgument)
        defer { cluster.stop() }
        let client = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey)
        defer { client.close() }

        // Publish, streamed, timing each part.
        var sample = Reservoir(capacity: 4000, seed: 7)
        var parts: [Double] = []
        var stored = 0, rejected = 0
        let cpu0 = Dictionary(cluster.cpuSecondsByProcess().map { ($0.name, $0.seconds) }, uniquingKeysWith: +)
        var io0: [String: BytesWritten] = [:]
        for p in cluster.bytesWrittenByProcess() { io0[p.name] = p.bytes }
        let t0 = Date()
        var partStart = Date(), partItems = 0
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            var inFlight = 0
            var chunk: [JSONValue] = []
            func send() async throws {
                if inFlight >= window, let (s, r) = try await group.next() { stored += s; rejected += r; inFlight -= 1 }
                let items = chunk
                chunk = []
                group.addTask {
                    let ack = try await client.publish(items)
                    return (ack.stored, items.count - ack.stored)
                }
                inFlight += 1
            }
            for try await line in Lines(path: corpus) {
                sample.offer(line)
                guard let item = try? JSONValue.parse(line) else { rejected += 1; continue }
                chunk.append(item)
                partItems += 1
                if chunk.count == batch { try await send() }
                if partItems == part {
                    if !chunk.isEmpty { try await send() }
                    while inFlight > 0, let (s, r) = try await group.next() { stored += s; rejected += r; inFlight -= 1 }
                    parts.append(Double(partItems) / Date().timeIntervalSince(partStart))
                    print("  published \(stored) items: \(Int(parts.last!)) items/s over the last \(partItems)")
                    partStart = Date()
                    partItems = 0
                }
            }
            if !chunk.isEmpty { try await send() }
            for try await (s, r) in group { stored += s; rejected += r }
            if partItems > 0 { parts.append(Double(partItems) / Date().timeIntervalSince(partStart)) }
        }
        let rate = Double(stored) / Date().timeIntervalSince(t0)
        print("publish: \(stored) stored (\(rejected) rejected) at \(Int(rate)) items/s")
        // CPU up to the last acknowledgement: the work of indexing, before the
        // query workers read their indexes.
        let cpu = cluster.cpuSecondsByProcess().map { ($0.name, $0.seconds - (cpu0[$0.name] ?? 0)) }
        let cpuTotal = cpu.reduce(0) { $0 + $1.1 }
        print(
            "publish CPU: \(fmt(cpuTotal, 1)) s, \(cpuTotal > 0 ? Int(Double(stored) / cpuTotal) : 0) items per CPU-second ("
                + cpu.map { "\($0.0) \(fmt($0.1, 1)) s" }.joined(separator: ", ") + "); load average "
                + ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " "))

        // Bytes written up to the last acknowledgement: what reached the
        // block layer (`write_bytes`) and what the processes handed to
        // write calls (`wchar`), per item stored.
        var written: [(name: String, disk: Int, calls: Int)] = []
        for p in cluster.bytesWrittenByProcess() {
            let before = io0[p.name] ?? BytesWritten(disk: 0, calls: 0)
            written.append((p.name, p.bytes.disk - before.disk, p.bytes.calls - before.calls))
        }
        func perItem(_ n: Int) -> Int { stored > 0 ? n / stored : 0 }
        let writtenText = written.filter { $0.disk > 0 || $0.calls > 0 }.map { "\($0.name) \(perItem($0.disk)) / \(perItem($0.calls))" }
        let allDisk = written.reduce(0) { $0 + $1.disk }
        let allCalls = written.reduce(0) { $0 + $1.calls }
        print(
            "publish bytes written an item (write_bytes / wchar): " + writtenText.joined(separator: ", ")
                + "; all \(perItem(allDisk)) / \(perItem(allCalls))")
        var cpuByName: [String: Double] = [:]
        for c in cpu { cpuByName[c.0, default: 0] += c.1 }
        var diskByName: [String: Int] = [:]
        var callsByName: [String: Int] = [:]
        for w in written {
            diskByName[w.name, default: 0] += perItem(w.disk)
            callsByName[w.name, default: 0] += perItem(w.calls)
        }

        var kinds: [String: [String: Double]] = [:]
        var failed: [String: String] = [:]
        var firstSearchSeconds: Double?
        if !publishOnly {
            // The query workers read their indexes after the first search: wait
            // until every process of the cluster is idle, so no kind is timed beside it.
            // The first search may wait for a worker to open its shards'
            // indexes: it has the whole idle wait, and its time is a figure.
            let words = QueryWords(lines: sample.lines, count: queries)
            let firstSent = ContinuousClock.now
            _ = try await client.search(
                .object(["query": .string(words.words[0])]), deadlineMs: Int(idleWait * 1000), timeout: .seconds(idleWait))
            let firstSearch = Double(firstSent.duration(to: .now) / .milliseconds(1)) / 1000
            print("first search answered after \(fmt(firstSearch, 1)) s")
            firstSearchSeconds = firstSearch
            let waited = cluster.waitUntilIdle(limit: idleWait)
            print("cluster idle \(fmt(waited, 0)) s after the first search")

            // Each kind's first request alone, with the whole idle wait: what
            // the first of a kind pays (columns and index pages read), a
            // figure of its own (`first_ms`, absent for a kind sent no cold
            // request). A kind that fails is named with its error and the
            // run goes on, so one kind never loses the others'.
            func record(_ kind: String, first: (() async throws -> Void)? = nil, timed: () async throws -> [Double]) async {
                do {
                    var firstMs: Double?
                    if let first {
                        let t = ContinuousClock.now
                        try await first()
                        firstMs = Double(t.duration(to: .now) / .microseconds(1)) / 1000
                    }
                    let lat = try await timed()
                    guard !lat.isEmpty else { return }
                    kinds[kind] = ["p50": percentile(lat, 50), "p99": percentile(lat, 99)]
                    kinds[kind]?["first_ms"] = firstMs
                    print(
                        "  \(kind.padding(toLength: 36, withPad: " ", startingAt: 0)) p50 \(fmt(percentile(lat, 50)).leftPad(9)) ms   p99 \(fmt(percentile(lat, 99)).leftPad(9)) ms"
                            + (firstMs.map { "   first \(fmt($0).leftPad(9)) ms" } ?? "")
                    )
                } catch {
                    failed[kind] = "\(error)"
                    print("  \(kind.padding(toLength: 36, withPad: " ", startingAt: 0)) failed: \(error)")
                }
            }
            let wait = Duration.seconds(idleWait)
            func coldSearch(_ c: LimelightClient, _ q: JSONValue?) async throws {
                guard let q else { return }
                _ = try await c.search(q, deadlineMs: Int(idleWait * 1000), timeout: wait)
            }
            for (kind, qs) in queryKinds(words, count: queries) {
                await record("query " + kind) {
                    if let q = qs.first { try await runQuery(client, q, wait: wait) }
                } timed: {
                    try await timeQueries(client, qs)
                }
            }
            // CKQuery's record type is the items' content type: the corpus's most frequent one.
            let types = Dictionary(
                sample.lines.compactMap { (try? JSONValue.parse($0))?["attributes"]?["contentType"]?.stringValue }.map { ($0, 1) },
                uniquingKeysWith: +)
            if let recordType = types.max(by: { ($0.value, $1.key) < ($1.value, $0.key) })?.key {
                await record("predicate") {
                    try await timePredicates(client, words, recordType: recordType)
                }
            } else {
                print("  predicate: not timed, the corpus's items have no contentType (CKQuery's record type)")
            }
            let searches = searchKinds(words, count: queries) + scaleSearchKinds(words, sample: sample.lines, count: queries)
            for (kind, qs) in searches {
                await record(kind) {
                    try await coldSearch(client, qs.first)
                } timed: {
                    try await timeSearches(client, qs.map { Optional($0) })
                }
            }
            await record("suggest") {
                try await timeSuggestions(client, words)
            }
            let search = try await client.keys(Body.Keys(action: "create", role: "search")).apiKey ?? ""
            let secured = try cluster.securedKey(binDir: binDir, parent: search, filters: "NOT section:oldlibs")
            for (label, key) in [("search key", search), ("secured key", secured)] {
                let keyed = try LimelightClient(endpoint: cluster.endpoint, key: key)
                defer { keyed.close() }
                for (kind, qs) in searches where ["search 1 word", "search 2 words", "faceted", "page 10"].contains(kind) {
                    await record(kind + " @" + label) {
                        try await coldSearch(keyed, qs.first)
                    } timed: {
                        try await timeSearches(keyed, qs.map { Optional($0) })
                    }
                }
            }

        }

        let memory = cluster.memory()
        print("resident memory: " + memory.map { "\($0.name) \($0.anonMB) MB (+\($0.fileMB) MB mapped files)" }.joined(separator: ", "))
        // The write-ahead logs apart: each shard's stays near its checkpoint
        // interval (about 40 MB) whatever the corpus, so on a small corpus
        // they would hide what an item costs.
        let wal = cluster.dataBytes(matching: { $0.hasSuffix("-wal") })
        let bytes = cluster.dataBytes() - wal
        print("data folder: \(bytes / 1_000_000) MB, \(stored > 0 ? bytes / stored : 0) bytes an item, and \(wal / 1_000_000) MB of write-ahead logs")
        let peerRows = runPeers(total: total)
        for r in peerRows {
            print("  peer: " + ((try? String(decoding: JSONSerialization.data(withJSONObject: r, options: [.sortedKeys]), as: UTF8.self)) ?? ""))
        }
        if let json {
            let figures: [String: Any] = [
                "items": stored, "corpus": corpus, "shards": shards, "date": ISO8601DateFormatter().string(from: Date()),
                "publish_items_per_s": rate, "publish_parts_items_per_s": parts, "part_items": part,
                "kinds": kinds, "bytes_per_item": stored > 0 ? bytes / stored : 0, "wal_mb": wal / 1_000_000,
                "first_search_s": firstSearchSeconds ?? NSNull(), "failed_kinds": failed,
                "publish_cpu_s": cpuByName, "publish_write_bytes_per_item": diskByName, "publish_wchar_per_item": callsByName,
                "memory": memory.map { ["name": $0.name, "anon_mb": $0.anonMB, "file_mb": $0.fileMB] }, "peers": peerRows,
            ]
            try JSONSerialization.data(withJSONObject: figures, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: json))
            print("figures written to \(json)")
        }
    }

    func runPeers(total: Int) -> [[String: Any]] {
        guard peers != "none", FileManager.default.fileExists(atPath: peers),
            let (output, _) = try? runToEnd(
                "/usr/bin/env", ["python3", peers, corpus, "--engines", engines, "--queries", String(queries * 2), "--json"])
        else { return [] }
        return output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}

/// A process's bytes written (see ``BenchCluster/bytesWrittenByProcess()``).
struct BytesWritten {
    var disk: Int
    var calls: Int
}

extension BenchCluster {
    /// Bytes of the data folder's files whose names match.
    func dataBytes(matching: (String) -> Bool) -> Int {
        let fm = FileManager.default
        return (fm.enumerator(atPath: dir)?.allObjects as? [String] ?? []).filter(matching).reduce(0) { total, f in
            total + (((try? fm.attributesOfItem(atPath: dir + "/" + f))?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }

    /// The cluster's processes (`up`'s children): their names and pids.
    func children() -> [(name: String, pid: Int32)] {
        var out: [(String, Int32)] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let ppid = stat.split(separator: ")").last?.split(separator: " ").dropFirst().first.flatMap({ Int32($0) }),
                ppid == process.processIdentifier,
                let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let argv = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            let name =
                argv.firstIndex(of: "--id").flatMap { argv.indices.contains($0 + 1) ? argv[$0 + 1] : nil }
                ?? (argv.first.map { ($0 as NSString).lastPathComponent } ?? entry)
            out.append((name, pid))
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// Each process's resident memory, anonymous (its own heap) and
    /// file-backed (mapped files, shared with the page cache) apart, from
    /// `/proc/PID/status`.
    func memory() -> [(name: String, anonMB: Int, fileMB: Int)] {
        children().map { child in
            let status = (try? String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8)) ?? ""
            func kb(_ field: String) -> Int {
                status.split(separator: "\n").first { $0.hasPrefix(field) }?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            }
            return (child.name, kb("RssAnon:") / 1024, (kb("RssFile:") + kb("RssShmem:")) / 1024)
        }
    }

    /// CPU seconds (user and system) the cluster's processes have used.
    func cpuSeconds() -> Double { cpuSecondsByProcess().reduce(0) { $0 + $1.seconds } }

    /// CPU seconds (user and system) each of the cluster's processes has
    /// used, from `/proc/PID/stat`: where an indexing run's time went.
    func cpuSecondsByProcess() -> [(name: String, seconds: Double)] {
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        return children().compactMap { child in
            guard let stat = try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8),
                let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 13,
                let user = Double(fields[11]), let system = Double(fields[12])
            else { return nil }
            return (child.name, (user + system) / tick)
        }
    }

    /// Each process's bytes written so far, from `/proc/PID/io`: `disk`
    /// what reached the block layer (`write_bytes`), `calls` what it passed
    /// to write calls (`wchar`; the log's pages rewritten in place count
    /// each time there, once a page is flushed in `write_bytes`).
    func bytesWrittenByProcess() -> [(name: String, bytes: BytesWritten)] {
        children().compactMap { child in
            guard let io = try? String(contentsOfFile: "/proc/\(child.pid)/io", encoding: .utf8) else { return nil }
            var fields: [String: Int] = [:]
            for line in io.split(separator: "\n") {
                let parts = line.split(separator: ":")
                if parts.count == 2, let n = Int(parts[1].trimmingCharacters(in: .whitespaces)) { fields[String(parts[0])] = n }
            }
            return (child.name, BytesWritten(disk: fields["write_bytes"] ?? 0, calls: fields["wchar"] ?? 0))
        }
    }

    /// Waits until the cluster's processes use less than a tenth of a CPU
    /// over two seconds, or `limit` seconds: the seconds waited.
    func waitUntilIdle(limit: Double) -> Double {
        let t0 = Date()
        var last = cpuSeconds()
        while Date().timeIntervalSince(t0) < limit {
            Thread.sleep(forTimeInterval: 2)
            let now = cpuSeconds()
            if now - last < 0.2 { break }
            last = now
        }
        return Date().timeIntervalSince(t0)
    }
}

/// Query string `q` as every query kind sends it (limit 20, titles); with
/// `wait`, a deadline and a silence that long (a kind's cold first request).
func runQuery(_ client: LimelightClient, _ q: String, wait: Duration? = nil) async throws {
    let r = Body.QueryRequest(
        query: q, fetchAttributes: ["title"], limit: 20, batchSize: 20, deadlineMs: wait.map { Int($0 / .milliseconds(1)) })
    for try await _ in client.query(r, silence: wait).events {}
}

/// Each query string once after 20 to warm up, timed: milliseconds.
func timeQueries(_ client: LimelightClient, _ qs: [String]) async throws -> [Double] {
    for q in qs.prefix(20) { try await runQuery(client, q) }
    var lat: [Double] = []
    for q in qs {
        let t = Date()
        try await runQuery(client, q)
        lat.append(Date().timeIntervalSince(t) * 1000)
    }
    return lat
}

/// NSPredicate queries (a word in the title, a size range), 20 records each.
func timePredicates(_ client: LimelightClient, _ w: QueryWords, recordType: String) async throws -> [Double] {
    let requests = w.words.enumerated().map { i, word in
        let size = w.sizes[i * 7919 % w.sizes.count]
        return Body.QueryRequest(
            language: "nspredicate", fetchAttributes: ["title"], limit: 20, batchSize: 20,
            recordType: recordType, predicate: "title CONTAINS[cd] %@ OR installedSize BETWEEN {%@, %@}",
            arguments: [.string(word), .number(size), .number(size * 1.1 + 10)])
    }
    for r in requests.prefix(20) { for try await _ in client.query(r).events {} }
    var lat: [Double] = []
    for r in requests {
        let t = Date()
        for try await _ in client.query(r).events {}
        lat.append(Date().timeIntervalSince(t) * 1000)
    }
    return lat
}

/// Suggestions for each word typed up to its fourth letter.
func timeSuggestions(_ client: LimelightClient, _ w: QueryWords) async throws -> [Double] {
    for word in w.words.prefix(20) { _ = try await client.suggest(String(word.prefix(4)), limit: 8) }
    var lat: [Double] = []
    for word in w.words {
        let t = Date()
        _ = try await client.suggest(String(word.prefix(4)), limit: 8)
        lat.append(Date().timeIntervalSince(t) * 1000)
    }
    return lat
}

/// The kinds a growing corpus adds: a rare word (a title's model code,
/// which a few items hold at any size), a word's first four letters, and
/// a geo search around a point (items with a location, nearest first).
func scaleSearchKinds(_ w: QueryWords, sample: [String], count: Int) -> [(String, [JSONValue])] {
    let codes = sample.compactMap { line -> String? in
        guard let v = try? JSONValue.parse(line), let title = v["attributes"]?["title"]?.stringValue else { return nil }
        return title.split(separator: " ").last.map(String.init)
    }
    let rare = (0..<count).map { i -> JSONValue in
        .object(["query": .string(codes.isEmpty ? w.words[i] : codes[i % codes.count]), "attributesToRetrieve": .array([.string("title")])])
    }
    let prefix = (0..<count).map { i -> JSONValue in
        .object(["query": .string(String(w.words[i].prefix(4))), "attributesToRetrieve": .array([.string("title")])])
    }
    var rng = SplitMix64(state: 17)
    let geo = (0..<count).map { i -> JSONValue in
        let lat = Double(rng.next() % 130) - 60, lng = Double(rng.next() % 360) - 180
        return .object([
            "query": .string(i % 2 == 0 ? "" : w.words[i]), "aroundLatLng": .string("\(lat), \(lng)"), "aroundRadius": .number(2_000_000),
            "attributesToRetrieve": .array([.string("title")]),
        ])
    }
    return [("search rare word", rare), ("search prefix", prefix), ("geo", geo)]
}

/// A fixed-size uniform sample of a stream of lines (Algorithm R), the
/// same lines on every run for the same seed.
struct Reservoir {
    let capacity: Int
    var rng: SplitMix64
    var lines: [String] = []
    var seen = 0
    init(capacity: Int, seed: UInt64) {
        self.capacity = capacity
        rng = SplitMix64(state: seed)
    }
    mutating func offer(_ line: String) {
        seen += 1
        if lines.count < capacity {
            lines.append(line)
        } else {
            let j = Int(rng.next() % UInt64(seen))
            if j < capacity { lines[j] = line }
        }
    }
}

/// The lines of a file, read a few megabytes at a time.
struct Lines: AsyncSequence {
    typealias Element = String
    let path: String
    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        var buffer: [UInt8] = []
        var start = 0
        var done = false
        mutating func next() async throws -> String? {
            while true {
                if let nl = buffer[start...].firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[start..<nl], as: UTF8.self)
                    start = nl + 1
                    if line.isEmpty { continue }
                    return line
                }
                if done || handle == nil {
                    guard start < buffer.count else { return nil }
                    let line = String(decoding: buffer[start...], as: UTF8.self)
                    start = buffer.count
                    return line
                }
                buffer.removeFirst(start)
                start = 0
                let data = handle!.readData(ofLength: 4 << 20)
                if data.isEmpty { done = true } else { buffer.append(contentsOf: data) }
            }
        }
    }
    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(handle: path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path))
    }
}

/// Newlines in a file, counted a few megabytes at a time.
func countLines(_ path: String) throws -> Int {
    guard let handle = FileHandle(forReadingAtPath: path) else { throw ValidationError("cannot read \(path)") }
    defer { try? handle.close() }
    var count = 0
    while true {
        let data = handle.readData(ofLength: 8 << 20)
        if data.isEmpty { return count }
        count += data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }
}
