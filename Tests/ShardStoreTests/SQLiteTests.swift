import Foundation
import SQLite
import Testing

/// A fresh folder per test, removed afterwards.
final class TempDir {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

@Suite struct SQLiteTests {
    @Test func bindsAndReadsEveryStorageClass() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("values.db"))
        try db.execute("CREATE TABLE t(a, b, c, d, e, f)")
        let insert = try db.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)")
        try insert.bind(Int64(42), at: 0)
        try insert.bind(2.5, at: 1)
        try insert.bind("héllo 🌍", at: 2)
        try insert.bind(Data([0, 1, 2, 255]), at: 3)
        try insert.bindNull(at: 4)
        try insert.bind("", at: 5)
        try insert.run()
        #expect(db.lastInsertRowID == 1)
        #expect(db.changes == 1)

        let select = try db.prepare("SELECT a, b, c, d, e, f FROM t")
        #expect(try select.step())
        #expect(select.columnCount == 6)
        #expect(select.columnName(at: 2) == "c")
        #expect(select.int64(at: 0) == 42)
        #expect(select.double(at: 1) == 2.5)
        #expect(select.string(at: 2) == "héllo 🌍")
        #expect(select.data(at: 3) == Data([0, 1, 2, 255]))
        #expect(select.isNull(at: 4))
        #expect(select.string(at: 4) == nil)
        #expect(select.value(at: 5) == .text(""), "an empty string stays text, not NULL")
        #expect(select.value(at: 0) == .integer(42))
        #expect(try select.step() == false)
    }

    @Test func namedParametersAndScalars() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("named.db"))
        let s = try db.prepare("SELECT :a + :b")
        try s.bind(.integer(2), named: ":a")
        try s.bind(.real(0.5), named: ":b")
        #expect(try s.scalar() == .real(2.5))
        #expect(throws: SQLiteError.self) { try s.bind(1, named: ":missing") }
    }

    @Test func statementCacheHandsBackAResetStatement() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("cache.db"))
        try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)")
        let first = try db.prepare("SELECT x FROM t ORDER BY x")
        #expect(try first.step())
        let again = try db.prepare("SELECT x FROM t ORDER BY x")
        #expect(first === again)
        #expect(try again.step())
        #expect(again.int64(at: 0) == 1, "a cached statement starts from the first row")
        #expect(try again.map { $0.int64(at: 0) } == [2, 3], "map continues from where the caller stepped to")
    }

    @Test func transactionsCommitRollBackAndNest() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("tx.db"))
        try db.execute("CREATE TABLE t(x INTEGER PRIMARY KEY)")
        struct Boom: Error {}
        try db.transaction { try db.execute("INSERT INTO t VALUES (1)") }
        #expect(throws: Boom.self) {
            try db.transaction(.immediate) {
                try db.execute("INSERT INTO t VALUES (2)")
                throw Boom()
            }
        }
        try db.transaction {
            try db.execute("INSERT INTO t VALUES (3)")
            try? db.transaction {
                try db.execute("INSERT INTO t VALUES (4)")
                throw Boom()
            }
        }
        #expect(db.isAutocommit)
        #expect(try db.prepare("SELECT x FROM t ORDER BY x").map { $0.int64(at: 0) } == [1, 3])
    }

    /// `BEGIN` and `COMMIT` are kept prepared: a `COMMIT` that fails (a
    /// deferred foreign key) rolls the transaction back, and the same
    /// statements begin and commit the next one.
    @Test func aFailedCommitRollsBackAndTheNextTransactionCommits() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("commit.db"))
        try db.execute("PRAGMA foreign_keys=ON")
        try db.execute("CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE c(pid INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)")
        #expect(throws: SQLiteError.self) {
            try db.transaction { try db.execute("INSERT INTO c VALUES (7)") }
        }
        #expect(db.isAutocommit)
        try db.transaction {
            try db.execute("INSERT INTO p VALUES (7)")
            try db.execute("INSERT INTO c VALUES (7)")
        }
        #expect(db.isAutocommit)
        #expect(try db.prepare("SELECT count(*) FROM c").scalar()?.int64 == 1)
    }

    @Test func errorsCarryCodesMessageAndSQL() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("errors.db"))
        try db.execute("CREATE TABLE t(x UNIQUE)")
        try db.execute("INSERT INTO t VALUES (1)")
        do {
            try db.prepare("INSERT INTO t VALUES (1)").run()
            Issue.record("a duplicate was accepted")
        } catch {
            #expect(error.code == .constraint)
            #expect(error.extendedCode == .constraintUnique)
            #expect(error.message.contains("UNIQUE"))
            #expect(error.sql == "INSERT INTO t VALUES (1)")
        }
        do {
            _ = try db.prepare("SELEC nonsense")
            Issue.record("bad SQL was prepared")
        } catch {
            #expect(error.code == .error)
            #expect(error.sql == "SELEC nonsense")
            #expect(error.description.contains("syntax error"))
        }
        #expect(throws: SQLiteError.self) { try Database(path: dir.path("missing/dir/x.db")) }
    }

    @Test func swiftFunctions() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("functions.db"))
        try db.createFunction("reverse_text", argumentCount: 1) { args in
            guard let s = args[0].string else { return .null }
            return .text(String(s.reversed()))
        }
        struct Refused: Error, CustomStringConvertible { var description: String { "refused" } }
        try db.createFunction("refuse", argumentCount: -1, deterministic: false) { _ in throw Refused() }
        #expect(try db.prepare("SELECT reverse_text('abc')").scalar() == .text("cba"))
        #expect(try db.prepare("SELECT reverse_text(NULL)").scalar() == .null)
        do {
            _ = try db.prepare("SELECT refuse(1, 2)").scalar()
            Issue.record("the function's error was lost")
        } catch {
            #expect(error.message.contains("refuse: refused"))
        }
    }

    static let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

    @Test func interruptFromAnotherThread() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("interrupt.db"))
        let handle = db.interruptHandle
        let thread = Thread {
            Thread.sleep(forTimeInterval: 0.1)
            handle.interrupt()
        }
        thread.start()
        let started = Date()
        do {
            _ = try db.prepare(Self.endless).scalar()
            Issue.record("an endless query ended")
        } catch {
            #expect(error.code == .interrupt)
        }
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func progressHandlerStopsAStatement() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path("progress.db"))
        var calls = 0
        db.setProgressHandler(every: 1000) {
            calls += 1
            return calls > 50
        }
        #expect(throws: SQLiteError.self) { _ = try db.prepare(Self.endless).scalar() }
        #expect(calls == 51)
        db.setProgressHandler(nil)
        #expect(try db.prepare("SELECT 1").scalar() == .integer(1))
    }

    /// A statement left at a row inside a transaction (a loop that stopped
    /// at its first match, or one a thrown error ended) does not keep the
    /// connection on that transaction's snapshot: the next transaction sees
    /// another connection's commits.
    @Test func aStatementLeftSteppedDoesNotHoldTheSnapshot() throws {
        let dir = TempDir()
        let path = dir.path("wal.db")
        let writer = try Database(path: path)
        try writer.execute("CREATE TABLE t(x)")
        try writer.execute("INSERT INTO t VALUES (1), (2)")
        let reader = try Database(path: path, mode: .readOnly)
        let left = try reader.prepare("SELECT x FROM t ORDER BY x")
        try reader.transaction {
            let stepped = try left.step()
            #expect(stepped && left.int64(at: 0) == 1)  // and left there
        }
        try writer.execute("INSERT INTO t VALUES (3)")
        let seen = try reader.transaction { try reader.prepare("SELECT count(*) FROM t").scalar()?.int64 }
        #expect(seen == 3)
        #expect(try reader.prepare("SELECT count(*) FROM t").scalar()?.int64 == 3)
    }

    @Test func readOnlyConnectionSeesEachCommit() throws {
        let dir = TempDir()
        let path = dir.path("wal.db")
        let writer = try Database(path: path)
        #expect(try writer.prepare("PRAGMA journal_mode").scalar() == .text("wal"))
        try writer.execute("CREATE TABLE t(x)")
        let reader = try Database(path: path, mode: .readOnly)
        let count = { try reader.prepare("SELECT count(*) FROM t").scalar()?.int64 }
        #expect(try count() == 0)
        try writer.execute("INSERT INTO t VALUES (1)")
        #expect(try count() == 1)
        // A reader inside a transaction keeps its snapshot while the writer goes on.
        try reader.transaction {
            #expect(try count() == 1)
            try writer.execute("INSERT INTO t VALUES (2)")
            #expect(try count() == 1)
        }
        #expect(try count() == 2)
        do {
            try reader.execute("INSERT INTO t VALUES (3)")
            Issue.record("a read-only connection wrote")
        } catch {
            #expect(error.code == .readOnly)
        }
    }
}
