import ArgumentParser
import Foundation
import Items
import LimelightClient
import ZeroMQ

/// Sends the benchmark's two-word searches to a running cluster, one at a
/// time, for a while, and prints their p50 and p99: a steady load to
/// profile the processes under (`perf record -p`, `perf sched`), which the
/// other benchmarks, starting and filling clusters of their own, are not.
///
/// `--kinds` picks other search kinds (``searchKinds(_:count:)``), each
/// timed for `--seconds` in turn, and the floor under them: `ping` and
/// `no match` (``noMatchSearches(count:)``).
struct LoadBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "load", abstract: "Two-word searches against a running cluster, in a loop.")
    @OptionGroup var corpus: CorpusOptions
    @Option(help: "The coordinator's client endpoint.") var endpoint = "tcp://127.0.0.1:7700"
    @Option(help: "Seconds to run.") var seconds = 10.0
    @Flag(help: "Run the loop on Swift's pool rather than on the client's socket thread (LimelightClient.executor).") var pool = false
    @Option(help: "Where the client's socket threads run: here (the CPU it starts on), a CPU's number, or anywhere.") var clientCpu = "here"

    func run() async throws {
        let words = QueryWords(lines: try corpus.loadLines(), count: corpus.queries)
        let noMatch = noMatchSearches(count: corpus.queries)
        let kinds = searchKinds(words, count: corpus.queries).map { ($0.0, Optional($0.1)) } + [("ping", nil), ("no match", noMatch)]
        let chosen = corpus.kinds == nil ? [("search 2 words", Optional(words.twoWordSearches(seed: 7)))] : kinds.filter { corpus.wants($0.0) }
        guard !chosen.isEmpty else { throw ValidationError("no such kind: \(corpus.kinds ?? "") (kinds: \(kinds.map(\.0).joined(separator: ", ")))") }
        guard let placement = ThreadPlacement(clientCpu) else {
            throw ValidationError("--client-cpu: '\(clientCpu)' is not here, anywhere or a CPU's number")
        }
        let client = try LimelightClient(endpoint: endpoint, key: try ClientDefaults.key(), placement: placement)
        defer { client.close() }
        let seconds = self.seconds
        for (name, params) in chosen {
            let loop: @Sendable () async throws -> [Double] = {
                var latencies: [Double] = []
                let end = Date().addingTimeInterval(seconds)
                var k = 0
                while Date() < end {
                    let t = Date()
                    if let params { _ = try await client.search(params[k % params.count]) } else { _ = try await client.ping() }
                    latencies.append(Date().timeIntervalSince(t) * 1000)
                    k += 1
                }
                return latencies
            }
            let latencies = pool ? try await loop() : try await withTaskExecutorPreference(client.executor) { try await loop() }
            guard !latencies.isEmpty else { print("no \(name) ran in \(seconds) s"); continue }
            print(
                "\(latencies.count) \(name == "search 2 words" ? "two-word searches" : name): p50 \(fmt(percentile(latencies, 50))) ms  p99 \(fmt(percentile(latencies, 99))) ms"
            )
        }
    }
}
