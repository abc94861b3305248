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
}
