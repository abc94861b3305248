import Foundation
import Items
import QueryPlan
import ShardStore
import Testing

/// Changes committed together (``ShardStore/group(_:)``, what an indexer
/// does with a shard's writes that wait together): one transaction, each
/// change in a savepoint of its own with its own outcome.
@Suite struct GroupTests {
    struct Boom: Error {}

    func titled(_ uid: String, _ title: String, _ extra: String = "") -> JSONValue {
        item(uid, domain: "org.group", #"{"title": "\#(title)"\#(extra)}"#)
    }

    @Test func aFailedChangeIsRolledBackAloneAndTheOthersCommit() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let results = try store.group([
            { s in try s.applying(sequence: 1) { try s.write([titled("a", "alpha")]).count } },
            { s in
                try s.applying(sequence: 2) { () throws -> Int in
                    _ = try s.write([titled("b", "beta")])
                    throw Boom()
                }
            },
            { s in try s.applying(sequence: 3) { try s.write([titled("c", "gamma")]).count } },
        ])
        #expect(results.count == 3)
        #expect((try? results[0].get()) == 1)
        #expect(throws: Boom.self) { try results[1].get() }
        #expect((try? results[2].get()) == 1)
        // What another connection sees: the good changes and the last good number.
        let reader = try openStore(dir, mode: .readOnly)
        #expect(try reader.ids(text("title", "*")).sorted() == ["a", "c"])
        #expect(try reader.sequence() == 3)
    }

    @Test func nothingOfAGroupIsVisibleBeforeItReturns() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        var seenInside: [Int] = []
        _ = try store.group([
            { s in try s.write([titled("a", "alpha")]).count },
            { s in
                // The first change is done, and not committed: no acknowledgement may leave yet.
                seenInside.append(try reader.count())
                return try s.write([titled("b", "beta")]).count
            },
        ])
        #expect(seenInside == [0])
        #expect(try reader.count() == 2)
    }

    @Test func aChangeSeesTheChangesBeforeItInTheGroup() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        _ = try store.group([
            { s in try s.write([titled("a", "first")]).count },
            { s in try s.write([titled("a", "second")]).count },
        ])
        #expect(try store.count() == 1)
        #expect(try store.ids(text("title", "second")) == ["a"])
        #expect(try store.ids(text("title", "first")).isEmpty)
    }

    /// A failed change that added an attribute name takes the name with it;
    /// a later change of the group that uses the name must add it again
    /// rather than trust a cached id the file no longer has.
    @Test func namesAddedByAFailedChangeAreNotTrustedAfterIt() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let results = try store.group([
            { s in
                _ = try s.write([titled("b", "beta", #", "fresh": "new name""#)])
                throw Boom()
            },
            { s in try s.write([titled("c", "gamma", #", "fresh": "kept""#)]).count },
        ])
        #expect(throws: Boom.self) { try results[0].get() }
        #expect((try? results[1].get()) == 1)
        let reader = try openStore(dir, mode: .readOnly)
        #expect(try reader.count() == 1, "the failed change's item was rolled back with it")
        #expect(try reader.ids(text("fresh", "kept")) == ["c"])
    }
}
