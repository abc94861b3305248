import Foundation

/// The latest ``Vocabulary`` of each shard file a process reads, shared by
/// its read-only connections.
///
/// Why: a query worker opens several connections to a shard (one per query
/// running on it at once), and under writes each read the vocabulary again
/// at most every ``ShardStore/vocabularyMaxAge`` and built its typo tables
/// (``Vocabulary/prepareLookups()``) on its own: profiled during a bulk
/// publish, those were half of a search's time. Shared, the shard's
/// vocabulary is read once per change and age for all of them.
///
/// What a connection may take: the vocabulary of exactly its data (the word
/// index's ``PostingIndex/key(_:)`` is the one it was read with), or, as
/// each connection's own could be, one read less than
/// ``ShardStore/vocabularyMaxAge`` ago (see ``Vocabulary``: exact and prefix
/// matching never go through it). Only read-only connections share: a
/// writer's transaction may hold words not yet committed.
///
/// `@unchecked Sendable`: the entries are read and written only under
/// `lock`, and a ``Vocabulary`` is shared only once its lookup tables are
/// built, after which it is only read.
final class SharedVocabularies: @unchecked Sendable {
    static let shared = SharedVocabularies()
    /// Whether connections share by default; `LIMELIGHT_SHARED_VOCABULARY=off`
    /// turns it off, for a benchmark to time both ways with one build.
    static let enabled = ProcessInfo.processInfo.environment["LIMELIGHT_SHARED_VOCABULARY"] != "off"

    struct Held {
        let vocabulary: Vocabulary
        let built: ContinuousClock.Instant
        /// Whether it was read from the data asked about.
        let isCurrent: Bool
    }

    private struct Entry {
        let vocabulary: Vocabulary
        let key: [UInt8]
        let built: ContinuousClock.Instant
    }
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]

    /// `path`'s vocabulary if it was read from the word index `key`
    /// identifies, or less than `maxAge` ago.
    func find(path: String, key: [UInt8], maxAge: Duration) -> Held? {
        lock.withLock {
            guard let e = entries[path] else { return nil }
            if e.key == key { return Held(vocabulary: e.vocabulary, built: e.built, isCurrent: true) }
            guard e.built.duration(to: .now) < maxAge else { return nil }
            return Held(vocabulary: e.vocabulary, built: e.built, isCurrent: false)
        }
    }

    /// Shares `vocabulary` (its lookup tables built) as `path`'s, unless a
    /// later one is held.
    func publish(path: String, key: [UInt8], vocabulary: Vocabulary, built: ContinuousClock.Instant) {
        lock.withLock {
            if let e = entries[path], e.built > built { return }
            entries[path] = Entry(vocabulary: vocabulary, key: key, built: built)
        }
    }

    /// Forgets `path`'s vocabulary (a test's).
    func forget(path: String) {
        lock.withLock { entries[path] = nil }
    }
}

extension ShardStore {
    /// The vocabulary for ``vocabulary()``: the process's shared one when it
    /// may be taken (see ``SharedVocabularies``), else read on this
    /// connection (and shared, its lookup tables built, when read-only).
    func readVocabulary() throws -> SharedVocabularies.Held {
        guard searchCache.sharesVocabulary, mode == .readOnly, path != ":memory:", !path.isEmpty else {
            return .init(vocabulary: try Vocabulary(db: db), built: .now, isCurrent: true)
        }
        // One snapshot for the key and the terms (a savepoint inside the caller's transaction).
        return try db.transaction(.deferred) {
            let key = try PostingIndex.key(db)
            if let held = SharedVocabularies.shared.find(path: path, key: key, maxAge: Self.vocabularyMaxAge) { return held }
            let built = ContinuousClock.now
            let vocabulary = try Vocabulary(db: db)
            vocabulary.prepareLookups()
            SharedVocabularies.shared.publish(path: path, key: key, vocabulary: vocabulary, built: built)
            return .init(vocabulary: vocabulary, built: built, isCurrent: true)
        }
    }
}
