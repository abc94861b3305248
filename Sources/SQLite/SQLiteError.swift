import CSQLite

/// A failure reported by SQLite, with the statement that caused it.
///
/// A struct with a nested ``Code`` rather than an enum, so that callers can
/// match the handful of codes they care about (`.busy`, `.constraint`,
/// `.interrupt`) without the module promising an exhaustive list: SQLite adds
/// extended codes over time.
package struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// One of SQLite's result codes, primary or extended.
    ///
    /// ``SQLiteError/code`` is always a primary code, so `error.code == .constraint`
    /// matches every kind of constraint failure; ``SQLiteError/extendedCode``
    /// tells them apart (`.constraintUnique`).
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: Int32
        init(_ raw: Int32) { self.raw = raw }

        /// The primary code of an extended one (`.constraintUnique` → `.constraint`).
        package var primary: Code { Code(raw & 0xff) }

        /// SQLite's own English wording of the code.
        package var description: String { String(cString: sqlite3_errstr(raw)) }

        package static let error = Code(SQLITE_ERROR)
        package static let `internal` = Code(SQLITE_INTERNAL)
        package static let permission = Code(SQLITE_PERM)
        package static let abort = Code(SQLITE_ABORT)
        package static let busy = Code(SQLITE_BUSY)
        package static let locked = Code(SQLITE_LOCKED)
        package static let noMemory = Code(SQLITE_NOMEM)
        package static let readOnly = Code(SQLITE_READONLY)
        package static let interrupt = Code(SQLITE_INTERRUPT)
        package static let ioError = Code(SQLITE_IOERR)
        package static let corrupt = Code(SQLITE_CORRUPT)
        package static let full = Code(SQLITE_FULL)
        package static let cantOpen = Code(SQLITE_CANTOPEN)
        package static let schema = Code(SQLITE_SCHEMA)
        package static let tooBig = Code(SQLITE_TOOBIG)
        package static let constraint = Code(SQLITE_CONSTRAINT)
        package static let mismatch = Code(SQLITE_MISMATCH)
        package static let misuse = Code(SQLITE_MISUSE)
        package static let range = Code(SQLITE_RANGE)
        package static let notADatabase = Code(SQLITE_NOTADB)

        package static let constraintUnique = Code(SQLITE_CONSTRAINT | (8 << 8))
        package static let constraintPrimaryKey = Code(SQLITE_CONSTRAINT | (6 << 8))
        package static let constraintNotNull = Code(SQLITE_CONSTRAINT | (5 << 8))
        package static let constraintCheck = Code(SQLITE_CONSTRAINT | (1 << 8))
        package static let busySnapshot = Code(SQLITE_BUSY | (2 << 8))
        package static let readOnlyDatabaseMoved = Code(SQLITE_READONLY | (4 << 8))
    }

    /// The primary result code.
    package var code: Code
    /// The extended result code; equal to ``code`` when SQLite gave no detail.
    package var extendedCode: Code
    /// SQLite's message for this failure (`no such table: items`).
    package var message: String
    /// The SQL being prepared or run, when there was one.
    package var sql: String?

    package init(_ code: Code, message: String? = nil, sql: String? = nil) {
        self.code = code.primary
        self.extendedCode = code
        self.message = message ?? code.description
        self.sql = sql
    }

    package var description: String {
        var s = "SQLite error \(extendedCode.raw) (\(code)): \(message)"
        if let sql { s += " — in: \(sql.count > 300 ? String(sql.prefix(300)) + "…" : sql)" }
        return s
    }

    /// Reads the connection's last error; used right after a call failed.
    init(connection: OpaquePointer?, result: Int32, sql: String?) {
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? result
        // The connection's error may be stale when the failing call did not set it
        // (e.g. step after a busy handler); trust `result` for the primary code.
        let code = (extended & 0xff) == (result & 0xff) ? extended : result
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        self.init(Code(code), message: message, sql: sql)
    }
}
