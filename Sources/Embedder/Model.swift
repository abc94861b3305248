import Foundation

/// The sizes `config.json` gives; only BERT-style encoders with GELU are run.
struct BertConfig: Sendable {
    var hidden: Int
    var layers: Int
    var heads: Int
    var intermediate: Int
    var maxPositions: Int
    var vocabulary: Int
    var typeVocabulary: Int
    var epsilon: Float

    init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EmbedderError(.missingFile, "cannot read the model configuration", path: path)
        }
        guard let c = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw EmbedderError(.unsupportedConfig, "not a JSON object", path: path)
        }
        func int(_ key: String) throws -> Int {
            guard let v = c[key] as? Int, v > 0 else {
                throw EmbedderError(.unsupportedConfig, "\(key) is missing or not a positive integer", path: path)
            }
            return v
        }
        hidden = try int("hidden_size")
        layers = try int("num_hidden_layers")
        heads = try int("num_attention_heads")
        intermediate = try int("intermediate_size")
        maxPositions = try int("max_position_embeddings")
        vocabulary = try int("vocab_size")
        typeVocabulary = try int("type_vocab_size")
        epsilon = Float((c["layer_norm_eps"] as? Double) ?? 1e-12)
        let activation = c["hidden_act"] as? String ?? "gelu"
        guard activation == "gelu" else {
            throw EmbedderError(.unsupportedConfig, "hidden_act \(activation) is not supported (only gelu)", path: path)
        }
        if let p = c["position_embedding_type"] as? String, p != "absolute" {
            throw EmbedderError(.unsupportedConfig, "position_embedding_type \(p) is not supported (only absolute)", path: path)
        }
        guard hidden % heads == 0, hidden % 8 == 0, intermediate % 8 == 0 else {
            throw EmbedderError(
                .unsupportedConfig,
                "hidden_size \(hidden), \(heads) heads, intermediate_size \(intermediate): sizes must be multiples of 8 and of the head count",
                path: path)
        }
    }
}

/// One encoder layer's weights. Query, key and value are stacked into one
/// (3·hidden × hidden) matrix at load time so the three projections are a single
/// sgemm over all tokens: one product three times as wide runs closer to the
/// machine's peak than three narrow ones.
struct EncoderLayer: Sendable {
    var qkvWeight: [Float], qkvBias: [Float]
    var outputWeight: [Float], outputBias: [Float]
    var attentionNormWeight: [Float], attentionNormBias: [Float]
    var intermediateWeight: [Float], intermediateBias: [Float]
    var ffnOutputWeight: [Float], ffnOutputBias: [Float]
    var outputNormWeight: [Float], outputNormBias: [Float]
}

/// A BERT encoder (`BertModel` without the pooler) and the sentence-transformers
/// head: mean pooling over the tokens, then L2 normalisation.
///
/// Sequences of a batch are *packed*, not padded: their tokens are stacked into
/// one matrix for every token-wise step (embeddings, projections, feed-forward,
/// layer norms), and attention runs on each sequence's own rows. That is what the
/// padded batch with its attention mask computes for the real tokens (a masked key
/// gets weight exp(−∞) = 0 and pooling skips padded rows), without spending
/// arithmetic on the padding.
final class BertModel: Sendable {
    let config: BertConfig
    let wordEmbeddings: [Float], positionEmbeddings: [Float], typeEmbeddings: [Float]
    let embeddingNormWeight: [Float], embeddingNormBias: [Float]
    let layers: [EncoderLayer]

