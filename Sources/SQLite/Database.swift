import CSQLite
import Foundation

/// Owns the C connection handle so that statements can keep it alive.
///
/// `sqlite3_close_v2` defers the real close until the last statement is
/// finalised, but a statement must still never touch a freed handle; holding
/// this object from both sides makes the order of deinitialisation irrelevant.
final class Connection {
    let handle: OpaquePointer
    /// Guards `isOpen` against an interrupt arriving from another thread while closing.
    let lock = NSLock()
    var isOpen = true

    init(handle: OpaquePointer) { self.handle = handle }

    func interrupt() {
        lock.lock()
        defer { lock.unlock() }
        if isOpen { sqlite3_interrupt(handle) }
    }

    deinit {
        lock.lock()
        isOpen = false
        lock.unlock()
        sqlite3_close_v2(handle)
    }
}

/// One SQLite connection.
///
/// A `Database` is not thread-safe and deliberately not `Sendable`: it is
/// opened in SQLite's multi-thread mode (no per-call mutex), so it must be
/// used by one thread at a time. The one exception is ``interrupt()``, which
/// another thread reaches through ``interruptHandle``.
///
/// Read-write connections use WAL journaling: readers on other connections
/// (other processes included) keep reading while one writer commits. With
/// `synchronous=NORMAL` (the default) a commit costs one write to the log and
/// no fsync: it survives the process crashing, not the machine losing power;
/// `synchronous=FULL` syncs the log at every commit, so it survives both.
package final class Database {
    /// How to open the file.
    package enum Mode: Sendable, Hashable {
        /// Read and write; with `create`, a missing file is created.
        case readWrite(create: Bool)
        /// Read only. Still sees every transaction other connections commit.
        case readOnly
    }

    /// Settings applied when the connection opens.
    package struct Configuration: Sendable {
        /// How long a statement waits for another connection's lock before
        /// failing with `.busy`.
        package var busyTimeout: Duration = .seconds(5)
        /// Switch a read-write connection to WAL journaling.
        package var walJournal = true
        /// `PRAGMA synchronous` of a read-write WAL connection: when a commit
        /// reaches the disk (see ``Synchronous``).
        package var synchronous: Synchronous = .normal
        /// At most this many prepared statements are kept by ``prepare(_:)``.
        package var statementCacheCapacity = 64
        /// Page cache size in KiB (`PRAGMA cache_size=-N`); `nil` keeps SQLite's default.
        package var cacheSizeKiB: Int? = nil
        /// Read the file through a memory map of up to this many bytes
        /// (`PRAGMA mmap_size`); `nil` reads with system calls.
        package var mmapSizeBytes: Int? = nil

        package init() {}
    }

    /// When a commit is on the disk (`PRAGMA synchronous`, in WAL mode).
    package enum Synchronous: String, Sendable, CaseIterable {
        /// The log is written at each commit and synced only at checkpoints:
        /// a commit survives a crash of the process, and the last ones may be
        /// lost if the machine loses power.
        case normal = "NORMAL"
        /// The log is synced at each commit: a commit survives a power cut too.
        case full = "FULL"

        /// The number `PRAGMA synchronous` answers with.
        package var level: Int { self == .normal ? 1 : 2 }
    }

    /// How a transaction takes its locks.
    package enum TransactionKind: String, Sendable {
        /// Takes a read lock at the first read, a write lock at the first write.
        case deferred = "DEFERRED"
        /// Takes the write lock at once, so it cannot fail halfway with `.busy`
        /// when upgrading a read lock.
        case immediate = "IMMEDIATE"

        /// The statement's text, a constant (a cache key made once).
        var beginStatement: String {
            switch self {
            case .deferred: "BEGIN DEFERRED"
            case .immediate: "BEGIN IMMEDIATE"
            }
        }
    }

    let connection: Connection
    var handle: OpaquePointer { connection.handle }
    /// The path the database was opened at.
    package let path: String
    package let mode: Mode
    let configuration: Configuration
    private var statementCache: [String: Statement] = [:]
    private var progressBox: ProgressBox?

    /// Opens (or creates) the database file at `path`.
    package init(path: String, mode: Mode = .readWrite(create: true), configuration: Configuration = Configuration()) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWrite(let create): flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var raw: OpaquePointer?
        let rc = sqlite3_open_v2(path, &raw, flags, nil)
        guard rc == SQLITE_OK, let raw else {
            let error = SQLiteError(connection: raw, result: rc, sql: nil)
            if let raw { sqlite3_close_v2(raw) }
            throw SQLiteError(error.extendedCode, message: "cannot open \(path): \(error.message)")
        }
        sqlite3_extended_result_codes(raw, 1)
        self.connection = Connection(handle: raw)
        self.path = path
        self.mode = mode
        self.configuration = configuration
        let millis =
            configuration.busyTimeout.components.seconds * 1000
            + configuration.busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(raw, Int32(clamping: millis))
        if let kib = configuration.cacheSizeKiB {
            try execute("PRAGMA cache_size=-\(kib)")
        }
        if let bytes = configuration.mmapSizeBytes {
            try execute("PRAGMA mmap_size=\(bytes)")
        }
        if case .readWrite = mode, configuration.walJournal {
            // journal_mode answers with a row, so it goes through a statement.
            let mode = try makeStatement("PRAGMA journal_mode=WAL")
            _ = try mode.step()
            try execute("PRAGMA synchronous=\(configuration.synchronous.rawValue)")
        }
    }

    // MARK: Running SQL

    /// Runs one or more statements that take no parameters and whose rows, if
    /// any, are not needed (schema changes, pragmas).
    package func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) }
            sqlite3_free(message)
            var error = SQLiteError(connection: handle, result: rc, sql: sql)
            if let text { error.message = text }
            throw error
        }
    }

    /// A prepared statement for `sql`, reused across calls.
    ///
    /// Preparing is a large share of the cost of a short statement, so hot
    /// statements are kept prepared. The statement comes back reset with its
    /// bindings cleared; it must not be used by two callers at once, so don't
    /// run the same SQL text inside a loop that is stepping it — use
    /// ``makeStatement(_:)`` for that, and for one-off SQL built at run time
    /// that would only churn the cache.
    package func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statementCache[sql] {
            cached.resetQuietly()
            cached.clearBindings()
            return cached
        }
        let statement = try makeStatement(sql)
        if statementCache.count >= configuration.statementCacheCapacity {
            statementCache.removeAll(keepingCapacity: true)
        }
        statementCache[sql] = statement
        return statement
    }

    /// A new prepared statement that the caller owns alone.
    package func makeStatement(_ sql: String) throws(SQLiteError) -> Statement {
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK else { throw SQLiteError(connection: handle, result: rc, sql: sql) }
        guard let raw else {
            throw SQLiteError(.misuse, message: "the SQL text holds no statement", sql: sql)
        }
        return Statement(raw, connection: connection, sql: sql)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back
    /// when it throws.
    ///
    /// Inside another transaction it becomes a savepoint, so helpers that need
    /// atomicity can call it without knowing whether their caller already did.
    ///
    /// The statements that begin and end it are kept prepared
    /// (``prepare(_:)``) rather than run with `sqlite3_exec`, which would parse
    /// `BEGIN` and `COMMIT` again at every transaction: a search is one read
    /// transaction, and that parsing cost 1.5% of a search's CPU.
    package func transaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        let nested = !isAutocommit
        if nested {
            try prepare("SAVEPOINT limelight_nested").run()
        } else {
            try prepare(kind.beginStatement).run()
        }
        do {
            let result = try body()
            if !nested { resetStatementsInProgress() }
            try prepare(nested ? "RELEASE limelight_nested" : "COMMIT").run()
            return result
        } catch {
            if nested {
                try? execute("ROLLBACK TO limelight_nested")
                try? execute("RELEASE limelight_nested")
            } else {
                resetStatementsInProgress()
                if !isAutocommit { try? execute("ROLLBACK") }
            }
            throw error
        }
    }

    /// Resets every statement of the connection still at a row: one a loop
    /// left at its first match, or a thrown error (a cancelled query's)
    /// ended. A statement in progress keeps the connection's read snapshot
    /// past its transaction's end, so each later read of a long-lived
    /// connection (a query worker's) would see the data as it was then.
    /// Called as the outermost transaction ends, when its body is done with
    /// every statement.
    private func resetStatementsInProgress() {
        var next = sqlite3_next_stmt(handle, nil)
        while let statement = next {
            if sqlite3_stmt_busy(statement) != 0 { sqlite3_reset(statement) }
            next = sqlite3_next_stmt(handle, statement)
        }
    }

    /// True outside any transaction.
    package var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// The rowid of the last row inserted on this connection.
    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    package var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Rows changed since the connection opened.
    package var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    // MARK: Stopping

    /// Makes the statement now running (if any) fail promptly with `.interrupt`.
    package func interrupt() { connection.interrupt() }

    /// A handle that interrupts this connection from any thread.
    ///
    /// Safe to keep beyond the connection's life: once it is closed, the handle
    /// does nothing.
    package var interruptHandle: InterruptHandle { InterruptHandle(connection: connection) }

    /// Calls `handler` every `instructions` virtual-machine steps of a running
    /// statement; when it returns true the statement stops with `.interrupt`.
    ///
    /// This is how a long query polls a cancellation flag without a second
    /// thread. Pass `nil` to remove the handler.
    package func setProgressHandler(every instructions: Int = 1000, _ handler: (() -> Bool)?) {
        guard let handler else {
            sqlite3_progress_handler(handle, 0, nil, nil)
            progressBox = nil
            return
        }
        let box = ProgressBox(handler)
        progressBox = box
        sqlite3_progress_handler(
            handle, Int32(clamping: max(1, instructions)),
            { context in
                guard let context else { return 0 }
                let box = Unmanaged<ProgressBox>.fromOpaque(context).takeUnretainedValue()
                return box.handler() ? 1 : 0
            }, Unmanaged.passUnretained(box).toOpaque())
    }

    // MARK: Functions

    /// Registers a scalar SQL function implemented in Swift.
    ///
    /// `deterministic` lets SQLite use the function in indexes and factor it
    /// out of loops; say so only when the result depends on the arguments alone.
    /// A thrown error becomes an SQL error that names the function.
    package func createFunction(
        _ name: String, argumentCount: Int, deterministic: Bool = true,
        _ body: @escaping ([SQLValue]) throws -> SQLValue
    ) throws(SQLiteError) {
        let box = FunctionBox(name: name, body: body)
        var flags = SQLITE_UTF8
        if deterministic { flags |= SQLITE_DETERMINISTIC }
        let rc = sqlite3_create_function_v2(
            handle, name, Int32(argumentCount), flags, Unmanaged.passRetained(box).toOpaque(),
            { context, argc, argv in
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
                var arguments: [SQLValue] = []
                arguments.reserveCapacity(Int(argc))
                for i in 0..<Int(argc) { arguments.append(SQLValue(sqliteValue: argv![i])) }
                do {
                    switch try box.body(arguments) {
                    case .null: sqlite3_result_null(context)
                    case .integer(let i): sqlite3_result_int64(context, i)
                    case .real(let d): sqlite3_result_double(context, d)
                    case .text(let s):
                        s.withCString { sqlite3_result_text(context, $0, Int32(s.utf8.count), limelight_sqlite_transient()) }
                    case .blob(let d):
                        d.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, Int32($0.count), limelight_sqlite_transient()) }
                    }
                } catch {
                    let message = "\(box.name): \(error)"
                    sqlite3_result_error(context, message, -1)
                }
            },
            nil, nil,
            { pointer in
                guard let pointer else { return }
                Unmanaged<FunctionBox>.fromOpaque(pointer).release()
            })
        guard rc == SQLITE_OK else { throw SQLiteError(connection: handle, result: rc, sql: nil) }
    }
}

