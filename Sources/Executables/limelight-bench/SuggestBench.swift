import Foundation
import Items
import LimelightClient
import QueryPlan
import SearchParameters
import ShardStore

/// Typed text for suggestions: the first 2–5 letters of the benchmark's
/// words, and the first 3–5 after an earlier word (several words: counts are
/// run), each text on its own; then those second words typed a letter at a
/// time.
func suggestTexts(_ w: QueryWords, count: Int) -> [(String, [String])] {
    var rng = SplitMix64(state: 29)
    let one = (0..<count).map { i -> String in String(w.words[i].prefix(2 + Int(rng.next() % 4))) }
    let two = (0..<count).map { i -> String in
        let a = w.words[Int(rng.next() % UInt64(w.words.count))]
        return a + " " + String(w.words[i].prefix(3 + Int(rng.next() % 3)))
    }
    // The same second words typed a letter at a time, as a search box sends
    // them: each keystroke's completions are a subset of the one before, so
    // the posting lists read for one serve the next.
    let typing = two.flatMap { text -> [String] in
        let (a, b) = (text.prefix { $0 != " " }, text.drop { $0 != " " }.dropFirst())
        return (1...b.count).map { a + " " + b.prefix($0) }
    }
    return [("suggest", one), ("suggest 2 words", two), ("suggest typing", typing)]
}

/// The items an app's key is scoped to in the keyed kinds: four of the
/// corpus's domains, 15,807 items (of 63,666), as one app's share of a shard.
let keyedDomains = ["org.debian.libs", "org.debian.python", "org.debian.utils", "org.debian.haskell"]

/// Times suggestions on one shard: p50/p99 milliseconds, as the store bench
/// prints its kinds. The "keyed" kinds are the same texts under an app's
/// scope (every request made with an API key has one), counted over its items.
/// Each kind opens its own connection, so that none finds the posting lists
/// another kind read (same texts) already in memory.
///
/// Twice: first with lists read term by term (as a query worker does until
/// its background read of the shard's ``PostingIndex`` ends, and after each
/// change of the data until the next), then with that index read.
/// `only` picks kinds by name (all of them when "suggest" is asked for).
func benchSuggest(
    _ open: () throws -> ShardStore, _ words: QueryWords, count: Int,
    only: (String) -> Bool = { _ in true }, indexOnly: Bool = false
) throws {
    ShardStore.buildsSuggestionIndex = false
    if !indexOnly {
        print("suggestions with posting lists read term by term (no suggestion index yet):")
        try benchSuggestKinds(open, words, count: count, only: only)
    }
    let t = Date()
    let c = threadCPUSeconds()
    let read = try open().buildSuggestionIndex()
    print(
        "suggestion index: \(read.terms) terms, \(read.ids) ids read in \(fmt(Date().timeIntervalSince(t) * 1000, 1)) ms (\(fmt((threadCPUSeconds() - c) * 1000, 1)) ms CPU); suggestions with it:"
    )
    try benchSuggestKinds(open, words, count: count, only: only)
    ShardStore.buildsSuggestionIndex = true
}

func benchSuggestKinds(_ open: () throws -> ShardStore, _ words: QueryWords, count: Int, only: (String) -> Bool) throws {
    let kinds = suggestTexts(words, count: count)
    for (kind, texts, keyed) in kinds.map({ ($0.0, $0.1, false) }) + kinds.map({ ($0.0 + " keyed", $0.1, true) }) where only(kind) {
        let reader = try open()
        let plans = try texts.map { text -> SearchPlan in
            var plan = try SearchRequest(params: .object(["query": .string(text)])).plan
            if keyed { plan.filter = .domain(keyedDomains) }
            return plan
        }
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
        print(
            "\(kind.padding(toLength: 21, withPad: " ", startingAt: 0))\(fmt(percentile(lat, 50)).leftPad(9))  \(fmt(percentile(lat, 99)).leftPad(9))  \(fmt(Double(found) / Double(plans.count), 1).leftPad(10))  \(fmt(percentile(cpu, 50)).leftPad(10))  \(fmt(percentile(cpu, 99)).leftPad(10))   (suggestions)"
        )
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
        print(
            "\(String(n).leftPad(6))  \(String(Int(rate)).leftPad(15))   \(kind.padding(toLength: 14, withPad: " ", startingAt: 0))  \(fmt(percentile(lat, 50)).leftPad(7))  \(fmt(percentile(lat, 99)).leftPad(7))   (suggest)"
        )
    }
}
