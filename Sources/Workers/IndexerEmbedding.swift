import Embedder
import Foundation
import Items
import Logging
import ShardStore
import Synchronization

/// The indexer's side of semantic search: each written item's semantic text
/// (see `SemanticText`) is embedded before its batch is committed, and the
/// vectors are stored in the same transaction as the items.
///
/// Which acknowledgements wait: only those of batches that hold items with
/// semantic text. A batch without any (no attribute declared semantic, no
/// app entity) is written exactly as before, without even loading the model;
/// a batch with some waits for its embeddings (tens of milliseconds per text
/// on two cores), because the answer to a search that follows an
/// acknowledgement should find the item by meaning as well as by words, and
/// an item and its vector then never disagree, even after a crash. Writing
/// the vectors later, in a second transaction, would acknowledge sooner but
/// leave a window in which a fresh item has no vector and a replaced item an
/// old one.
///
/// The model is loaded by the first batch that needs it. Without a model
/// (no `--model`, no `LIMELIGHT_MODEL`), items are stored without vectors,
/// which semantic ranking then leaves out; that is logged once per process.
final class IndexerEmbedding: Sendable {
    let modelDirectory: String?
    let logger: Logger
    /// The model once loaded, and whether its absence was logged. Held while
    /// loading, so that two shards' first batches load it once.
    private let state = Mutex<(loaded: Embedder?, warned: Bool)>((nil, false))

    init(modelDirectory: String?, logger: Logger) {
        self.modelDirectory = modelDirectory
        self.logger = logger
    }

    /// The vectors of a batch's items that have semantic text, by unique
    /// identifier; empty when none has, or when there is no model. Runs on
    /// the shard's own thread, before the write.
    func vectors(for items: [JSONValue], in store: ShardStore) throws -> [String: [Float]] {
        let texts = try store.semanticTexts(items)
        guard !texts.isEmpty else { return [:] }
        guard let embedder = try embedder() else { return [:] }
        let started = ContinuousClock.now
        let vectors = embedder.embed(texts.map(\.text))
        logger.debug("embedded items", metadata: ["embed.items": "\(texts.count)", "embed.duration": "\(started.duration(to: .now))"])
        var out: [String: [Float]] = [:]
        for (t, v) in zip(texts, vectors) { out[t.uniqueIdentifier] = v }
        return out
    }

    private func embedder() throws -> Embedder? {
        try state.withLock { state throws -> Embedder? in
            if let loaded = state.loaded { return loaded }
            guard let modelDirectory else {
                if !state.warned {
                    state.warned = true
                    logger.warning(
                        "items have semantic text but this indexer has no model (--model or \(Embedder.environmentVariable)); they are stored without vectors"
                    )
                }
                return nil
            }
            let e = try Embedder(modelDirectory: modelDirectory)
            logger.info("loaded the embedder", metadata: ["model.path": "\(modelDirectory)", "embed.threads": "\(e.workers)"])
            state.loaded = e
            return e
        }
    }
}
