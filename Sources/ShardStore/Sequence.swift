import SQLite

/// Where a change stands against the shard file's sequence number.
package enum SequenceCheck: Sendable, Equatable {
    /// The next change: apply it.
    case next
    /// Applied before (a catch-up resent it): skip it.
    case applied
    /// Changes are missing before it: applying it would put them out of order.
    case gap(have: Int)
    /// It comes from a coordinator older than one this file has heard from
    /// (its epoch is below the file's): refuse it, whatever its number.
    case staleEpoch(have: Int)
}

/// The fence against a coordinator that no longer leads: each shard file
/// keeps the highest coordinator epoch it has seen, written in the
/// transaction of the change that brought it, and refuses changes of a
/// lower one. A change without an epoch (a coordinator without a control
/// plane) passes, and leaves the file's epoch as it is.
package enum EpochFence {
    package enum Verdict: Sendable, Equatable {
        /// Apply it; when `record` is set, store it as the file's epoch in
        /// the change's own transaction.
        case accept(record: Int?)
        case refuse(have: Int)
    }

    package static func judge(stored: Int, incoming: Int?) -> Verdict {
        guard let incoming else { return .accept(record: nil) }
        if incoming < stored { return .refuse(have: stored) }
        return .accept(record: incoming > stored ? incoming : nil)
    }
}

extension ShardStore {
    /// The sequence number of the last change applied to this file (0: none yet).
    ///
    /// Kept in `meta` and written in the transaction of the change itself, so
    /// after a crash it names exactly the changes the file holds.
    package func sequence() throws -> Int {
        try metaInt("sequence", "cannot read the shard's sequence number")
    }

    /// The highest coordinator epoch this file has taken a change from (0: none).
    package func coordinatorEpoch() throws -> Int {
        try metaInt("coordinator.epoch", "cannot read the shard's coordinator epoch")
    }

    private func metaInt(_ key: String, _ what: String) throws -> Int {
        do {
            // `key` is one of this file's constants, never a caller's text.
            return Int(try db.prepare("SELECT value FROM meta WHERE key = '\(key)'").scalar()?.string ?? "0") ?? 0
        } catch {
            throw StoreError.wrap(error, what)
        }
    }

    /// Whether a change numbered `sequence` of coordinator epoch `epoch` comes next.
    package func check(sequence: Int, epoch: Int? = nil) throws -> SequenceCheck {
        if case .refuse(let have) = EpochFence.judge(stored: try coordinatorEpoch(), incoming: epoch) { return .staleEpoch(have: have) }
        let have = try self.sequence()
        if sequence <= have { return .applied }
        if sequence == have + 1 { return .next }
        return .gap(have: have)
    }

    /// Runs `change` and records `sequence` (when given), and `epoch` when it
    /// is above the file's, in one transaction: either all are in the file or none is.
    /// A change whose epoch is below the file's is refused (``StoreError``
    /// `staleEpoch`) inside that transaction, so no check-then-write race lets it in.
    package func applying<T>(sequence: Int?, epoch: Int? = nil, _ change: () throws -> T) throws -> T {
        guard sequence != nil || epoch != nil else { return try change() }
        try requireWritable("record a sequence number")
        do {
            return try db.transaction(.immediate) {
                let verdict = EpochFence.judge(stored: try coordinatorEpoch(), incoming: epoch)
                if case .refuse(let have) = verdict {
                    throw StoreError(
                        .staleEpoch, "a change of coordinator epoch \(epoch ?? 0) is refused: this shard has taken changes of epoch \(have)")
                }
                let result = try change()
                if let sequence {
                    try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('sequence', ?)").run([.text(String(sequence))])
                }
                if case .accept(let record?) = verdict {
                    try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('coordinator.epoch', ?)").run([.text(String(record))])
                }
                return result
            }
        } catch let e as StoreError where e.code == .staleEpoch {
            throw e
        } catch {
            throw StoreError.wrap(error, "cannot record sequence number \(sequence.map(String.init) ?? "-")")
        }
    }
}
