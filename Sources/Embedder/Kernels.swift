/// The network's elementwise steps over raw rows: layer normalisation, GELU and
/// softmax. They run between the matrix products on every token of every layer,
/// so they work eight lanes at a time with `SIMD8<Float>` (Accelerate's vDSP is
/// not on Linux) and polynomial `exp` and `erf`: calling libm's scalar `erff` on
/// each of the 1,536 intermediate values per token per layer cost about as much
/// as a fifth of the matrix products.
enum Kernels {
    typealias V = SIMD8<Float>

    @inline(__always) static func load(_ p: UnsafePointer<Float>, _ i: Int) -> V {
        UnsafeRawPointer(p + i).loadUnaligned(as: V.self)
    }
    @inline(__always) static func store(_ v: V, _ p: UnsafeMutablePointer<Float>, _ i: Int) {
        UnsafeMutableRawPointer(p + i).storeBytes(of: v, as: V.self)
    }

    /// `x ← LayerNorm(x + bias)` over each of `rows` rows of `width` (a multiple
    /// of 8). `x` already holds residual + product (the sgemm added onto it), so
    /// the dense layer's bias and the normalisation take one pass over memory.
    /// `bias` is nil for the embeddings.
    static func addLayerNorm(
        rows: Int, width: Int, x: UnsafeMutablePointer<Float>,
        bias: UnsafePointer<Float>?,
        gamma: UnsafePointer<Float>, beta: UnsafePointer<Float>, epsilon: Float
    ) {
        precondition(width % 8 == 0)
        let inverseWidth = 1 / Float(width)
        for r in 0..<rows {
            let row = x + r * width
            var sum = V.zero
            var i = 0
            while i < width {
                var v = load(row, i)
                if let bias { v += load(bias, i) }
                store(v, row, i)
                sum += v
                i += 8
            }
            let mean = sum.sum() * inverseWidth
            // Variance from deviations (two passes), not E[x²] − mean²: the rows can
            // carry large means, which the one-pass formula would cancel away.
            var squares = V.zero
            i = 0
            while i < width {
                let d = load(row, i) - mean
                squares += d * d
                i += 8
            }
            let scale = 1 / (squares.sum() * inverseWidth + epsilon).squareRoot()
            i = 0
            while i < width {
                let v = (load(row, i) - mean) * scale * load(gamma, i) + load(beta, i)
                store(v, row, i)
                i += 8
            }
        }
    }

    /// `x ← GELU(x)` on `count` values (a multiple of 8), in BERT's exact (erf)
    /// form `x · ½ · (1 + erf(x / √2))`, not the tanh approximation.
    static func gelu(count: Int, x: UnsafeMutablePointer<Float>) {
        precondition(count % 8 == 0)
        let half = V(repeating: 0.5), one = V(repeating: 1), invSqrt2 = V(repeating: 0.70710678118654752)
        var i = 0
        while i < count {
            let v = load(x, i)
            store(v * half * (one + erf(v * invSqrt2)), x, i)
            i += 8
        }
    }

    /// Copies `bias` into each of `rows` rows of `width`, so that an sgemm with
    /// beta = 1 adds the product onto it: OpenBLAS then skips its own pass that
    /// zeroes C for beta = 0, and no separate pass adds the bias afterwards.
    static func fillRows(rows: Int, width: Int, x: UnsafeMutablePointer<Float>, with bias: UnsafePointer<Float>) {
        for r in 0..<rows { (x + r * width).update(from: bias, count: width) }
    }

