import Foundation

/// Sentence embeddings from all-MiniLM-L6-v2, computed natively: the same 384
/// numbers sentence-transformers gives (cosine ≥ 0.9999), with no Python, no
/// network access and no model download at run time.
///
/// The model's files come from a folder (`scripts/install-model` prints one):
/// `config.json`, `vocab.txt`, `model.safetensors`. An `Embedder` is immutable
/// once loaded, so one instance serves any number of concurrent callers.
public final class Embedder: Sendable {
    /// The environment variable naming the model folder when `--model` is not given.
    public static let environmentVariable = "LIMELIGHT_MODEL"
    /// sentence-transformers' `max_seq_length` for this model: longer texts are
    /// truncated to 256 tokens, `[CLS]` and `[SEP]` included.
    public static let maxSequenceLength = 256
    /// Tokens computed together in one packed forward pass. Enough rows that the
    /// matrix products run near OpenBLAS's peak, few enough that the feed-forward's
    /// intermediate (tokens × 1,536 floats) stays about 25 MB.
    public static let tokensPerPass = 4096

    public let tokenizer: WordPieceTokenizer
    let model: BertModel

    /// The length of every vector.
    public var dimension: Int { model.config.hidden }

    /// Loads the model in `modelDirectory`.
    ///
    /// - Parameter threads: OpenBLAS worker threads (process-wide); by default the
    ///   cores this process may use, since the large products scale with them.
    public init(modelDirectory: String, threads: Int? = nil) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: modelDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw EmbedderError(.missingFile, "no such model folder (scripts/install-model prints where the model is)", path: modelDirectory)
        }
        let folder = URL(fileURLWithPath: modelDirectory)
        let config = try BertConfig(path: folder.appendingPathComponent("config.json").path)
        tokenizer = try WordPieceTokenizer(vocabularyFile: folder.appendingPathComponent("vocab.txt").path,
                                           maxLength: min(Self.maxSequenceLength, config.maxPositions))
        let weights = try SafeTensors(path: folder.appendingPathComponent("model.safetensors").path)
        model = try BertModel(weights: weights, config: config)
        BLAS.threads = max(1, threads ?? ProcessInfo.processInfo.activeProcessorCount)
    }

    /// The folder named by `explicit` (`--model DIR`), else by `$LIMELIGHT_MODEL`.
    /// Nothing is searched for or downloaded: with neither, a clear error says how
    /// to get the model.
    public static func modelDirectory(explicit: String?,
                                      environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let env = environment[environmentVariable], !env.isEmpty { return env }
        throw EmbedderError(.noModel, "no model: pass --model DIR or set \(environmentVariable) to the folder that scripts/install-model prints")
    }

    /// The token ids the model reads for `text` (`[CLS]` … `[SEP]`, truncated).
    public func tokenize(_ text: String) -> [Int] {
        tokenizer.tokenize(text)
    }

    /// One unit-length vector of `dimension` floats per text, in order.
    ///
    /// Texts are computed in packed batches of about `tokensPerPass` tokens; each
    /// text's vector is independent of the others in its batch.
    public func embed(_ texts: [String]) -> [[Float]] {
        embed(tokenized: texts.map(tokenize))
    }

    /// `embed` for texts already tokenised with `tokenize`.
    public func embed(tokenized: [[Int]]) -> [[Float]] {
        var result: [[Float]] = []
        result.reserveCapacity(tokenized.count)
        var start = 0
        while start < tokenized.count {
            var end = start, tokens = 0
            while end < tokenized.count, end == start || tokens + tokenized[end].count <= Self.tokensPerPass {
                tokens += tokenized[end].count
                end += 1
            }
            result.append(contentsOf: model.embed(Array(tokenized[start..<end])))
            start = end
        }
        return result
    }

    /// The floating-point operations of the matrix products for a text of
    /// `tokens` tokens, for reporting an effective GFLOP/s.
    public func matrixFLOPs(tokens: Int) -> Double {
        model.matrixFLOPs(tokens: tokens)
    }
}
