import CVectorKernels

/// Dot products of 8-bit codes, the first pass of a shard's exact vector
/// search (see `VectorIndex` in ShardStore): a quarter of the memory that
/// float32 rows take, which is what a scan over every row is bound by.
///
/// A module of its own so that it is optimised even in debug builds (as the
/// embedder is): unoptimised, this loop runs some thirty times slower.
package enum Int8Dot {
    /// `out[r] = Σⱼ codes[r·d + j] · query[j]` for every row `r`.
    package static func dots(
        _ codes: UnsafeBufferPointer<Int8>, dimension d: Int,
        _ query: UnsafeBufferPointer<Int8>, into out: UnsafeMutableBufferPointer<Int32>
    ) {
        precondition(query.count == d && codes.count == out.count * d)
        guard let c = codes.baseAddress, let q = query.baseAddress, let o = out.baseAddress else { return }
        // In C, for its AVX2 version chosen at run time (see int8_dots.c).
        limelight_int8_dots(c, d, q, o, out.count)
    }

    /// `vector` as codes `round(v / scale)` in −127…127, with `scale` = max |v| / 127,
    /// and the length of what the codes leave out, ‖v − scale · codes‖.
    package static func quantize(_ vector: UnsafeBufferPointer<Float>, into codes: UnsafeMutableBufferPointer<Int8>) -> (scale: Float, error: Float) {
        var maxAbs: Float = 0
        for x in vector { maxAbs = max(maxAbs, abs(x)) }
        let scale: Float = maxAbs > 0 ? maxAbs / 127 : 1
        var error: Float = 0
        for (i, x) in vector.enumerated() {
            let code = max(-127, min(127, (x / scale).rounded()))
            codes[i] = Int8(code)
            let e = x - code * scale
            error += e * e
        }
        return (scale, error.squareRoot())
    }
}
