import Foundation
import Testing

@testable import Embedder

/// The polynomial `exp` and `erf` against libm, over the ranges the network feeds them.
@Suite struct KernelTests {
    @Test func erfIsWithinTwoMillionthsOfLibm() {
        var worst: Float = 0
        var x: Float = -6
        while x < 6 {
            var v = SIMD8<Float>()
            for i in 0..<8 { v[i] = x + Float(i) * 0.0003 }
            let e = Kernels.erf(v)
            for i in 0..<8 { worst = max(worst, abs(e[i] - Foundation.erf(v[i]))) }
            x += 0.0024
        }
        #expect(worst < 2e-6, "largest |erf error| \(worst)")
    }

    @Test func expIsWithinAFewUlpOfLibm() {
        var worst: Float = 0
        var x: Float = -80
        while x < 10 {
            var v = SIMD8<Float>()
            for i in 0..<8 { v[i] = x + Float(i) * 0.0011 }
            let e = Kernels.exp(v)
            for i in 0..<8 { worst = max(worst, abs(e[i] - Foundation.exp(v[i])) / Foundation.exp(v[i])) }
            x += 0.0088
        }
        #expect(worst < 1e-6, "largest relative exp error \(worst)")
    }
}
