import Foundation
import QueryPlan
import Testing

@testable import ShardStore

/// ``FlatBuilder`` and ``BuildSpace``: an array grown in a file through a
/// small buffer reads back as the same array grown on the heap, across
/// every buffer boundary, and leaves no file behind.
@Suite struct FlatBuilderTests {
    /// Appends one at a time, in runs larger and smaller than the buffer,
    /// and changes the last element after each (as the posting readers merge
    /// an item's occurrences), in a deterministic random order.
    static func build(_ builder: inout FlatBuilder<UInt32>, seed: UInt64) throws -> [UInt32] {
        var rng = SplitMix64(state: seed)
        var reference: [UInt32] = []
        for _ in 0..<400 {
            switch rng.next() % 3 {
            case 0:
                let v = UInt32(truncatingIfNeeded: rng.next())
                builder.append(v)
                reference.append(v)
            case 1:
                let run = (0..<Int(rng.next() % 40)).map { _ in UInt32(truncatingIfNeeded: rng.next()) }
                builder.append(contentsOf: run)
                reference += run
            default:
                guard !reference.isEmpty else { continue }
                #expect(builder.last == reference.last)
                let bit = UInt32(1) << (rng.next() % 32)
                builder.updateLast { $0 |= bit }
                reference[reference.count - 1] |= bit
            }
            #expect(builder.count == reference.count)
        }
        return reference
    }

    @Test(arguments: [8, 12, 64, 1 << 20])
    func aFileGrownThroughAnyBufferReadsBackAsTheHeapArray(bufferBytes: Int) throws {
        let dir = TempDir()
        var inFile = try FlatBuilder<UInt32>(directory: dir.url.path, bufferBytes: bufferBytes)
        var onHeap = try FlatBuilder<UInt32>(directory: nil)
        let reference = try Self.build(&inFile, seed: UInt64(bufferBytes))
        #expect(try Self.build(&onHeap, seed: UInt64(bufferBytes)) == reference)
        let a = try inFile.finish(), b = try onHeap.finish()
        #expect(Array(a) == reference && Array(b) == reference)
        #expect(!a.isOnHeap && b.isOnHeap)
        // Unlinked when created: nothing is left in the folder, finished or not.
        var unfinished = try FlatBuilder<UInt64>(directory: dir.url.path, bufferBytes: bufferBytes)
        unfinished.append(contentsOf: [1, 2, 3] as [UInt64])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
    }

    @Test func aFilledArrayIsWrittenInAnyOrderAndReadBack() throws {
        let dir = TempDir()
        for space in [BuildSpace(directory: dir.url.path), .heap] {
            let n = 100_000
            let flat = try space.filled(UInt64.self, count: n) { out in
                // Every slot once, scattered; a zero left is a slot never written.
                for i in 0..<n { out[(i &* 7919) % n] = UInt64(i) + 1 }
            }
            #expect(flat.count == n && !flat.contains(0) && Set(flat).count == n)
            #expect(flat.isOnHeap == (space.directory == nil))
            #expect(try space.flat([] as [UInt32]).isEmpty)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
    }
}
