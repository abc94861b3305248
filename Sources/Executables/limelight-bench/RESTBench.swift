import ArgumentParser
import Foundation
import Items
import LimelightClient
import QueryPlan
import Synchronization
import WireProtocol

/// Algolia's REST API beside the ZeroMQ API, on the same cluster and data
/// (`limelight up`'s defaults, keys required, the app's admin key): bulk
/// writes (`batch` against `limelight publish`'s path), a two-word search
/// (`/1/indexes/{index}/query` over HTTP keep-alive against the ZeroMQ
/// `search`), and the request InstantSearch sends for a page with three
/// refined disjunctive facets (1 + 3 queries in one `/1/indexes/*/queries`
/// call, parameters as a URL-encoded string) against one search.
struct RESTBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rest", abstract: "Algolia's REST API beside the ZeroMQ API, on the same cluster.")
    @OptionGroup var corpus: CorpusOptions
    @Option(help: "Shards (limelight up's default is 8).") var shards = 8
    @Option(help: "Records per batch, as Algolia's clients cut them.") var batch = 1000
    @Option(
        help: """
            Batches in flight at once over as many keep-alive connections: 4, as limelight publish keeps \
            (its --window), so that both paths are timed with the same work under way; 1 is how an Algolia \
            client's save_objects sends them (a batch is answered once stored).
            """)
    var connections = 4
    @Flag(help: "Time the searches only (the records still written through batch, untimed against publish).") var searchesOnly = false

    func run() async throws {
        let lines = try corpus.loadLines()
        let items = lines.compactMap { try? JSONValue.parse($0) }
        let records = items.map { item -> JSONValue in
            var o: [String: JSONValue] = [:]
            if case .object(let a)? = item["attributes"] { o = a }
            o["objectID"] = item["uniqueIdentifier"]
            return .object(o)
        }
        let words = QueryWords(lines: lines, count: corpus.queries)
        let binDir = (((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]) as NSString)
            .deletingLastPathComponent

        // Writes: the corpus through `publish` on one cluster, through `batch` on another.
        var zmqRate: Double?
        if !searchesOnly {
            let cluster = try BenchCluster(binDir: binDir, shards: shards)
            defer { cluster.stop() }
            let client = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey)
            defer { client.close() }
            let t0 = Date()
            try await withThrowingTaskGroup(of: Int.self) { group in
                var inFlight = 0
                for start in stride(from: 0, to: items.count, by: batch) {
                    let chunk = Array(items[start..<min(items.count, start + batch)])
                    if inFlight >= 4 { _ = try await group.next(); inFlight -= 1 }
                    group.addTask { try await client.publish(chunk).stored }
                    inFlight += 1
                }
                for try await _ in group {}
            }
            zmqRate = Double(items.count) / Date().timeIntervalSince(t0)
        }
        let cluster = try BenchCluster(binDir: binDir, shards: shards)
        defer { cluster.stop() }
        let key = cluster.adminKey ?? ""
        guard let rest = cluster.restURL, let port = URL(string: rest)?.port else { throw ValidationError("limelight up named no REST URL") }
        let headers = ["X-Algolia-Application-Id": "default", "X-Algolia-API-Key": key]
        let http = try HTTPConnection(port: port, headers: headers)
        defer { http.close() }
        let t0 = Date()
        let lastTask = try writeBatches(records, port: port, headers: headers)
        while try http.json("GET", "/1/indexes/bench/task/\(lastTask)", nil)["status"]?.stringValue != "published" {
            try await Task.sleep(for: .milliseconds(5))
        }
        let restRate = Double(records.count) / Date().timeIntervalSince(t0)
        if let zmqRate {
            print(
                "writes: limelight publish \(Int(zmqRate)) items/s (4 batches in flight); REST batch \(Int(restRate)) items/s "
                    + "(\(connections) in flight) (\(fmt(restRate / zmqRate, 2))x)")
        }

        // Searches, ZeroMQ then REST then ZeroMQ again: the two ZeroMQ runs bracket the REST one.
        let client = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey)
        defer { client.close() }
        // The same search over both: the attributes to highlight named, as
        // the two APIs' defaults differ (the core highlights the retrieved
        // attributes, Algolia every searchable one); the REST API's default
        // is timed beside.
        let searches = words.twoWordSearches(seed: 13).map { q -> JSONValue in
            guard case .object(var o) = q else { return q }
            o["attributesToHighlight"] = o["attributesToRetrieve"]
            return .object(o)
        }
        let zmqBefore = try await timeSearches(client, searches.map { Optional($0) })
        let restTimes = try timeREST(http, searches.map { ("/1/indexes/bench/query", $0) })
        let restDefault = try timeREST(
            http,
            searches.map { q -> (String, JSONValue) in
                guard case .object(var o) = q else { return ("/1/indexes/bench/query", q) }
                o["attributesToHighlight"] = nil
                return ("/1/indexes/bench/query", .object(o))
            })
        let zmqAfter = try await timeSearches(client, searches.map { Optional($0) })
        let zmq = percentile(zmqBefore + zmqAfter, 50)
        print(
            "search 2 words: ZeroMQ p50 \(fmt(percentile(zmqBefore, 50))) / \(fmt(percentile(zmqAfter, 50))) ms; REST p50 \(fmt(percentile(restTimes, 50))) ms, p99 \(fmt(percentile(restTimes, 99))) ms (\(fmt(percentile(restTimes, 50) / zmq, 2))x); REST highlighting every attribute (Algolia's default) p50 \(fmt(percentile(restDefault, 50))) ms (\(fmt(percentile(restDefault, 50) / zmq, 2))x)"
        )

        // InstantSearch's page with three refined disjunctive facets, against the main query alone.
        let facets = ["section", "priority", "architecture"]
        let values = ["section": "utils", "priority": "optional", "architecture": "all"]
        func params(_ word: String, without: String?, hits: Bool, extra: [URLQueryItem] = []) -> String {
            var filters: [[String]] = []
            for f in facets where f != without { filters.append(["\(f):\(values[f]!)"]) }
            let facetList = without.map { [$0] } ?? facets
            var p = URLComponents()
            p.queryItems =
                [
                    URLQueryItem(name: "query", value: word), URLQueryItem(name: "hitsPerPage", value: hits ? "20" : "0"),
                    URLQueryItem(name: "facets", value: JSONValue.array(facetList.map { .string($0) }).serializedString),
                    URLQueryItem(name: "facetFilters", value: JSONValue.array(filters.map { .array($0.map { .string($0) }) }).serializedString),
                ] + extra
            return p.percentEncodedQuery ?? ""
        }
        func queries(_ requests: [String]) -> (String, JSONValue) {
            ("/1/indexes/*/queries", .object(["requests": .array(requests.map { .object(["indexName": .string("bench"), "params": .string($0)]) })]))
        }
        let single = words.words.map { queries([params($0, without: nil, hits: true)]) }
        let page = words.words.map { w in queries([params(w, without: nil, hits: true)] + facets.map { params(w, without: $0, hits: false) }) }
        // The same page with a parameter the facet requests alone carry (a
        // `userToken`, which changes no answer), so the REST API does not
        // recognise InstantSearch's page and runs the four searches, as it
        // did before it answered the page with one.
        let apart = words.words.map { w in
            queries(
                [params(w, without: nil, hits: true)]
                    + facets.map { params(w, without: $0, hits: false, extra: [URLQueryItem(name: "userToken", value: "bench")]) })
        }
        // Interleaved, so that the three kinds see the same load.
        let times = try timeREST(http, kinds: [single, page, apart])
        let (one, merged, separate) = (percentile(times[0], 50), percentile(times[1], 50), percentile(times[2], 50))
        print(
            "InstantSearch page, 3 refined disjunctive facets (1 + 3 queries in one call): p50 \(fmt(merged)) ms as one search, \(fmt(separate)) ms as four, against one query \(fmt(one)) ms (\(fmt(merged / one, 2))x; four searches \(fmt(separate / one, 2))x)"
        )
    }
}