    /// Each of `rows` rows of `width` (any width; `stride` apart) becomes its
    /// softmax. The scale 1/√d is already in the scores (sgemm's alpha).
    static func softmaxRows(rows: Int, width: Int, stride: Int, x: UnsafeMutablePointer<Float>) {
        let vectorEnd = width & ~7
        for r in 0..<rows {
            let row = x + r * stride
            var m = -Float.infinity
            var vm = V(repeating: -Float.infinity)
            var i = 0
            while i < vectorEnd {
                let v = load(row, i)
                vm.replace(with: v, where: v .> vm)
                i += 8
            }
            m = vm.max()
            while i < width { m = Swift.max(m, row[i]); i += 1 }
            let vmax = V(repeating: m)
            var vsum = V.zero
            i = 0
            while i < vectorEnd {
                let e = exp(load(row, i) - vmax)
                store(e, row, i)
                vsum += e
                i += 8
            }
            var sum = vsum.sum()
            if i < width {
                // The tail, through the same polynomial so every weight is alike.
                var tail = V(repeating: -Float.infinity)
                for j in i..<width { tail[j - i] = row[j] - m }
                let e = exp(tail)
                for j in i..<width { row[j] = e[j - i]; sum += e[j - i] }
            }
            let inverse = V(repeating: 1 / sum)
            i = 0
            while i < vectorEnd { store(load(row, i) * inverse, row, i); i += 8 }
            let s = 1 / sum
            while i < width { row[i] *= s; i += 1 }
        }
    }

    /// `x` limited to [lo, hi] by lane masks. The standard library's `clamped` and
    /// `pointwiseMin`/`pointwiseMax` are generic functions the compiler does not
    /// inline here, at 7% of all samples in a profile.
    @inline(__always) static func clamp(_ x: V, _ lo: Float, _ hi: Float) -> V {
        var r = x
        r.replace(with: lo, where: x .< lo)
        r.replace(with: hi, where: x .> hi)
        return r
    }

    /// eˣ to about 1 ulp: x = n·ln2 + r with |r| ≤ ln2/2, Cephes' degree-6
    /// polynomial for eʳ, and 2ⁿ assembled in the exponent bits. Inputs below
    /// −87 give ~1e−38 rather than 0, which no softmax weight can tell apart.
    ///
    /// n is rounded by adding 1.5·2²³ (the float's spacing there is 1) and read
    /// from the low mantissa bits: Swift's float-to-integer SIMD conversion checks
    /// each lane one by one and takes more time than the softmax around it.
    @inline(__always) static func exp(_ x0: V) -> V {
        let x = clamp(x0, -87.3, 88.3)
        let magic = V(repeating: 12582912)  // 1.5 · 2²³
        let shifted = x * 1.44269504088896341 + magic
        let n = shifted - magic
        var r = x - n * 0.693359375
        r = r - n * -2.12194440e-4
        var p = V(repeating: 1.9875691500e-4)
        p = p * r + 1.3981999507e-3
        p = p * r + 8.3334519073e-3
        p = p * r + 4.1665795894e-2
        p = p * r + 1.6666665459e-1
        p = p * r + 5.0000001201e-1
        let y = p * (r * r) + r + 1
        let integer = unsafeBitCast(shifted, to: SIMD8<Int32>.self) &- 0x4B40_0000
        return y * unsafeBitCast((integer &+ 127) &<< 23, to: V.self)
    }

    /// erf(x) as a rational function x·P(x²)/Q(x²) on [−4, 4] (beyond which erf is
    /// ±1 in float): the approximation Eigen and XLA use for float32, within a few
    /// ulp of libm and with no `exp` inside.
    @inline(__always) static func erf(_ x0: V) -> V {
        let x = clamp(x0, -4, 4)
        let x2 = x * x
        var p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08
        p = x2 * p + -2.10102402082508e-06
        p = x2 * p + -5.69250639462346e-05
        p = x2 * p + -7.34990630326855e-04
        p = x2 * p + -2.95459980854025e-03
        p = x2 * p + -1.60960333262415e-02
        p = x * p
        var q = x2 * -1.45660718464996e-05 + -2.13374055278905e-04
        q = x2 * q + -1.68282697438203e-03
        q = x2 * q + -7.37332916720468e-03
        q = x2 * q + -1.42647390514189e-02
        return p / q
    }
}
