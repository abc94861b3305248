import Dispatch
import Embedder
import Foundation
import Logging
import Synchronization

/// Embeds semantic searches' query texts, once per search, in the coordinator:
/// every shard then ranks by the same vector, so an item scores the same
/// whichever shard holds it, and no shard spends ~10 ms embedding the same
/// text again.
///
/// The model is loaded by the first semantic search rather than at start-up,
/// so a coordinator that never serves one never holds its 90 MB; the folder
/// is checked at start-up (see `CoordinatorCommand`). Embedding runs on a
/// GCD thread, never on the coordinator's actor: the actor keeps answering
/// other requests for the ~10 ms it takes.
final class QueryEmbedder: Sendable {
    let modelDirectory: String?
    let logger: Logger
    private let state = LockedEmbedder()

    init(modelDirectory: String?, logger: Logger) {
        self.modelDirectory = modelDirectory
        self.logger = logger
    }

    var isAvailable: Bool { modelDirectory != nil }

    /// The query's unit-length vector.
    func embed(_ text: String) async throws -> [Float] {
        guard let modelDirectory else {
            throw EmbedderError(.noModel, "no model: pass --model DIR or set \(Embedder.environmentVariable)")
        }
        let state = self.state, logger = self.logger
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    let embedder = try state.embedder(modelDirectory: modelDirectory, logger: logger)
                    continuation.resume(returning: embedder.embed([text])[0])
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

/// The loaded model, behind a lock so that concurrent first searches load it once.
final class LockedEmbedder: Sendable {
    private let loaded = Mutex<Embedder?>(nil)

    func embedder(modelDirectory: String, logger: Logger) throws -> Embedder {
        try loaded.withLock { loaded throws -> Embedder in
            if let loaded { return loaded }
            let started = ContinuousClock.now
            // One thread: a query is one short pass, and the coordinator's other work needs the other core.
            let e = try Embedder(modelDirectory: modelDirectory, threads: 1)
            logger.info(
                "loaded the query embedder",
                metadata: [
                    "model.path": "\(modelDirectory)",
                    "model.load": "\(started.duration(to: .now))",
                ])
            loaded = e
            return e
        }
    }
}
