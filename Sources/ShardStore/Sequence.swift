import SQLite

/// Where a change stands against the shard file's sequence number.
package enum SequenceCheck: Sendable, Equatable {
    /// The next change: apply it.
    case next
    /// Applied before (a catch-up resent it): skip it.
    case applied
    /// Changes are missing before it: applying it would put them out of order.
    case gap(have: Int)
}

extension ShardStore {
    /// The sequence number of the last change applied to this file (0: none yet).
    ///
    /// Kept in `meta` and written in the transaction of the change itself, so
    /// after a crash it names exactly the changes the file holds.
    package func sequence() throws -> Int {
        do {
            return Int(try db.prepare("SELECT value FROM meta WHERE key = 'sequence'").scalar()?.string ?? "0") ?? 0
        } catch {
            throw StoreError.wrap(error, "cannot read the shard's sequence number")
        }
    }

    /// Whether a change numbered `sequence` comes next.
    package func check(sequence: Int) throws -> SequenceCheck {
        let have = try self.sequence()
        if sequence <= have { return .applied }
        if sequence == have + 1 { return .next }
        return .gap(have: have)
    }

    /// Runs `change` and records `sequence` (when given) in one transaction:
    /// either both are in the file or neither is.
    package func applying<T>(sequence: Int?, _ change: () throws -> T) throws -> T {
        guard let sequence else { return try change() }
        try requireWritable("record a sequence number")
        do {
            return try db.transaction(.immediate) {
                let result = try change()
                try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('sequence', ?)").run([.text(String(sequence))])
                return result
            }
        } catch {
            throw StoreError.wrap(error, "cannot record sequence number \(sequence)")
        }
    }
}
