import Testing

@testable import Coordinator

/// The stats' latency series: whatever the number of queries, the last
/// ``CoordinatorCore/latencySamples`` are what a snapshot reads, and the
/// series never holds twice that.
struct LatencySeriesTests {
    @Test func theLastSamplesAreKept() {
        var series: [Double] = []
        let n = CoordinatorCore.latencySamples
        for i in 0..<(5 * n + 123) {
            CoordinatorCore.record(&series, Double(i))
            guard i % 997 == 0 || i == 5 * n + 122 || series.count == 2 * n - 1 else { continue }
            #expect(series.count < 2 * n)
            #expect(Array(series.suffix(n)) == (max(0, i + 1 - n)...i).map(Double.init), "after \(i + 1)")
        }
    }
}
