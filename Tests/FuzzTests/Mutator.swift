import Foundation

/// Byte-level mutations of seed inputs, replayable from a seed.
///
/// The budget is fixed (`LIMELIGHT_FUZZ_ITERATIONS`, default 10,000 inputs
/// per target, a few seconds in a debug build) so `scripts/test` always runs
/// the same inputs; a longer run sets the variable (and
/// `LIMELIGHT_FUZZ_SEED` for other inputs) and prints its figures.
struct Mutator {
    var state: UInt64
    /// Tokens worth splicing in: the syntax the parsers branch on.
    let dictionary: [[UInt8]]

    init(seed: UInt64, dictionary: [String]) {
        state = seed
        self.dictionary = dictionary.map { Array($0.utf8) }
    }

    static var iterations: Int { Int(ProcessInfo.processInfo.environment["LIMELIGHT_FUZZ_ITERATIONS"] ?? "") ?? 10_000 }
    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["LIMELIGHT_FUZZ_SEED"] ?? "") ?? 0x5EED_F022 }

    /// SplitMix64.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }

    /// One to four mutations of `seed`: flip, replace, insert, delete,
    /// duplicate or cut a span, splice a dictionary token, or random bytes.
    mutating func mutate(_ seed: [UInt8]) -> [UInt8] {
        var b = seed
        for _ in 0...below(4) {
            switch below(9) {
            case 0 where !b.isEmpty: b[below(b.count)] ^= UInt8(1 << below(8))
            case 1 where !b.isEmpty: b[below(b.count)] = UInt8(truncatingIfNeeded: next())
            case 2: b.insert(UInt8(truncatingIfNeeded: next()), at: below(b.count + 1))
            case 3 where !b.isEmpty: b.remove(at: below(b.count))
            case 4 where !b.isEmpty:
                let start = below(b.count), end = min(b.count, start + 1 + below(16))
                b.insert(contentsOf: b[start..<end], at: below(b.count + 1))
            case 5 where !b.isEmpty:
                let start = below(b.count)
                b.removeSubrange(start..<min(b.count, start + 1 + below(16)))
            case 6, 7: b.insert(contentsOf: dictionary[below(dictionary.count)], at: below(b.count + 1))
            case 8: b = (0..<below(64)).map { _ in UInt8(truncatingIfNeeded: next()) }
            default: break
            }
        }
        return b
    }
}

/// Runs `body` on `iterations` mutated inputs and reports the count, the
/// slowest input and the seed, so a long run's figures can be written down.
func fuzz(_ name: String, seeds: [[UInt8]], dictionary: [String], _ body: ([UInt8]) -> Void) {
    var m = Mutator(seed: Mutator.seed, dictionary: dictionary)
    let clock = ContinuousClock()
    let started = clock.now
    var slowest = Duration.zero
    var slowestInput: [UInt8] = []
    for i in 0..<Mutator.iterations {
        // Every tenth input is a seed as it is, so the seeds themselves are covered.
        let input = i % 10 == 0 ? seeds[i / 10 % seeds.count] : m.mutate(seeds[m.below(seeds.count)])
        let t = clock.now
        body(input)
        let took = t.duration(to: clock.now)
        if took > slowest { slowest = took; slowestInput = input }
    }
    let preview = String(decoding: slowestInput.prefix(60), as: UTF8.self).debugDescription
    print("fuzz \(name): \(Mutator.iterations) inputs (seed \(Mutator.seed)) in \(started.duration(to: clock.now)); slowest \(slowest): \(preview)")
}
