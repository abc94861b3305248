import ArgumentParser
import Foundation
import Items
import Logging
import SearchParameters
import ShardStore
import WireProtocol

/// The stages of a parameter search in one process, each timed apart, in
/// the order the cluster runs them: the client's request frame, the
/// coordinator's decode and `SearchRequest`, the store (hits as raw JSON, as
/// the coordinator's own query worker gives them), the response written, its
/// frame, and the client's decode.
///
/// Why: through a cluster, a two-word search's stages are each a few
/// percent of its p50 and move by as much from one run to the next, so a
/// change to one stage cannot be told apart there. Here each stage's p50
/// is steady to a few percent; together the stages are most of a search's
/// time through a cluster, the socket hops the rest.
struct StagesBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stages", abstract: "A search's stages in one process, each timed.")
    @OptionGroup var corpus: CorpusOptions
    @Option(help: "A shard file holding the corpus (written there first when it does not exist; without it, in a temporary folder).") var database:
        String?
    @Option(help: "Rounds over the queries.") var rounds = 3

    func run() async throws {
        let lines = try corpus.loadLines()
        let words = QueryWords(lines: lines, count: corpus.queries)
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let dir = NSTemporaryDirectory() + "limelight-stages-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = database ?? dir + "/shard.sqlite"
        if !FileManager.default.fileExists(atPath: path) {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let writer = try ShardStore(path: path, mode: .readWrite, logger: logger)
            let items = lines.compactMap { try? JSONValue.parse($0) }
            for start in stride(from: 0, to: items.count, by: 1000) { _ = try writer.write(Array(items[start..<min(items.count, start + 1000)])) }
        }
        let store = try ShardStore(path: path, mode: .readOnly, logger: logger)
        _ = try store.buildSuggestionIndex()
        let kinds = searchKinds(words, count: corpus.queries).filter { corpus.wants($0.0) }
        let stages = ["client encode", "decode", "request", "store", "merge", "response", "frame", "client decode"]
        print("stage p50 in us (\(rounds) rounds of \(corpus.queries) queries)")
        print("kind".padding(toLength: 16, withPad: " ", startingAt: 0) + stages.map { $0.leftPad(14) }.joined() + "sum".leftPad(10))
        for (kind, params) in kinds {
            var times = [[Double]](repeating: [], count: stages.count)
            var k = 0
            func lap(_ stage: Int, _ since: inout UInt64) {
                let now = DispatchTime.now().uptimeNanoseconds
                if k >= params.count { times[stage].append(Double(now - since) / 1000) }  // the first round warms
                since = now
            }
            while k < params.count * (rounds + 1) {
                var t = DispatchTime.now().uptimeNanoseconds
                let frame = Envelope(id: "c\(k)", body: .search(Body.Search(params: params[k % params.count]))).encoded()
                lap(0, &t)
                guard case .search(let search) = try Envelope.decode(frame).body else { throw ValidationError("not a search") }
                lap(1, &t)
                let request = try SearchRequest(params: search.params)
                var builder = SearchResponseBuilder(request: request)
                lap(2, &t)
                let answer = try store.search(request.plan, rawItems: true)
                lap(3, &t)
                builder.add(
                    Body.ShardSearchResult(
                        shard: 0,
                        hits: answer.hits.map {
                            Body.RankedHit(
                                id: $0.uniqueIdentifier, item: $0.item, rank: $0.rank, rawItem: $0.rawItem.map { RawJSON(trusted: $0[...]) })
                        },
                        nbHits: answer.nbHits, facets: answer.facets,
                        facetStats: answer.facetStats.mapValues { [$0.min, $0.max, $0.sum, Double($0.count)] },
                        exhaustiveFacetsCount: answer.exhaustiveFacetsCount))
                lap(4, &t)
                let response = RawJSON(trusted: ArraySlice(builder.responseBytes(processingTimeMS: 1)))
                lap(5, &t)
                let reply = Envelope(id: "c\(k)", body: .searchResult(.written(response, failedShards: []))).encoded()
                lap(6, &t)
                _ = try Envelope.decode(reply, maxBytes: .max)
                lap(7, &t)
                k += 1
            }
            let p50s = times.map { percentile($0, 50) }
            print(
                kind.padding(toLength: 16, withPad: " ", startingAt: 0) + p50s.map { fmt($0, 1).leftPad(14) }.joined()
                    + fmt(p50s.reduce(0, +), 1).leftPad(10))
        }
    }
}
