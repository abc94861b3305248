import CSQLite
import Foundation

/// A prepared statement: bind parameters, step through rows, read columns.
///
/// Parameter and column indexes start at 0 for both, unlike the C API (whose
/// parameters start at 1); one convention is easier to get right.
/// Not thread-safe; it belongs to its ``Database``'s thread.
package final class Statement {
    let handle: OpaquePointer
    let connection: Connection
    /// The SQL text, for error messages.
    package let sql: String

    init(_ handle: OpaquePointer, connection: Connection, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    private func check(_ rc: Int32) throws(SQLiteError) {
        if rc != SQLITE_OK { throw SQLiteError(connection: connection.handle, result: rc, sql: sql) }
    }

    // MARK: Binding

    /// The number of parameters (`?`, `?NNN`, `:name`) in the SQL.
    package var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    package func bind(_ value: Int64, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, Int32(index + 1), value))
    }

    package func bind(_ value: Int, at index: Int) throws(SQLiteError) {
        try bind(Int64(value), at: index)
    }

    package func bind(_ value: Double, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_double(handle, Int32(index + 1), value))
    }

    package func bind(_ value: String, at index: Int) throws(SQLiteError) {
        var value = value
        let rc = value.withUTF8 { buffer in
            // An empty buffer may have no base address; SQLite reads NULL as SQL NULL.
            buffer.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress else {
                    return sqlite3_bind_text(handle, Int32(index + 1), "", 0, limelight_sqlite_transient())
                }
                return sqlite3_bind_text(handle, Int32(index + 1), base, Int32(chars.count), limelight_sqlite_transient())
            }
        }
        try check(rc)
    }

    package func bind(_ value: Data, at index: Int) throws(SQLiteError) {
        let rc = value.withUnsafeBytes { bytes in
            sqlite3_bind_blob(
                handle, Int32(index + 1), bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), limelight_sqlite_transient())
        }
        try check(rc)
    }

    package func bindNull(at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_null(handle, Int32(index + 1)))
    }

    package func bind(_ value: SQLValue, at index: Int) throws(SQLiteError) {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let i): try bind(i, at: index)
        case .real(let d): try bind(d, at: index)
        case .text(let s): try bind(s, at: index)
        case .blob(let d): try bind(d, at: index)
        }
    }

    /// Binds values to the parameters in order, from the first.
    package func bind(_ values: [SQLValue]) throws(SQLiteError) {
        for (i, v) in values.enumerated() { try bind(v, at: i) }
    }

    /// Binds a named parameter, written with its prefix (`:name`, `@name`, `$name`).
    package func bind(_ value: SQLValue, named name: String) throws(SQLiteError) {
        let i = sqlite3_bind_parameter_index(handle, name)
        guard i > 0 else {
            throw SQLiteError(.range, message: "no parameter named \(name)", sql: sql)
        }
        try bind(value, at: Int(i) - 1)
    }

    /// Unbinds every parameter (back to NULL).
    package func clearBindings() { sqlite3_clear_bindings(handle) }

    // MARK: Stepping

    /// Advances to the next row: true when a row is available, false when the
    /// statement is done.
    @discardableResult
    package func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc:
            // sqlite3_reset returns the same failure; clearing it keeps the
            // statement reusable after the error.
            let error = SQLiteError(connection: connection.handle, result: rc, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Rewinds the statement so it can run again; bindings are kept.
    package func reset() throws(SQLiteError) {
        try check(sqlite3_reset(handle))
    }

    func resetQuietly() { sqlite3_reset(handle) }

    /// Runs the statement to completion, ignoring any rows.
    package func run() throws(SQLiteError) {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Binds `values`, then runs to completion.
    package func run(_ values: [SQLValue]) throws(SQLiteError) {
        try resetAndBind(values)
        try run()
    }

    /// Steps through every row, calling `body` on each; the statement is reset
    /// afterwards even when `body` throws.
    package func forEachRow(_ body: (Statement) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        while try step() { try body(self) }
    }

    /// The rows, each mapped by `transform`.
    package func map<T>(_ transform: (Statement) throws -> T) throws -> [T] {
        var out: [T] = []
        try forEachRow { out.append(try transform($0)) }
        return out
    }

    /// The first column of the first row, or nil when there is no row.
    package func scalar() throws(SQLiteError) -> SQLValue? {
        defer { sqlite3_reset(handle) }
        return try step() ? value(at: 0) : nil
    }

    private func resetAndBind(_ values: [SQLValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        try bind(values)
    }

    // MARK: Columns

    package var columnCount: Int { Int(sqlite3_column_count(handle)) }

    package func columnName(at index: Int) -> String {
        String(cString: sqlite3_column_name(handle, Int32(index)))
    }

    package func isNull(at index: Int) -> Bool {
        sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL
    }

    /// The column as an integer (0 for NULL, SQLite's conversion for text).
    package func int64(at index: Int) -> Int64 { sqlite3_column_int64(handle, Int32(index)) }

    package func int(at index: Int) -> Int { Int(sqlite3_column_int64(handle, Int32(index))) }

    /// The column as a double (0 for NULL).
    package func double(at index: Int) -> Double { sqlite3_column_double(handle, Int32(index)) }

    /// The column as text, or nil for NULL.
    package func string(at index: Int) -> String? {
        guard let p = sqlite3_column_text(handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        return String(decoding: UnsafeBufferPointer(start: p, count: count), as: UTF8.self)
    }

    /// The column as bytes, or nil for NULL.
    package func data(at index: Int) -> Data? {
        if isNull(at: index) { return nil }
        let p = sqlite3_column_blob(handle, Int32(index))
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        guard let p, count > 0 else { return Data() }
        return Data(bytes: p, count: count)
    }

    /// Reads the column's raw UTF-8 bytes without copying them into a String;
    /// the buffer is valid only inside `body`. Kept out of the package API (it
    /// hands out a pointer) for the store's own zero-copy JSON reading.
    package func withUTF8<T>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T? {
        guard let p = sqlite3_column_text(handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        return try body(UnsafeBufferPointer(start: p, count: count))
    }

    /// The column with its storage class.
    package func value(at index: Int) -> SQLValue {
        switch sqlite3_column_type(handle, Int32(index)) {
        case SQLITE_INTEGER: .integer(int64(at: index))
        case SQLITE_FLOAT: .real(double(at: index))
        case SQLITE_TEXT: .text(string(at: index) ?? "")
        case SQLITE_BLOB: .blob(data(at: index) ?? Data())
        default: .null
        }
    }
}