    init(weights: SafeTensors, config: BertConfig) throws {
        self.config = config
        let h = config.hidden, i = config.intermediate
        wordEmbeddings = try weights.floats("embeddings.word_embeddings.weight", shape: [config.vocabulary, h])
        positionEmbeddings = try weights.floats("embeddings.position_embeddings.weight", shape: [config.maxPositions, h])
        typeEmbeddings = try weights.floats("embeddings.token_type_embeddings.weight", shape: [config.typeVocabulary, h])
        embeddingNormWeight = try weights.floats("embeddings.LayerNorm.weight", shape: [h])
        embeddingNormBias = try weights.floats("embeddings.LayerNorm.bias", shape: [h])
        layers = try (0..<config.layers).map { l in
            let p = "encoder.layer.\(l)."
            func w(_ name: String, _ shape: [Int]) throws -> [Float] { try weights.floats(p + name, shape: shape) }
            return EncoderLayer(
                qkvWeight: try w("attention.self.query.weight", [h, h]) + w("attention.self.key.weight", [h, h])
                    + w("attention.self.value.weight", [h, h]),
                qkvBias: try w("attention.self.query.bias", [h]) + w("attention.self.key.bias", [h])
                    + w("attention.self.value.bias", [h]),
                outputWeight: try w("attention.output.dense.weight", [h, h]),
                outputBias: try w("attention.output.dense.bias", [h]),
                attentionNormWeight: try w("attention.output.LayerNorm.weight", [h]),
                attentionNormBias: try w("attention.output.LayerNorm.bias", [h]),
                intermediateWeight: try w("intermediate.dense.weight", [i, h]),
                intermediateBias: try w("intermediate.dense.bias", [i]),
                ffnOutputWeight: try w("output.dense.weight", [h, i]),
                ffnOutputBias: try w("output.dense.bias", [h]),
                outputNormWeight: try w("output.LayerNorm.weight", [h]),
                outputNormBias: try w("output.LayerNorm.bias", [h]))
        }
    }

    /// Floating-point operations of the matrix products for one sequence of `n`
    /// tokens: the projections and feed-forward (linear in n) and attention's two
    /// products per head (quadratic). What "effective GFLOP/s" counts.
    func matrixFLOPs(tokens n: Int) -> Double {
        let h = Double(config.hidden), i = Double(config.intermediate), n = Double(n)
        let dense = 2 * n * h * (3 * h + h + 2 * i)
        let attention = 2 * 2 * n * n * h
        return Double(config.layers) * (dense + attention)
    }

    /// Pooled, unit-length embeddings of token sequences (each at most
    /// `maxPositions` long), computed as one packed batch.
    func embed(_ sequences: [[Int]]) -> [[Float]] {
        let h = config.hidden, inter = config.intermediate, heads = config.heads, d = h / heads
        let total = sequences.reduce(0) { $0 + $1.count }
        guard total > 0 else { return sequences.map { _ in [Float](repeating: 0, count: h) } }
        let longest = sequences.map(\.count).max()!
        var starts: [Int] = []
        var offset = 0
        for s in sequences { starts.append(offset); offset += s.count }

        var x = [Float](repeating: 0, count: total * h)  // the hidden states
        var qkv = [Float](repeating: 0, count: total * 3 * h)  // query | key | value per token
        var context = [Float](repeating: 0, count: total * h)  // attention's output
        var wide = [Float](repeating: 0, count: total * inter)  // the feed-forward's intermediate
        var scores = [Float](repeating: 0, count: longest * longest)
        let scale = 1 / Float(d).squareRoot()

        x.withUnsafeMutableBufferPointer { xb in
            let x = xb.baseAddress!
            // Embeddings: word + position + token type 0, then LayerNorm.
            wordEmbeddings.withUnsafeBufferPointer { words in
                positionEmbeddings.withUnsafeBufferPointer { positions in
                    typeEmbeddings.withUnsafeBufferPointer { types in
                        for (s, ids) in sequences.enumerated() {
                            for (p, id) in ids.enumerated() {
                                let row = x + (starts[s] + p) * h
                                let w = words.baseAddress! + id * h, q = positions.baseAddress! + p * h
                                let t = types.baseAddress!
                                for k in 0..<h { row[k] = w[k] + q[k] + t[k] }
                            }
                        }
                    }
                }
            }
            embeddingNormWeight.withUnsafeBufferPointer { g in
                embeddingNormBias.withUnsafeBufferPointer { b in
                    Kernels.addLayerNorm(
                        rows: total, width: h, x: x, bias: nil,
                        gamma: g.baseAddress!, beta: b.baseAddress!, epsilon: config.epsilon)
                }
            }
            qkv.withUnsafeMutableBufferPointer { qb in
                context.withUnsafeMutableBufferPointer { cb in
                    wide.withUnsafeMutableBufferPointer { wb in
                        scores.withUnsafeMutableBufferPointer { sb in
                            let qkv = qb.baseAddress!, context = cb.baseAddress!, wide = wb.baseAddress!, scores = sb.baseAddress!
                            for layer in layers {
                                layer.run(
                                    total: total, h: h, inter: inter, heads: heads, d: d, scale: scale, epsilon: config.epsilon,
                                    starts: starts, lengths: sequences.map(\.count),
                                    x: x, qkv: qkv, context: context, wide: wide, scores: scores)
                            }
                        }
                    }
                }
            }
        }
        // Mean pooling over each sequence's tokens, then unit length.
        return sequences.indices.map { s in
            var v = [Float](repeating: 0, count: h)
            let n = sequences[s].count
            x.withUnsafeBufferPointer { xb in
                for p in 0..<n {
                    let row = xb.baseAddress! + (starts[s] + p) * h
                    for k in 0..<h { v[k] += row[k] }
                }
            }
            var norm: Float = 0
            for k in 0..<h { v[k] /= Float(n); norm += v[k] * v[k] }
            // sentence-transformers divides by max(‖v‖, 1e-12).
            let inverse = 1 / max(norm.squareRoot(), 1e-12)
            for k in 0..<h { v[k] *= inverse }
            return v
        }
    }
}

