import Foundation
import Items
import LimelightClient
import QueryPlan
import SearchParameters
import ShardStore

/// Typed text for suggestions: the first 2–5 letters of the benchmark's
/// words, as someone typing them would send at each keystroke, and the same
/// with an earlier word before (several words: counts are run).
func suggestTexts(_ w: QueryWords, count: Int) -> [(String, [String])] {
    var rng = SplitMix64(state: 29)
    let one = (0..<count).map { i -> String in String(w.words[i].prefix(2 + Int(rng.next() % 4))) }
    let two = (0..<count).map { i -> String in
        let a = w.words[Int(rng.next() % UInt64(w.words.count))]
        return a + " " + String(w.words[i].prefix(3 + Int(rng.next() % 3)))
    }
    return [("suggest", one), ("suggest 2 words", two)]
}

/// Times suggestions on one shard: p50/p99 milliseconds, as the store bench prints its kinds.
func benchSuggest(_ reader: ShardStore, _ words: QueryWords, count: Int) throws {
    for (kind, texts) in suggestTexts(words, count: count) {
        let plans = try texts.map { try SearchRequest(params: .object(["query": .string($0)])).plan }
        for p in plans.prefix(20) { _ = try reader.suggest(p, limit: 10) }
        var lat: [Double] = [], cpu: [Double] = []
        var found = 0
        for p in plans {
            let t = Date()
            let c = threadCPUSeconds()
            found += try reader.suggest(p, limit: 10).count
            cpu.append((threadCPUSeconds() - c) * 1000)
            lat.append(Date().timeIntervalSince(t) * 1000)
        }
        print("\(kind.padding(toLength: 14, withPad: " ", startingAt: 0))\(fmt(percentile(lat, 50)).leftPad(9))  \(fmt(percentile(lat, 99)).leftPad(9))  \(fmt(Double(found) / Double(plans.count), 1).leftPad(10))  \(fmt(percentile(cpu, 50)).leftPad(10))  \(fmt(percentile(cpu, 99)).leftPad(10))   (suggestions)")
    }
}

/// Times suggestions through the coordinator.
func benchSuggest(_ client: LimelightClient, _ words: QueryWords, count: Int, shards n: Int, rate: Double) async throws {
    for (kind, texts) in suggestTexts(words, count: count) {
        for t in texts.prefix(20) { _ = try await client.suggest(t, limit: 10) }
        var lat: [Double] = []
        for t in texts {
            let start = Date()
            _ = try await client.suggest(t, limit: 10)
            lat.append(Date().timeIntervalSince(start) * 1000)
        }
        print("\(String(n).leftPad(6))  \(String(Int(rate)).leftPad(15))   \(kind.padding(toLength: 14, withPad: " ", startingAt: 0))  \(fmt(percentile(lat, 50)).leftPad(7))  \(fmt(percentile(lat, 99)).leftPad(7))   (suggest)")
    }
}
