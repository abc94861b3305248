import Foundation
import Items
import Testing

/// `limelight embed` as a user runs it: the built binary, the real model files,
/// checked against sentence-transformers' vector for the same text.
@Suite struct EmbedCommandTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    struct Missing: Error, CustomStringConvertible { var description: String }

    /// `$LIMELIGHT_MODEL`, else the folder `scripts/install-model` prints (it
    /// installs the model package when missing). No model is a failure, not a skip.
    static func modelDirectory() throws -> String {
        if let env = ProcessInfo.processInfo.environment["LIMELIGHT_MODEL"], !env.isEmpty { return env }
        let folder = try output([repository.appendingPathComponent("scripts/install-model").path])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !folder.isEmpty else { throw Missing(description: "scripts/install-model printed no folder") }
        return folder
    }

    /// The reference line with `id` from `../shared/datasets/minilm-reference.jsonl.gz`.
    static func reference(_ id: String) throws -> (text: String, embedding: [Double]) {
        let path = repository.deletingLastPathComponent().appendingPathComponent("shared/datasets/minilm-reference.jsonl.gz").path
        guard FileManager.default.fileExists(atPath: path) else { throw Missing(description: "no reference embeddings at \(path)") }
        for line in try output(["gzip", "-dc", path]).split(separator: "\n") {
            let v = try JSONValue.parse(String(line))
            guard v["id"]?.stringValue == id else { continue }
            guard let text = v["text"]?.stringValue, let e = v["embedding"]?.arrayValue?.compactMap(\.doubleValue) else { break }
            return (text, e)
        }
        throw Missing(description: "no reference line \(id) in \(path)")
    }

    static func output(_ arguments: [String]) throws -> String {
        let r = try ChildProcess.run("/usr/bin/env", arguments)
        guard r.status == 0, !r.timedOut else {
            throw Missing(description: "\(arguments[0]) exited with \(r.status)\(r.timedOut ? " (timed out)" : "")")
        }
        return String(decoding: r.stdout, as: UTF8.self)
    }

    @Test func embedPrintsOneJSONArrayMatchingTheReference() throws {
        let model = try Self.modelDirectory()
        // Accents and an emoji, through argv and the tokenizer's Unicode paths.
        let ref = try Self.reference("accents_emoji")
        #expect(ref.text == "Crème brûlée 🍮 recipe")
        for run in [
            try CommandLineTests.limelight(["embed", "--model", model, ref.text]),
            try CommandLineTests.limelight(["embed", ref.text], environment: ["LIMELIGHT_MODEL": model]),
        ] {
            #expect(run.status == 0, "stderr: \(run.stderr)")
            // Nothing but the array on standard output.
            #expect(run.stdout.hasPrefix("[") && run.stdout.hasSuffix("]\n"))
            let vector = try JSONValue.parse(run.stdout).arrayValue?.compactMap(\.doubleValue) ?? []
            #expect(vector.count == 384)
            let dot = zip(vector, ref.embedding).reduce(0) { $0 + $1.0 * $1.1 }
            let norms = (vector.reduce(0) { $0 + $1 * $1 } * ref.embedding.reduce(0) { $0 + $1 * $1 }).squareRoot()
            #expect(dot / norms >= 0.9999, "cosine \(dot / norms)")
        }
    }

    @Test func embedWithoutAModelSaysHowToGetOne() throws {
        let r = try CommandLineTests.limelight(["embed", "web server"], environment: ["LIMELIGHT_MODEL": ""])
        #expect(r.status == 2)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("--model") && r.stderr.contains("LIMELIGHT_MODEL"))
        let missing = try CommandLineTests.limelight(["embed", "--model", "/nonexistent/model", "web server"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("/nonexistent/model"))
    }
}
