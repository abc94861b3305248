import Foundation
import Items
import ShardStore
import Testing

/// A shard file's sequence number names exactly the changes it holds: it is
/// written in the change's own transaction, read back by another connection
/// and after reopening, and a failed change leaves it where it was.
@Suite struct SequenceTests {
    func item(_ uid: String) -> JSONValue {
        .object([
            "uniqueIdentifier": .string(uid), "domainIdentifier": .string("org.seq"),
            "attributes": .object(["title": .string("seq \(uid)")]),
        ])
    }

    @Test func theSequenceMovesWithTheChangeAndSurvivesReopening() throws {
        let dir = TempDir()
        let path = dir.path("s.sqlite")
        let store = try ShardStore(path: path, logger: testLogger)
        #expect(try store.sequence() == 0)
        #expect(try store.check(sequence: 1) == .next)
        #expect(try store.check(sequence: 3) == .gap(have: 0))
        _ = try store.applying(sequence: 1) { try store.write([item("a")]) }
        _ = try store.applying(sequence: 2) { try store.delete(ids: ["a"]) }
        #expect(try store.sequence() == 2)
        #expect(try store.check(sequence: 2) == .applied)
        #expect(try store.check(sequence: 3) == .next)
        let reader = try ShardStore(path: path, mode: .readOnly, logger: testLogger)
        #expect(try reader.sequence() == 2)
        let reopened = try ShardStore(path: path, logger: testLogger)
        #expect(try reopened.sequence() == 2)
        #expect(try reopened.count() == 0)
    }

    @Test func aFailedChangeLeavesNeitherItsItemsNorItsNumber() throws {
        struct Boom: Error {}
        let dir = TempDir()
        let store = try ShardStore(path: dir.path("f.sqlite"), logger: testLogger)
        _ = try store.applying(sequence: 1) { try store.write([item("kept")]) }
        #expect(throws: Boom.self) {
            try store.applying(sequence: 2) { () throws -> Void in
                _ = try store.write([item("lost")])
                throw Boom()
            }
        }
        #expect(try store.sequence() == 1)
        #expect(try store.count() == 1)
    }
}