/// Each kind's requests in turn (the first of each kind, then the second…),
/// after 20 rounds to warm up: milliseconds per kind.
extension RESTBench {
    /// Sends `records` through `POST /1/indexes/bench/batch`, `batch` a
    /// call, over ``connections`` keep-alive connections, each on a thread
    /// of its own sending the next batch once its last is answered; returns
    /// the highest task id answered.
    func writeBatches(_ records: [JSONValue], port: Int, headers: [String: String]) throws -> Int {
        let starts = Array(stride(from: 0, to: records.count, by: batch))
        let state = Mutex<(next: Int, lastTask: Int, failure: String?)>((0, 0, nil))
        let done = DispatchGroup()
        let batch = batch
        for _ in 0..<max(1, connections) {
            done.enter()
            Thread {
                defer { done.leave() }
                do {
                    let http = try HTTPConnection(port: port, headers: headers)
                    defer { http.close() }
                    while let start = state.withLock({ s -> Int? in
                        guard s.failure == nil, s.next < starts.count else { return nil }
                        s.next += 1
                        return starts[s.next - 1]
                    }) {
                        let requests = records[start..<min(records.count, start + batch)].map {
                            JSONValue.object(["action": .string("addObject"), "body": $0])
                        }
                        let answer = try http.json("POST", "/1/indexes/bench/batch", .object(["requests": .array(Array(requests))]))
                        let task = Int(answer["taskID"]?.doubleValue ?? 0)
                        state.withLock { $0.lastTask = max($0.lastTask, task) }
                    }
                } catch {
                    state.withLock { $0.failure = $0.failure ?? "\(error)" }
                }
            }.start()
        }
        done.wait()
        let (lastTask, failure) = state.withLock { ($0.lastTask, $0.failure) }
        if let failure { throw ValidationError("a batch failed: \(failure)") }
        return lastTask
    }
}

