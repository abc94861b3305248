import CSQLite

/// A failure reported by SQLite, with the statement that caused it.
///
/// A struct with a nested ``Code`` rather than an enum, so that callers can
/// match the handful of codes they care about (`.busy`, `.constraint`,
/// `.interrupt`) without the module promising an exhaustive list: SQLite adds
/// extended codes over time.
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// One of SQLite's result codes, primary or extended.
    ///
    /// ``SQLiteError/code`` is always a primary code, so `error.code == .constraint`
    /// matches every kind of constraint failure; ``SQLiteError/extendedCode``
    /// tells them apart (`.constraintUnique`).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: Int32
        init(_ raw: Int32) { self.raw = raw }

        /// The primary code of an extended one (`.constraintUnique` → `.constraint`).
        public var primary: Code { Code(raw & 0xff) }

        /// SQLite's own English wording of the code.
        public var description: String { String(cString: sqlite3_errstr(raw)) }

        public static let error = Code(SQLITE_ERROR)
        public static let `internal` = Code(SQLITE_INTERNAL)
        public static let permission = Code(SQLITE_PERM)
        public static let abort = Code(SQLITE_ABORT)
        public static let busy = Code(SQLITE_BUSY)
        public static let locked = Code(SQLITE_LOCKED)
        public static let noMemory = Code(SQLITE_NOMEM)
        public static let readOnly = Code(SQLITE_READONLY)
        public static let interrupt = Code(SQLITE_INTERRUPT)
        public static let ioError = Code(SQLITE_IOERR)
        public static let corrupt = Code(SQLITE_CORRUPT)
        public static let full = Code(SQLITE_FULL)
        public static let cantOpen = Code(SQLITE_CANTOPEN)
        public static let schema = Code(SQLITE_SCHEMA)
        public static let tooBig = Code(SQLITE_TOOBIG)
        public static let constraint = Code(SQLITE_CONSTRAINT)
        public static let mismatch = Code(SQLITE_MISMATCH)
        public static let misuse = Code(SQLITE_MISUSE)
        public static let range = Code(SQLITE_RANGE)
        public static let notADatabase = Code(SQLITE_NOTADB)

        public static let constraintUnique = Code(SQLITE_CONSTRAINT | (8 << 8))
        public static let constraintPrimaryKey = Code(SQLITE_CONSTRAINT | (6 << 8))
        public static let constraintNotNull = Code(SQLITE_CONSTRAINT | (5 << 8))
        public static let constraintCheck = Code(SQLITE_CONSTRAINT | (1 << 8))
        public static let busySnapshot = Code(SQLITE_BUSY | (2 << 8))
        public static let readOnlyDatabaseMoved = Code(SQLITE_READONLY | (4 << 8))
    }

    /// The primary result code.
    public var code: Code
    /// The extended result code; equal to ``code`` when SQLite gave no detail.
    public var extendedCode: Code
    /// SQLite's message for this failure (`no such table: items`).
    public var message: String
    /// The SQL being prepared or run, when there was one.
    public var sql: String?

    public init(_ code: Code, message: String? = nil, sql: String? = nil) {
        self.code = code.primary
        self.extendedCode = code
        self.message = message ?? code.description
        self.sql = sql
    }

    public var description: String {
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
