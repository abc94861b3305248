import Embedder
import Foundation
import Testing

/// A model that cannot be loaded is an error naming the file and the reason.
@Suite struct ErrorTests {
    @Test func noModelNamedIsAClearError() throws {
        #expect(throws: EmbedderError.self) { try Embedder.modelDirectory(explicit: nil, environment: [:]) }
        do {
            _ = try Embedder.modelDirectory(explicit: nil, environment: [:])
        } catch let e as EmbedderError {
            #expect(e.code == .noModel)
            #expect(e.message.contains("--model"))
            #expect(e.message.contains("LIMELIGHT_MODEL"))
        } catch {}
        #expect(try Embedder.modelDirectory(explicit: nil, environment: ["LIMELIGHT_MODEL": "/m"]) == "/m")
        #expect(try Embedder.modelDirectory(explicit: "/x", environment: ["LIMELIGHT_MODEL": "/m"]) == "/x")
    }

    func loadError(_ folder: String) -> EmbedderError? {
        do { _ = try Embedder(modelDirectory: folder); return nil } catch { return error as? EmbedderError }
    }

    @Test func missingAndCorruptFilesAreNamed() throws {
        let model = try Fixtures.modelDirectory.get()
        #expect(loadError("/nonexistent/model")?.code == .missingFile)

        let dir = NSTemporaryDirectory() + "embedder-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for f in ["config.json", "vocab.txt"] {
            try FileManager.default.copyItem(atPath: model + "/" + f, toPath: dir + "/" + f)
        }
        let missing = loadError(dir)
        #expect(missing?.code == .missingFile)
        #expect(missing?.path?.hasSuffix("model.safetensors") == true)

        // A header length running past the end of the file.
        try Data([0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0x7B, 0x7D]).write(to: URL(fileURLWithPath: dir + "/model.safetensors"))
        #expect(loadError(dir)?.code == .invalidSafetensors)

        // A valid file without the network's tensors.
        let header = Data(#"{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}"#.utf8)
        var file = Data()
        withUnsafeBytes(of: UInt64(header.count).littleEndian) { file.append(contentsOf: $0) }
        file.append(header)
        file.append(contentsOf: [0, 0, 0, 0])
        try file.write(to: URL(fileURLWithPath: dir + "/model.safetensors"))
        let bad = loadError(dir)
        #expect(bad?.code == .badTensor)
        #expect(bad?.message.contains("embeddings.word_embeddings.weight") == true)
    }
}
