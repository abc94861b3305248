import Foundation
import Items
import ShardStore
import Testing

/// The fence against a deposed coordinator: a shard file keeps the highest
/// coordinator epoch it took a change from, in that change's transaction,
/// and refuses changes of a lower epoch whatever their sequence number.
@Suite struct EpochFenceTests {
    func item(_ uid: String) -> JSONValue {
        .object([
            "uniqueIdentifier": .string(uid), "domainIdentifier": .string("org.fence"),
            "attributes": .object(["title": .string("fence \(uid)")]),
        ])
    }

    @Test func theVerdicts() {
        #expect(EpochFence.judge(stored: 0, incoming: nil) == .accept(record: nil))
        #expect(EpochFence.judge(stored: 3, incoming: nil) == .accept(record: nil))
        #expect(EpochFence.judge(stored: 3, incoming: 3) == .accept(record: nil))
        #expect(EpochFence.judge(stored: 3, incoming: 4) == .accept(record: 4))
        #expect(EpochFence.judge(stored: 3, incoming: 2) == .refuse(have: 3))
    }

    @Test func aLowerEpochIsRefusedAndChangesNothing() throws {
        let dir = TempDir()
        let path = dir.path("e.sqlite")
        let store = try ShardStore(path: path, logger: testLogger)
        #expect(try store.coordinatorEpoch() == 0)
        _ = try store.applying(sequence: 1, epoch: 1) { try store.write([item("a")]) }
        _ = try store.applying(sequence: 2, epoch: 2) { try store.write([item("b")]) }
        #expect(try store.coordinatorEpoch() == 2)
        // The deposed coordinator's next change: refused before its number is looked at.
        #expect(try store.check(sequence: 3, epoch: 1) == .staleEpoch(have: 2))
        #expect(try store.check(sequence: 2, epoch: 1) == .staleEpoch(have: 2))
        #expect(try store.check(sequence: 3, epoch: 2) == .next)
        // And refused inside the transaction too, should a check have been skipped.
        let refusal = #expect(throws: StoreError.self) {
            try store.applying(sequence: 3, epoch: 1) { try store.write([item("zombie")]) }
        }
        #expect(refusal?.code == .staleEpoch)
        #expect(try store.sequence() == 2)
        #expect(try store.count() == 2)
        // A change with no epoch (no control plane) passes and leaves the epoch.
        _ = try store.applying(sequence: 3, epoch: nil) { try store.write([item("c")]) }
        #expect(try store.coordinatorEpoch() == 2)
        let reopened = try ShardStore(path: path, mode: .readOnly, logger: testLogger)
        #expect(try reopened.coordinatorEpoch() == 2)
        #expect(try reopened.sequence() == 3)
    }

    @Test func anEpochIsRecordedOnlyWithItsChange() throws {
        struct Boom: Error {}
        let dir = TempDir()
        let store = try ShardStore(path: dir.path("r.sqlite"), logger: testLogger)
        _ = try store.applying(sequence: 1, epoch: 1) { try store.write([item("a")]) }
        #expect(throws: Boom.self) {
            try store.applying(sequence: 2, epoch: 5) { () throws -> Void in throw Boom() }
        }
        #expect(try store.coordinatorEpoch() == 1)
    }
}
