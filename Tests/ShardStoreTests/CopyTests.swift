import Foundation
import Items
import SQLite
import ShardStore
import Testing

/// A shard copied to another replica (the coordinator streams a snapshot of
/// a fresh replica's file to one it cannot catch up): the target ends up with
/// exactly the source's items, declarations and sequence number, its own
/// changes gone, and a reader of the target's file sees the copy.
@Suite struct CopyTests {
    func item(_ uid: String) -> JSONValue {
        .object([
            "uniqueIdentifier": .string(uid), "domainIdentifier": .string("org.copy"),
            "attributes": .object(["title": .string("copy \(uid)"), "shelfLife": .number(4)]),
        ])
    }

    func uids(_ path: String) throws -> [String] {
        let db = try Database(path: path, mode: .readOnly)
        var out: [String] = []
        try db.prepare("SELECT uid FROM items ORDER BY uid").forEachRow { row in out.append(row.string(at: 0) ?? "") }
        return out
    }

    @Test func aCopyReplacesTheTargetsContentWithTheSnapshot() throws {
        let dir = TempDir()
        let source = try ShardStore(path: dir.path("source.sqlite"), logger: testLogger)
        try source.declare([AttributeSpec(name: "shelfLife", type: .number)])
        _ = try source.applying(sequence: 1) { try source.write([item("a"), item("b")]) }
        _ = try source.applying(sequence: 2) { try source.write([item("c")]) }
        _ = try source.applying(sequence: 3) { try source.delete(ids: ["b"]) }

        // The target holds other changes under the same numbers (another lineage).
        let targetPath = dir.path("target.sqlite")
        let target = try ShardStore(path: targetPath, logger: testLogger)
        for n in 1...5 { _ = try target.applying(sequence: n) { try target.write([item("other-\(n)")]) } }
        let reader = try ShardStore(path: targetPath, mode: .readOnly, logger: testLogger)
        #expect(try reader.count() == 5)

        let snapshot = dir.path("snapshot")
        #expect(try source.snapshot(to: snapshot) == 3)
        // A later change of the source is not in the snapshot.
        _ = try source.applying(sequence: 4) { try source.write([item("d")]) }
        #expect(try uids(snapshot) == ["a", "c"])

        #expect(try target.replaceContent(withCopyAt: snapshot) == 3)
        #expect(try target.sequence() == 3)
        #expect(try target.check(sequence: 4) == .next)
        #expect(try uids(targetPath) == ["a", "c"])
        #expect(target.schema.spec(for: "shelfLife")?.type == .number)
        // Another connection (a query worker's) sees the copy.
        #expect(try reader.count() == 2)
        #expect(try reader.sequence() == 3)
        // The target goes on from the copy's number.
        _ = try target.applying(sequence: 4) { try target.write([item("d")]) }
        #expect(try uids(targetPath) == ["a", "c", "d"])
        // And the copy survives reopening.
        let reopened = try ShardStore(path: targetPath, logger: testLogger)
        #expect(try reopened.sequence() == 4)
    }

    @Test func aFileThatIsNotAShardIsRefusedAndChangesNothing() throws {
        let dir = TempDir()
        let targetPath = dir.path("target.sqlite")
        let target = try ShardStore(path: targetPath, logger: testLogger)
        _ = try target.applying(sequence: 1) { try target.write([item("kept")]) }
        let plain = dir.path("plain.sqlite")
        let db = try Database(path: plain)
        try db.execute("CREATE TABLE t(x)")
        let garbage = dir.path("garbage")
        FileManager.default.createFile(atPath: garbage, contents: Data("not a database at all, not even close".utf8))
        for bad in [plain, garbage] {
            #expect(throws: StoreError.self) { try target.replaceContent(withCopyAt: bad) }
        }
        #expect(try target.sequence() == 1)
        #expect(try uids(targetPath) == ["kept"])
    }
}
