import ArgumentParser
import Foundation
import Items
import LimelightClient
import QueryPlan
import Synchronization
import WireProtocol

/// Searches while the corpus is written again, as a user of `limelight up`
/// sees them (8 shards, 2 indexers, 2 query workers, keys required, the
/// app's admin key): faceted searches timed one after another with the
/// cluster idle, while every item is published again (each one a
/// replacement: removed and stored under a new id), and for a while after
/// the last acknowledgement, when the query workers catch up with the
/// commits. The figures: each phase's p50, p95 and p99, the p50 of each
/// second after the publish, and how long after it the searches were back
/// within 1.5 times the idle p50 for good; resident memory per process.
struct WritesBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "writes", abstract: "Faceted searches idle, while the corpus is published again, and after (limelight up's defaults).")
    @Option(help: "JSON Lines corpus (the Debian corpus by default).") var corpus = ".bench/debian-packages.jsonl"
    @Option(help: "Searches timed idle.") var idleQueries = 300
    @Option(help: "Seconds of searches timed after the publish's last acknowledgement.") var after = 60.0
    @Option(help: "Shards (limelight up's default is 8).") var shards = 8
    @Option(help: "Items per publish batch.") var batch = 1000
    @Option(help: "Publish batches in flight.") var window = 4
    @Option(help: "Extra arguments for limelight up.") var upArgument: [String] = []
    @Option(help: "Write every figure as one JSON object here.") var json: String?

    func run() async throws {
        let lines = try String(contentsOfFile: corpus, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        let items = lines.compactMap { try? JSONValue.parse($0) }
        let binDir = (((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]) as NSString)
            .deletingLastPathComponent
        print("Searches under writes, \(items.count) items: limelight up, \(shards) shards, keys required (admin key)")
        let cluster = try BenchCluster(binDir: binDir, shards: shards, extra: upArgument)
        defer { cluster.stop() }
        let writer = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey)
        defer { writer.close() }
        let reader = try LimelightClient(endpoint: cluster.endpoint, key: cluster.adminKey)
        defer { reader.close() }

        var t = Date()
        let stored = try await publish(items, writer)
        print("publish: \(stored) stored at \(Int(Double(stored) / Date().timeIntervalSince(t))) items/s")
        let words = QueryWords(lines: lines, count: max(idleQueries, 1000))
        let faceted = searchKinds(words, count: words.words.count).first { $0.0 == "faceted" }!.1
        _ = try await reader.search(faceted[0])
        print("cluster idle \(fmt(cluster.waitUntilIdle(limit: 600), 0)) s after the first search")

        var next = 0
        func search() async throws -> Double {
            let q = faceted[next % faceted.count]
            next += 1
            let start = Date()
            _ = try await reader.search(q)
            return Date().timeIntervalSince(start) * 1000
        }
        for _ in 0..<20 { _ = try await search() }
        var idle: [Double] = []
        for _ in 0..<idleQueries { idle.append(try await search()) }
        let memoryIdle = cluster.memory()

        // The same items again, while searches run one after another.
        t = Date()
        let done = PublishDone()
        let publishing = Task {
            defer { done.flag.store(true, ordering: .releasing) }
            return try await publish(items, writer)
        }
        var during: [Double] = []
        // A search that began before the last acknowledgement counts as during.
        while !done.flag.load(ordering: .acquiring) { during.append(try await search()) }
        let restored = try await publishing.value
        let end = Date()
        let publishSeconds = end.timeIntervalSince(t)
        let memoryPublish = cluster.memory()
        print("published again: \(restored) items in \(fmt(publishSeconds, 1)) s, \(during.count) searches meanwhile")

        var afterward: [(at: Double, ms: Double)] = []
        while Date().timeIntervalSince(end) < after {
            let at = Date().timeIntervalSince(end)
            afterward.append((at, try await search()))
        }
        let memoryAfter = cluster.memory()

        func row(_ name: String, _ lat: [Double]) -> [String: Double] {
            let r = ["p50": percentile(lat, 50), "p95": percentile(lat, 95), "p99": percentile(lat, 99), "count": Double(lat.count)]
            print(
                "  \(name.padding(toLength: 28, withPad: " ", startingAt: 0)) p50 \(fmt(r["p50"]!).leftPad(9)) ms   p95 \(fmt(r["p95"]!).leftPad(9)) ms   p99 \(fmt(r["p99"]!).leftPad(9)) ms   (\(lat.count))"
            )
            return r
        }
        print("faceted search, admin key:")
        let idleRow = row("idle", idle)
        let duringRow = row("during the publish", during)
        let afterRow = row("the \(Int(after)) s after", afterward.map(\.ms))
        let windows: [(String, ClosedRange<Double>)] = [
            ("0-5 s after", 0...5), ("5-15 s after", 5...15), ("15-30 s after", 15...30), ("30-60 s after", 30...60),
        ]
        var windowRows: [String: [String: Double]] = [:]
        for (name, range) in windows {
            let lat = afterward.filter { range.contains($0.at) }.map(\.ms)
            if !lat.isEmpty { windowRows[name] = row(name, lat) }
        }
        // Back to idle: from the first second after which every second's p50
        // is within 1.5 times the idle p50.
        let seconds = Dictionary(grouping: afterward, by: { Int($0.at) }).mapValues { percentile($0.map(\.ms), 50) }
        let limit = idleRow["p50"]! * 1.5
        let slow = seconds.filter { $0.value > limit }.keys.max()
        let recovered = slow.map { Double($0 + 1) } ?? 0
        print("back within 1.5x the idle p50 \(Int(recovered)) s after the last acknowledgement")
        print(
            "  p50 per second after: "
                + seconds.keys.sorted().prefix(30).map { "\($0):\(fmt(seconds[$0]!, 1))" }.joined(separator: " "))
        for (label, memory) in [("idle", memoryIdle), ("end of publish", memoryPublish), ("after", memoryAfter)] {
            print("resident memory, \(label): " + memory.map { "\($0.name) \($0.anonMB) + \($0.fileMB) MB" }.joined(separator: ", "))
        }
        if let json {
            func mem(_ m: [(name: String, anonMB: Int, fileMB: Int)]) -> [[String: Any]] {
                m.map { ["name": $0.name, "anon_mb": $0.anonMB, "file_mb": $0.fileMB] }
            }
            let figures: [String: Any] = [
                "items": stored, "corpus": corpus, "shards": shards, "date": ISO8601DateFormatter().string(from: Date()),
                "publish_again_s": publishSeconds, "idle": idleRow, "during": duringRow, "after": afterRow, "after_windows": windowRows,
                "back_to_idle_s": recovered, "after_p50_per_second": Dictionary(uniqueKeysWithValues: seconds.map { (String($0.key), $0.value) }),
                "memory_idle": mem(memoryIdle), "memory_publish": mem(memoryPublish), "memory_after": mem(memoryAfter),
            ]
            try JSONSerialization.data(withJSONObject: figures, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: json))
            print("figures written to \(json)")
        }
    }

    /// Publishes `items` in batches, `window` in flight: the items stored.
    func publish(_ items: [JSONValue], _ client: LimelightClient) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            var stored = 0, inFlight = 0
            for start in stride(from: 0, to: items.count, by: batch) {
                if inFlight >= window, let s = try await group.next() {
                    stored += s
                    inFlight -= 1
                }
                let chunk = Array(items[start..<min(items.count, start + batch)])
                group.addTask { try await client.publish(chunk).stored }
                inFlight += 1
            }
            for try await s in group { stored += s }
            return stored
        }
    }
}

/// Set once the publish during the searches has its last acknowledgement.
final class PublishDone: Sendable {
    let flag = Atomic<Bool>(false)
}
