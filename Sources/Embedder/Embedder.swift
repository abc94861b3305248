import Foundation
import Synchronization

/// Sentence embeddings from all-MiniLM-L6-v2, computed natively: the same 384
/// numbers sentence-transformers gives (cosine ≥ 0.9999), with no Python, no
/// network access and no model download at run time.
///
/// The model's files come from a folder (`scripts/install-model` prints one):
/// `config.json`, `vocab.txt`, `model.safetensors`. An `Embedder` is immutable
/// once loaded, so one instance serves any number of concurrent callers.
package final class Embedder: Sendable {
    /// The environment variable naming the model folder when `--model` is not given.
    package static let environmentVariable = "LIMELIGHT_MODEL"
    /// sentence-transformers' `max_seq_length` for this model: longer texts are
    /// truncated to 256 tokens, `[CLS]` and `[SEP]` included.
    package static let maxSequenceLength = 256
    /// Tokens computed together in one packed forward pass. Enough rows that the
    /// matrix products run near OpenBLAS's peak on one core, few enough that each
    /// worker's feed-forward intermediate (tokens × 1,536 floats) stays about 12 MB
    /// and that a thousand texts split into enough passes to keep the workers even.
    package static let tokensPerPass = 2048

    package let tokenizer: WordPieceTokenizer
    let model: BertModel
    /// Threads computing packed passes side by side.
    package let workers: Int

    /// The length of every vector.
    package var dimension: Int { model.config.hidden }

    /// Loads the model in `modelDirectory`.
    ///
    /// - Parameter threads: passes computed side by side, one per thread; by
    ///   default the cores this process may use.
    ///
    /// Cores are used by running whole passes in parallel, each with OpenBLAS on a
    /// single thread (set process-wide here), rather than by OpenBLAS's own threads:
    /// those spin in `sched_yield` while one thread runs attention and the
    /// elementwise steps, which a profile showed taking a third of all CPU samples
    /// on a loaded two-core machine, whereas parallel passes share nothing.
    package init(modelDirectory: String, threads: Int? = nil) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: modelDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw EmbedderError(.missingFile, "no such model folder (scripts/install-model prints where the model is)", path: modelDirectory)
        }
        let folder = URL(fileURLWithPath: modelDirectory)
        let config = try BertConfig(path: folder.appendingPathComponent("config.json").path)
        tokenizer = try WordPieceTokenizer(
            vocabularyFile: folder.appendingPathComponent("vocab.txt").path,
            maxLength: min(Self.maxSequenceLength, config.maxPositions))
        let weights = try SafeTensors(path: folder.appendingPathComponent("model.safetensors").path)
        model = try BertModel(weights: weights, config: config)
        workers = max(1, threads ?? ProcessInfo.processInfo.activeProcessorCount)
        BLAS.threads = 1
    }

    /// The folder named by `explicit` (`--model DIR`), else by `$LIMELIGHT_MODEL`.
    /// Nothing is searched for or downloaded: with neither, a clear error says how
    /// to get the model.
    package static func modelDirectory(
        explicit: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let env = environment[environmentVariable], !env.isEmpty { return env }
        throw EmbedderError(.noModel, "no model: pass --model DIR or set \(environmentVariable) to the folder that scripts/install-model prints")
    }

    /// The token ids the model reads for `text` (`[CLS]` … `[SEP]`, truncated).
    package func tokenize(_ text: String) -> [Int] {
        tokenizer.tokenize(text)
    }

    /// One unit-length vector of `dimension` floats per text, in order.
    ///
    /// Texts are computed in packed batches of about `tokensPerPass` tokens; each
    /// text's vector is independent of the others in its batch. The call is
    /// synchronous and keeps up to `workers` threads busy until it returns (about
    /// 10 ms for a short query, tens of seconds for a thousand documents on two
    /// cores), so async callers should not make it on a thread that must stay
    /// responsive.
    package func embed(_ texts: [String]) -> [[Float]] {
        embed(tokenized: texts.map(tokenize))
    }

    /// `embed` for texts already tokenised with `tokenize`.
    ///
    /// Any other ids are a programming error, checked before any arithmetic: an id
    /// outside the vocabulary or a sequence longer than the position table would
    /// read past the weights, and an empty one has no mean.
    package func embed(tokenized: [[Int]]) -> [[Float]] {
        let vocabulary = model.config.vocabulary, positions = model.config.maxPositions
        for (i, ids) in tokenized.enumerated() {
            precondition(
                !ids.isEmpty && ids.count <= positions,
                "sequence \(i) has \(ids.count) tokens; 1 to \(positions) are allowed (use tokenize)")
            precondition(ids.allSatisfy { $0 >= 0 && $0 < vocabulary }, "sequence \(i) has a token id outside 0..<\(vocabulary)")
        }
        // Consecutive texts up to `tokensPerPass` tokens (at least one text) per pass.
        var ranges: [Range<Int>] = []
        var start = 0
        while start < tokenized.count {
            var end = start, tokens = 0
            while end < tokenized.count, end == start || tokens + tokenized[end].count <= Self.tokensPerPass {
                tokens += tokenized[end].count
                end += 1
            }
            ranges.append(start..<end)
            start = end
        }
        let passes = ranges
        if passes.count <= 1 || workers == 1 {
            return passes.flatMap { model.embed(Array(tokenized[$0])) }
        }
        // Each pass writes only its own slot; workers take passes in turn.
        let results = Slots<[[Float]]>(count: passes.count)
        DispatchQueue.concurrentPerform(iterations: min(workers, passes.count)) { _ in
            while let p = results.claim() {
                results.store(model.embed(Array(tokenized[passes[p]])), at: p)
            }
        }
        return results.values.flatMap { $0 }
    }

    /// The floating-point operations of the matrix products for a text of
    /// `tokens` tokens, for reporting an effective GFLOP/s.
    package func matrixFLOPs(tokens: Int) -> Double {
        model.matrixFLOPs(tokens: tokens)
    }
}

/// Results of work items run on several threads, and which item is next:
/// shared by the workers of one call under a mutex, taken to claim an item
/// and to store its result.
final class Slots<Value: Sendable>: Sendable {
    private let state: Mutex<(next: Int, slots: [Value?])>

    init(count: Int) { state = Mutex((0, Array(repeating: nil, count: count))) }

    /// The next unclaimed item's index, or nil when all are taken.
    func claim() -> Int? {
        state.withLock {
            guard $0.next < $0.slots.count else { return nil }
            $0.next += 1
            return $0.next - 1
        }
    }

    func store(_ value: Value, at index: Int) {
        state.withLock { $0.slots[index] = value }
    }

    /// Every item's result, in item order (all must have been stored).
    var values: [Value] { state.withLock { $0.slots.map { $0! } } }
}
