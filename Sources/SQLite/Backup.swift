import CSQLite
import Foundation

extension Database {
    /// Replaces this database's whole content with the database file at
    /// `path`, with SQLite's online backup API, in one write transaction of
    /// this connection: other connections on the file (readers in other
    /// processes included) see the old content or the new, never a mix, and
    /// their next read after it sees the new one.
    ///
    /// In WAL mode SQLite requires the two files to have the same page size
    /// (files this project creates all do); otherwise it fails with
    /// `.readOnly` and nothing changes.
    package func replaceContent(withFileAt path: String) throws(SQLiteError) {
        let source = try Database(
            path: path, mode: .readOnly,
            configuration: {
                var c = Configuration()
                c.walJournal = false
                return c
            }())
        guard let backup = sqlite3_backup_init(handle, "main", source.handle, "main") else {
            throw SQLiteError(connection: handle, result: sqlite3_errcode(handle), sql: nil)
        }
        var rc: Int32
        repeat {
            rc = sqlite3_backup_step(backup, -1)
            if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { usleep(10_000) }
        } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
        let finish = sqlite3_backup_finish(backup)
        if rc != SQLITE_DONE { throw SQLiteError(connection: handle, result: rc, sql: nil) }
        if finish != SQLITE_OK { throw SQLiteError(connection: handle, result: finish, sql: nil) }
        withExtendedLifetime(source) {}
    }

    /// Writes a consistent copy of this database to a new file at `path`
    /// (`VACUUM INTO`): what the last committed transaction left, compacted.
    package func snapshot(to path: String) throws(SQLiteError) {
        let statement = try makeStatement("VACUUM INTO ?")
        try statement.run([.text(path)])
    }
}