func timeREST(_ http: HTTPConnection, kinds: [[(String, JSONValue)]]) throws -> [[Double]] {
    let rounds = kinds.map(\.count).min() ?? 0
    for i in 0..<min(20, rounds) { for k in kinds { _ = try http.json("POST", k[i].0, k[i].1) } }
    var lat = Array(repeating: [Double](), count: kinds.count)
    for i in 0..<rounds {
        for (n, k) in kinds.enumerated() {
            let t = Date()
            _ = try http.json("POST", k[i].0, k[i].1)
            lat[n].append(Date().timeIntervalSince(t) * 1000)
        }
    }
    return lat
}

/// Each request once after 20 to warm up, timed: milliseconds.
func timeREST(_ http: HTTPConnection, _ requests: [(String, JSONValue)]) throws -> [Double] {
    for (path, body) in requests.prefix(20) { _ = try http.json("POST", path, body) }
    var lat: [Double] = []
    for (path, body) in requests {
        let t = Date()
        _ = try http.json("POST", path, body)
        lat.append(Date().timeIntervalSince(t) * 1000)
    }
    return lat
}

extension JSONValue {
    var serializedString: String { String(decoding: serialized(), as: UTF8.self) }
}

extension BenchCluster {
    /// The REST API's base URL, the fourth field of `limelight up`'s ready line.
    var restURL: String? { readyLine.split(separator: " ").dropFirst(3).first.map(String.init) }
}

/// One HTTP/1.1 keep-alive connection to the coordinator on loopback, as
/// Algolia's clients hold one: a request written, its answer read by its
/// `Content-Length`. Blocking and minimal, so the benchmark times the server
/// and not a client library.
final class HTTPConnection {
    let fd: Int32
    let headers: [String: String]
    var buffer: [UInt8] = []

    init(port: Int, headers: [String: String]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        self.headers = headers
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            _ = Glibc.close(fd)
            throw ValidationError("cannot connect to 127.0.0.1:\(port)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    func close() { _ = Glibc.close(fd) }

    /// Sends a request and returns the answer's JSON; a status other than 200 throws with the body.
    func json(_ method: String, _ path: String, _ body: JSONValue?) throws -> JSONValue {
        let payload = body.map { [UInt8]($0.serialized()) } ?? []
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(payload.count)\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        let request = [UInt8]((head + "\r\n").utf8) + payload
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw ValidationError("the connection closed while sending") }
            sent += n
        }
        // The head, up to the blank line.
        var headEnd: Int?
        while headEnd == nil {
            if let i = find([13, 10, 13, 10]) { headEnd = i } else { try fill() }
        }
        let headText = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        let status = Int(headText.split(separator: " ").dropFirst().first ?? "") ?? 0
        let length =
            headText.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        let start = headEnd! + 4
        while buffer.count < start + length { try fill() }
        let bytes = Array(buffer[start..<start + length])
        buffer.removeFirst(start + length)
        guard status == 200 || status == 201 else {
            throw ValidationError("\(method) \(path): \(status) \(String(decoding: bytes, as: UTF8.self))")
        }
        return try JSONValue.parse(Data(bytes))
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        for i in 0...(buffer.count - needle.count) where buffer[i] == needle[0] && Array(buffer[i..<i + needle.count]) == needle {
            return i
        }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw ValidationError("the connection closed") }
        buffer += chunk[..<n]
    }
}
