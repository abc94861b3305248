import ArgumentParser
import Embedder
import Foundation
import Items

/// Times the native all-MiniLM-L6-v2 embedder: documents per second and the
/// effective GFLOP/s of their matrix products, beside OpenBLAS's own sgemm rate on
/// the model's shapes measured in the same run (the physical ceiling, since the
/// matrix products are nearly all the arithmetic), and a short query's latency.
struct EmbedBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "embed", abstract: "Sentence-embedding throughput and query latency against OpenBLAS's sgemm rate.")

    @Option(help: "Model folder (default: $LIMELIGHT_MODEL; scripts/install-model prints it).") var model: String?
    @Option(help: "JSON Lines items; by default ../shared/datasets/debian_packages.py --limit TEXTS is run.") var corpus: String?
    @Option(help: "Texts to embed: displayName + \". \" + contentDescription of the first items.") var texts = 1000
    @Option(help: "Query embeddings to time one by one.") var queries = 200
    @Option(help: "Rounds of (sgemm ceilings, embed all texts), alternating.") var rounds = 3
    @Option(help: "Worker threads embedding side by side, and OpenBLAS's threads for the sgemm ceiling.") var threads = 2

    func run() throws {
        let loadBefore = loadAverage()
        let lines = try corpusLines()
        let documents: [String] = lines.prefix(texts).compactMap { line in
            guard let v = try? JSONValue.parse(line), let a = v["attributes"] else { return nil }
            return (a["displayName"]?.stringValue ?? "") + ". " + (a["contentDescription"]?.stringValue ?? "")
        }
        let clock = ContinuousClock()
        var t0 = clock.now
        let embedder = try Embedder(modelDirectory: Embedder.modelDirectory(explicit: model), threads: threads)
        let loadTime = seconds(clock.now - t0)

        t0 = clock.now
        let tokenized = documents.map(embedder.tokenize)
        let tokenizeTime = seconds(clock.now - t0)
        let tokens = tokenized.reduce(0) { $0 + $1.count }
        let flops = tokenized.reduce(0.0) { $0 + embedder.matrixFLOPs(tokens: $1.count) }

        // The ceiling: the products of one layer over the tokens all workers hold at once.
        let ceilingRows = min(tokens, threads * Embedder.tokensPerPass)
        _ = embedder.embed(tokenized: Array(tokenized.prefix(40)))  // warm caches and pages
        // Rounds alternate the ceilings and the embedder, so that other builds on a
        // shared machine weigh on both alike; each round's ratio is reported.
        struct Round { var embed: Double; var embedCPU: Double; var openBLAS: Double; var parallel: MatrixRate.Rate }
        var results: [Round] = []
        for _ in 0..<rounds {
            let openBLAS = MatrixRate.sgemmGFLOPS(rows: ceilingRows, threads: threads, seconds: 1.5)
            let parallel = MatrixRate.parallelSGEMM(rows: Embedder.tokensPerPass, workers: threads, seconds: 1.5)
            t0 = clock.now
            let cpu0 = processCPUSeconds()
            let vectors = embedder.embed(tokenized: tokenized)
            let embedTime = seconds(clock.now - t0)
            results.append(Round(embed: embedTime, embedCPU: processCPUSeconds() - cpu0, openBLAS: openBLAS, parallel: parallel))
            precondition(vectors.count == documents.count)
        }

        // Queries as users type them: a few words, one text per call.
        let samples = [
            "web server", "compress files", "play chess", "parse JSON in C", "antivirus scanner",
            "e-book manager", "container runtime", "edit images", "python testing framework",
            "send email from the command line",
        ]
        var latencies: [Double] = []
        for i in 0..<queries {
            let q = samples[i % samples.count]
            let s = clock.now
            _ = embedder.embed([q])
            latencies.append(seconds(clock.now - s) * 1000)
        }
        latencies.sort()
        func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(p / 100 * Double(latencies.count - 1) + 0.5))] }

        let loadAfter = loadAverage()
        print(
            "embedder: \(documents.count) texts, \(tokens) tokens (mean \(String(format: "%.1f", Double(tokens) / Double(max(1, documents.count))))), \(threads) workers"
        )
        print("  model load            \(String(format: "%.3f", loadTime)) s")
        print("  tokenize              \(String(format: "%.0f", Double(documents.count) / tokenizeTime)) texts/s")
        for (i, r) in results.enumerated() {
            let effective = flops / r.embed / 1e9
            let ceiling = max(r.openBLAS, r.parallel.gflops)
            print(
                "  round \(i + 1): embed \(f(Double(documents.count) / r.embed, 1)) texts/s, \(f(Double(tokens) / r.embed, 0)) tokens/s, effective \(f(effective, 1)) GFLOP/s; sgemm \(f(r.openBLAS, 1)) GFLOP/s (OpenBLAS, \(threads) threads, \(ceilingRows) rows), \(f(r.parallel.gflops, 1)) GFLOP/s (\(threads) × 1 thread, \(Embedder.tokensPerPass) rows); end to end \(f(100 * effective / ceiling, 0)) % of the higher"
            )
            print(
                "           per CPU-second: embed \(f(flops / r.embedCPU / 1e9, 1)), sgemm \(f(r.parallel.gflopsPerCPUSecond, 1)) GFLOP; \(f(100 * flops / r.embedCPU / 1e9 / r.parallel.gflopsPerCPUSecond, 0)) %"
            )
        }
        let best = results.min { $0.embed < $1.embed }!
        let ratios = results.map { flops / $0.embed / 1e9 / max($0.openBLAS, $0.parallel.gflops) }.sorted()
        let cpuRatios = results.map { flops / $0.embedCPU / 1e9 / $0.parallel.gflopsPerCPUSecond }.sorted()
        print(
            "  best round            \(f(Double(documents.count) / best.embed, 1)) texts/s, \(f(flops / best.embed / 1e9, 1)) GFLOP/s effective (\(f(flops / 1e9, 0)) GFLOP of matrix products per run)"
        )
        print(
            "  end to end / sgemm    median \(f(100 * ratios[ratios.count / 2], 0)) % of wall-clock rates, \(f(100 * cpuRatios[cpuRatios.count / 2], 0)) % per CPU-second, over \(results.count) rounds"
        )
        print(
            "  query latency         p50 \(String(format: "%.2f", pct(50))) ms, p90 \(String(format: "%.2f", pct(90))) ms, p99 \(String(format: "%.2f", pct(99))) ms over \(latencies.count)"
        )
        print("  machine load average  \(loadBefore) before, \(loadAfter) after (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    }

    func corpusLines() throws -> [String] {
        if let corpus {
            return try String(contentsOfFile: corpus, encoding: .utf8).split(separator: "\n").map(String.init)
        }
        let (output, status) = try runToEnd("/usr/bin/env", ["python3", "../shared/datasets/debian_packages.py", "--limit", String(texts)])
        guard status == 0 else { throw ValidationError("debian_packages.py failed; pass --corpus FILE") }
        return output.split(separator: "\n").map(String.init)
    }

    func f(_ x: Double, _ places: Int) -> String { String(format: "%.\(places)f", x) }

    func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }
}
