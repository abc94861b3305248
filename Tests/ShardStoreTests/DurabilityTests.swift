import Foundation
import SQLite
import ShardStore
import Testing

/// `--durability` reaches SQLite: the setting is read back from the
/// connection, not trusted from the configuration.
@Suite struct DurabilityTests {
    @Test func eachDurabilityIsInForceOnTheWriter() throws {
        let dir = TempDir()
        for durability in Durability.allCases {
            let store = try ShardStore(path: dir.path("\(durability).db"), durability: durability, logger: testLogger)
            #expect(try store.durabilityInForce() == durability)
        }
        // The default is process: synchronous=NORMAL.
        let plain = try ShardStore(path: dir.path("default.db"), logger: testLogger)
        #expect(try plain.durabilityInForce() == .process)
    }

    @Test func theDatabaseAppliesTheSynchronousLevelInWALMode() throws {
        let dir = TempDir()
        for level in Database.Synchronous.allCases {
            var configuration = Database.Configuration()
            configuration.synchronous = level
            let db = try Database(path: dir.path("\(level.rawValue).db"), configuration: configuration)
            #expect(try db.prepare("PRAGMA synchronous").scalar()?.int64 == Int64(level.level))
            #expect(try db.prepare("PRAGMA journal_mode").scalar()?.string == "wal")
        }
        // SQLite's own numbering, so `level` cannot drift from it.
        #expect(Database.Synchronous.normal.level == 1)
        #expect(Database.Synchronous.full.level == 2)
    }

    /// A quiet shard's log is copied into the file and cut to nothing, and
    /// what it held is still there, for the writer and for a new reader.
    @Test func truncatingTheLogKeepsEveryCommittedWrite() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put((0..<200).map { item("i\($0)", #"{"title": "item \#($0)", "installedSize": \#($0)}"#) })
        let log = dir.path("shard.db") + "-wal"
        func logBytes() throws -> Int { (try FileManager.default.attributesOfItem(atPath: log)[.size] as? NSNumber)?.intValue ?? -1 }
        #expect(try logBytes() > 0)
        #expect(try store.truncateLog())
        #expect(try logBytes() == 0)
        #expect(try store.count() == 200)
        #expect(try openStore(dir, mode: .readOnly).idSet(range("installedSize", 10, 12)) == ["i10", "i11", "i12"])
        // Writes go on after it, into a log that grows again.
        try store.put([item("after", #"{"title": "after"}"#)])
        #expect(try logBytes() > 0)
        #expect(try openStore(dir, mode: .readOnly).count() == 201)
    }

    /// A reader on an older snapshot keeps the log: the truncation says so
    /// at once instead of waiting out the busy timeout, and succeeds once
    /// the reader has moved on.
    @Test func aReaderOnAnOlderSnapshotKeepsTheLogForLater() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([item("a", #"{"title": "a"}"#)])
        let reader = try Database(path: dir.path("shard.db"), mode: .readOnly)
        try reader.execute("BEGIN")
        #expect(try reader.prepare("SELECT count(*) FROM items").scalar()?.int64 == 1)
        try store.put([item("b", #"{"title": "b"}"#)])
        let started = ContinuousClock.now
        #expect(try !store.truncateLog(wait: 50))
        #expect(ContinuousClock.now - started < .seconds(2))
        try reader.execute("COMMIT")
        #expect(try store.truncateLog())
        #expect(try store.count() == 2)
    }
}
