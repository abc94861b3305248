import Foundation
import Testing

@testable import LimelightCLI

/// The publish command's line reader: a line over the limit comes back as
/// its length alone, and the lines around it as text, whatever the chunks.
@Suite struct LineReaderTests {
    func lines(_ text: String, limit: Int, chunkBytes: Int) async throws -> [LineReader.Line] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lines-\(UUID().uuidString).jsonl").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var out: [LineReader.Line] = []
        for try await line in LineReader(path: path, limit: limit, chunkBytes: chunkBytes) { out.append(line) }
        return out
    }

    @Test(arguments: [1, 3, 7, 64, 1 << 20])
    func aLongLineIsCountedAndSkipped(chunkBytes: Int) async throws {
        let long = String(repeating: "x", count: 50)
        let text = "first\n\(long)\nsecond\n\n\(long)y\nlast"
        let read = try await lines(text, limit: 10, chunkBytes: chunkBytes)
        #expect(read == [.text("first"), .tooLong(bytes: 50), .text("second"), .text(""), .tooLong(bytes: 51), .text("last")])
        #expect(read.map(\.fileBytes).reduce(0, +) == text.utf8.count + 1)
    }

    @Test(arguments: [1, 4, 1 << 20])
    func aLongLastLineWithoutNewlineIsCounted(chunkBytes: Int) async throws {
        let read = try await lines("ok\n" + String(repeating: "z", count: 30), limit: 10, chunkBytes: chunkBytes)
        #expect(read == [.text("ok"), .tooLong(bytes: 30)])
    }

    @Test func aLineOfExactlyTheLimitIsText() async throws {
        let read = try await lines("1234567890\n12345678901\n", limit: 10, chunkBytes: 4)
        #expect(read == [.text("1234567890"), .tooLong(bytes: 11)])
    }
}
