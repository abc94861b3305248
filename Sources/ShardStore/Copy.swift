import Foundation
import SQLite

/// Copying a whole shard to another replica (see `Body.CopyChunk`): a
/// snapshot file on the replica that has the changes, its bytes shipped, and
/// the copy put in place of the other replica's content.
extension ShardStore {
    /// Writes a consistent copy of the shard to a new file at `path` and
    /// returns the sequence number it holds. Taken between two changes (the
    /// caller runs it on the shard's thread), so the number names exactly
    /// its content. The copy is in rollback-journal mode, a single file that
    /// can be read anywhere without its `-wal` and `-shm`.
    package func snapshot(to path: String) throws -> Int {
        do {
            try? FileManager.default.removeItem(atPath: path)
            let sequence = try self.sequence()
            try db.snapshot(to: path)
            var c = Database.Configuration()
            c.walJournal = false
            let copy = try Database(path: path, mode: .readWrite(create: false), configuration: c)
            try copy.execute("PRAGMA journal_mode=DELETE")
            return sequence
        } catch {
            throw StoreError.wrap(error, "cannot take a snapshot of the shard into \(path)")
        }
    }

    /// Replaces the shard's whole content (items, declarations, sequence
    /// number) with the shard file at `path`, in one transaction, and returns
    /// the sequence number it now holds. Query workers reading the file see
    /// the old content or the new one, never a mix. Refused (nothing changed)
    /// when `path` is not a shard file of this build's format.
    package func replaceContent(withCopyAt path: String) throws -> Int {
        try requireWritable("replace the shard's content")
        do {
            let copy = try ShardStore(path: path, mode: .readOnly, logger: logger)
            _ = try copy.sequence()
            let format = try copy.db.prepare("SELECT value FROM meta WHERE key = 'format'").scalar()?.string
            guard format == String(Layout.format) else {
                throw StoreError(
                    .incompatibleFormat, "the copy at \(path) has store format \(format ?? "none"); this build writes format \(Layout.format)")
            }
            // A new `items.epoch` goes in with the content: its item ids
            // mean nothing against a watermark read before (see
            // ``SubstringCache``), so readers must read its vocabulary anew.
            do {
                var c = Database.Configuration()
                c.walJournal = false
                let writable = try Database(path: path, mode: .readWrite(create: false), configuration: c)
                try writable.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('items.epoch', ?)").run([.text(UUID().uuidString)])
            }
            try db.replaceContent(withFileAt: path)
            // This connection's own change leaves `data_version` alone: reload by hand.
            dataVersion = -1
            try reloadIfChanged()
            return try sequence()
        } catch {
            throw StoreError.wrap(error, "cannot replace the shard's content with the copy at \(path)")
        }
    }
}
