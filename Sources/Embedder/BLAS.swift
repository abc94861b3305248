import COpenBLAS
import Foundation

/// OpenBLAS's single-precision matrix product, the one operation the network
/// spends nearly all its arithmetic in. Pointers stay inside this module; the
/// callers are the network's forward pass and the rate measurement below.
enum BLAS {
    /// `C = alpha · A · op(B) + beta · C`, all row-major; `op(B)` is `Bᵀ` when
    /// `transposeB`, which is how PyTorch's `Linear` stores weights (out × in), so
    /// they are used as loaded, never copied into another layout.
    @inline(__always)
    static func gemm(
        m: Int, n: Int, k: Int,
        _ a: UnsafePointer<Float>, lda: Int,
        _ b: UnsafePointer<Float>, ldb: Int, transposeB: Bool,
        _ c: UnsafeMutablePointer<Float>, ldc: Int,
        alpha: Float = 1, beta: Float = 0
    ) {
        cblas_sgemm(
            CblasRowMajor, CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans,
            blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb),
            beta, c, blasint(ldc))
    }

    /// OpenBLAS's worker threads for large products. Process-wide in OpenBLAS.
    static var threads: Int {
        get { Int(openblas_get_num_threads()) }
        set { openblas_set_num_threads(Int32(newValue)) }
    }
}

/// What the hardware gives for the network's own matrix products: OpenBLAS's
/// sgemm rate on the shapes of one encoder layer (`rows` tokens by 384 → 1152,
/// 384 → 384, 384 → 1536, 1536 → 384), the ceiling the end-to-end rate is
/// judged against. Measured, not taken from a datasheet, so that it reflects the
/// cores and the load of the moment.
package enum MatrixRate {
    /// sgemm GFLOP/s over about `seconds` of repeated layer-shaped products, one
    /// product at a time with OpenBLAS on `threads` threads (the process-wide
    /// setting is restored after): OpenBLAS's own parallel rate.
    package static func sgemmGFLOPS(
        rows: Int, threads: Int, hidden: Int = 384, intermediate: Int = 1536,
        seconds: Double = 2
    ) -> Double {
        let previous = BLAS.threads
        BLAS.threads = threads
        defer { BLAS.threads = previous }
        let (flops, elapsed, _) = layerProducts(rows: rows, hidden: hidden, intermediate: intermediate, seconds: seconds)
        return flops / elapsed / 1e9
    }

    /// A rate per second of wall-clock time and per second of CPU time. On a
    /// machine shared with other work the first varies with the load; the second
    /// much less, so it gives a steadier ratio between two measurements.
    package struct Rate: Sendable {
        package var gflops: Double
        package var gflopsPerCPUSecond: Double
    }

    /// The same products run as the embedder runs them: `workers` threads side by
    /// side, each with its own `rows`-row matrices and OpenBLAS on one thread.
    package static func parallelSGEMM(
        rows: Int, workers: Int, hidden: Int = 384, intermediate: Int = 1536,
        seconds: Double = 2
    ) -> Rate {
        let previous = BLAS.threads
        BLAS.threads = 1
        defer { BLAS.threads = previous }
        let totals = Slots<(Double, Double, Double)>(count: workers)
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            totals.store(layerProducts(rows: rows, hidden: hidden, intermediate: intermediate, seconds: seconds), at: w)
        }
        let all = totals.values
        return Rate(
            gflops: all.reduce(0) { $0 + $1.0 / $1.1 } / 1e9,
            gflopsPerCPUSecond: all.reduce(0) { $0 + $1.0 } / all.reduce(0) { $0 + $1.2 } / 1e9)
    }

    /// Repeats one layer's four products until `seconds` have passed; returns the
    /// operations done, the time taken and the calling thread's CPU time.
    static func layerProducts(rows: Int, hidden: Int, intermediate: Int, seconds: Double) -> (Double, Double, Double) {
        let shapes = [(hidden, 3 * hidden), (hidden, hidden), (hidden, intermediate), (intermediate, hidden)]
        let widest = max(intermediate, 3 * hidden)
        var x = [Float](repeating: 0, count: rows * widest)
        var out = [Float](repeating: 0, count: rows * widest)
        var weights = shapes.map { (k, n) in [Float](repeating: 0, count: k * n) }
        // Values as the network sees them (not zeros, which some hardware speeds up).
        var rng: UInt64 = 0x9E3779B97F4A7C15
        func fill(_ a: inout [Float]) {
            for i in a.indices {
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                a[i] = Float(Int64(bitPattern: rng >> 11) % 2001 - 1000) / 10000
            }
        }
        fill(&x)
        for i in weights.indices { fill(&weights[i]) }
        let flopsPerRound = shapes.reduce(0.0) { $0 + 2 * Double(rows * $1.0 * $1.1) }
        var rounds = 0
        let clock = ContinuousClock()
        let start = clock.now
        let cpuStart = threadCPUSeconds()
        var elapsed = 0.0
        x.withUnsafeBufferPointer { xp in
            out.withUnsafeMutableBufferPointer { op in
                repeat {
                    for (i, (k, n)) in shapes.enumerated() {
                        weights[i].withUnsafeBufferPointer { wp in
                            BLAS.gemm(
                                m: rows, n: n, k: k, xp.baseAddress!, lda: k, wp.baseAddress!, ldb: k,
                                transposeB: true, op.baseAddress!, ldc: n)
                        }
                    }
                    rounds += 1
                    let d = clock.now - start
                    elapsed = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
                } while elapsed < seconds
            }
        }
        return (flopsPerRound * Double(rounds), elapsed, threadCPUSeconds() - cpuStart)
    }
}

/// CPU time of the calling thread, in seconds.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
