import ArgumentParser
import Embedder
import Foundation

/// `limelight embed`: a text's all-MiniLM-L6-v2 vector, computed in this process
/// (no server), as one JSON array on standard output and nothing else, so that
/// scripts can read it and compare it with other tools' vectors.
struct EmbedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "embed",
        abstract: "Print a text's sentence embedding (384 numbers, one JSON array); needs no server.",
        discussion: "The model folder comes from --model or $LIMELIGHT_MODEL; scripts/install-model prints it.")

    @Argument(help: "The text to embed.") var text: String
    @Option(help: "Folder with all-MiniLM-L6-v2's model.safetensors, vocab.txt and config.json.") var model: String?

    func run() throws {
        let embedder: Embedder
        do {
            embedder = try Embedder(modelDirectory: Embedder.modelDirectory(explicit: model))
        } catch {
            printError("limelight: \(error)")
            throw ExitCode(ExitCodes.badInput)
        }
        let vector = embedder.embed([text])[0]
        // Float's description is the shortest text that reads back as the same
        // float, and always a valid JSON number (never NaN: the vector has unit length).
        printLine("[" + vector.map { "\($0)" }.joined(separator: ",") + "]")
    }
}
