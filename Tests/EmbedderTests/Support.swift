import Embedder
import Foundation

/// One line of `../shared/datasets/minilm-reference.jsonl.gz`: what
/// sentence-transformers gives for a text (see `minilm-reference.md` beside it).
struct Reference: Sendable {
    var kind: String
    var id: String
    var text: String
    var inputIDs: [Int]
    var embedding: [Float]
}

struct FixtureMissing: Error, CustomStringConvertible {
    var description: String
}

enum Fixtures {
    /// The repository's root: this file is Tests/EmbedderTests/Support.swift.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `shared/` is the repository clone's sibling, locally and in CI.
    static let referencePath = repository.deletingLastPathComponent()
        .appendingPathComponent("shared/datasets/minilm-reference.jsonl.gz").path

    /// All 330 reference lines. Missing data is a failure, never a skip.
    static let references: Result<[Reference], FixtureMissing> = Result {
        guard FileManager.default.fileExists(atPath: referencePath) else {
            throw FixtureMissing(description: "reference embeddings not found at \(referencePath)")
        }
        let text = try run(["gzip", "-dc", referencePath])
        return try text.split(separator: "\n").map { line in
            guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let kind = o["kind"] as? String, let id = o["id"] as? String, let text = o["text"] as? String,
                let ids = o["input_ids"] as? [Int], let e = o["embedding"] as? [Double]
            else { throw FixtureMissing(description: "malformed reference line: \(line.prefix(80))") }
            return Reference(kind: kind, id: id, text: text, inputIDs: ids, embedding: e.map(Float.init))
        }
    }.mapError { ($0 as? FixtureMissing) ?? FixtureMissing(description: "\($0)") }

    /// `$LIMELIGHT_MODEL`, else the folder `scripts/install-model` prints (installing
    /// the model package if this machine lacks it), as `scripts/test` does.
    static let modelDirectory: Result<String, FixtureMissing> = Result {
        if let env = ProcessInfo.processInfo.environment[Embedder.environmentVariable], !env.isEmpty { return env }
        let out = try run([repository.appendingPathComponent("scripts/install-model").path])
        let folder = out.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !folder.isEmpty else { throw FixtureMissing(description: "scripts/install-model printed no folder") }
        return folder
    }.mapError { ($0 as? FixtureMissing) ?? FixtureMissing(description: "\($0)") }

    /// The one embedder the tests share (loading it takes a moment).
    static let embedder: Result<Embedder, FixtureMissing> = modelDirectory.flatMap { dir in
        Result { try Embedder(modelDirectory: dir) }.mapError { FixtureMissing(description: "cannot load the model in \(dir): \($0)") }
    }

    static func run(_ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw FixtureMissing(description: "\(arguments.joined(separator: " ")) exited with \(p.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

func cosine(_ a: [Float], _ b: [Float]) -> Double {
    var dot = 0.0, na = 0.0, nb = 0.0
    for i in a.indices {
        dot += Double(a[i]) * Double(b[i])
        na += Double(a[i]) * Double(a[i])
        nb += Double(b[i]) * Double(b[i])
    }
    return dot / (na.squareRoot() * nb.squareRoot())
}