extension EncoderLayer {
    /// One encoder layer over `total` packed tokens, in place on `x`.
    func run(
        total: Int, h: Int, inter: Int, heads: Int, d: Int, scale: Float, epsilon: Float,
        starts: [Int], lengths: [Int],
        x: UnsafeMutablePointer<Float>, qkv: UnsafeMutablePointer<Float>,
        context: UnsafeMutablePointer<Float>, wide: UnsafeMutablePointer<Float>,
        scores: UnsafeMutablePointer<Float>
    ) {
        let h3 = 3 * h
        // Query, key, value for every token at once, added onto their biases.
        qkvBias.withUnsafeBufferPointer { b in Kernels.fillRows(rows: total, width: h3, x: qkv, with: b.baseAddress!) }
        qkvWeight.withUnsafeBufferPointer { w in
            BLAS.gemm(m: total, n: h3, k: h, x, lda: h, w.baseAddress!, ldb: h, transposeB: true, qkv, ldc: h3, beta: 1)
        }
        // Attention, per sequence and head, straight on strided views of qkv.
        for (s, n) in lengths.enumerated() {
            let base = qkv + starts[s] * h3
            for head in 0..<heads {
                let q = base + head * d, k = base + h + head * d, v = base + 2 * h + head * d
                BLAS.gemm(m: n, n: n, k: d, q, lda: h3, k, ldb: h3, transposeB: true, scores, ldc: n, alpha: scale)
                Kernels.softmaxRows(rows: n, width: n, stride: n, x: scores)
                BLAS.gemm(
                    m: n, n: d, k: n, scores, lda: n, v, ldb: h3, transposeB: false,
                    context + starts[s] * h + head * d, ldc: h)
            }
        }
        // Attention output projection added straight onto the residual (beta = 1),
        // then bias and LayerNorm in one pass.
        outputWeight.withUnsafeBufferPointer { w in
            BLAS.gemm(m: total, n: h, k: h, context, lda: h, w.baseAddress!, ldb: h, transposeB: true, x, ldc: h, beta: 1)
        }
        outputBias.withUnsafeBufferPointer { b in
            attentionNormWeight.withUnsafeBufferPointer { g in
                attentionNormBias.withUnsafeBufferPointer { beta in
                    Kernels.addLayerNorm(
                        rows: total, width: h, x: x, bias: b.baseAddress!,
                        gamma: g.baseAddress!, beta: beta.baseAddress!, epsilon: epsilon)
                }
            }
        }
        // Feed-forward: expand onto the bias, GELU, contract onto the residual, LayerNorm.
        intermediateBias.withUnsafeBufferPointer { b in Kernels.fillRows(rows: total, width: inter, x: wide, with: b.baseAddress!) }
        intermediateWeight.withUnsafeBufferPointer { w in
            BLAS.gemm(m: total, n: inter, k: h, x, lda: h, w.baseAddress!, ldb: h, transposeB: true, wide, ldc: inter, beta: 1)
        }
        Kernels.gelu(count: total * inter, x: wide)
        ffnOutputWeight.withUnsafeBufferPointer { w in
            BLAS.gemm(m: total, n: h, k: inter, wide, lda: inter, w.baseAddress!, ldb: inter, transposeB: true, x, ldc: h, beta: 1)
        }
        ffnOutputBias.withUnsafeBufferPointer { b in
            outputNormWeight.withUnsafeBufferPointer { g in
                outputNormBias.withUnsafeBufferPointer { beta in
                    Kernels.addLayerNorm(
                        rows: total, width: h, x: x, bias: b.baseAddress!,
                        gamma: g.baseAddress!, beta: beta.baseAddress!, epsilon: epsilon)
                }
            }
        }
    }
}