/// Interrupts a connection from another thread (a cancelled request, a
/// shutdown). See ``Database/interruptHandle``.
///
/// `@unchecked Sendable`: it wraps the SQLite connection's C handle, which
/// `Connection` guards with a lock for exactly this call
/// (`sqlite3_interrupt` is safe from any thread).
package struct InterruptHandle: @unchecked Sendable {
    let connection: Connection
    package func interrupt() { connection.interrupt() }
}

final class ProgressBox {
    let handler: () -> Bool
    init(_ handler: @escaping () -> Bool) { self.handler = handler }
}

final class FunctionBox {
    let name: String
    let body: ([SQLValue]) throws -> SQLValue
    init(name: String, body: @escaping ([SQLValue]) throws -> SQLValue) {
        self.name = name
        self.body = body
    }
}

extension SQLValue {
    init(sqliteValue value: OpaquePointer?) {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            let count = Int(sqlite3_value_bytes(value))
            if let p = sqlite3_value_text(value) {
                self = .text(String(decoding: UnsafeBufferPointer(start: p, count: count), as: UTF8.self))
            } else {
                self = .text("")
            }
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            if let p = sqlite3_value_blob(value), count > 0 { self = .blob(Data(bytes: p, count: count)) } else { self = .blob(Data()) }
        default: self = .null
        }
    }
}
