import Testing

@testable import Coordinator

/// Registrations waiting for the control plane (``ControlPlaneReads``): a
/// worker of an unknown replica keeps it from queries until a read that
/// began after the registration; a retired replica's worker is refused only
/// after such a read.
@Suite struct ControlPlaneReadsTests {
    @Test func anUnknownReplicaIsUnqueriedUntilAReadThatBeganAfterItsRegistration() {
        var reads = ControlPlaneReads()
        reads.read()
        let r1 = reads.registered("h:/new", shards: [0, 1], knownOtherwise: false)
        #expect(r1)
        #expect(reads.unqueried == ["h:/new": [0, 1]])
        #expect(reads.wantsRead)
        // The read under way when it registered may have missed the change.
        reads.read()
        #expect(reads.unqueried == ["h:/new": [0, 1]])
        reads.read()
        #expect(reads.unqueried.isEmpty)
        #expect(!reads.wantsRead)
        // Known from then on: another worker of it waits for nothing.
        let r2 = reads.registered("h:/new", shards: [0], knownOtherwise: false)
        #expect(!r2)
    }

    @Test func aReplicaKnownOtherwiseWaitsForNothing() {
        var reads = ControlPlaneReads()
        let r3 = reads.registered("h:/data", shards: [0], knownOtherwise: true)
        #expect(!r3)
        #expect(reads.unqueried.isEmpty)
        #expect(!reads.wantsRead)
    }

    @Test func itsOwnIndexerDoesNotMakeAWaitingReplicaKnown() {
        var reads = ControlPlaneReads()
        let r4 = reads.registered("h:/new", shards: [0], knownOtherwise: false)
        #expect(r4)
        reads.read()
        // Its query worker registers after its indexer (the coordinator has its numbers now).
        let r5 = reads.registered("h:/new", shards: [1], knownOtherwise: true)
        #expect(r5)
        #expect(reads.unqueried == ["h:/new": [0, 1]])
        // The wait starts again from the latest registration.
        reads.read()
        #expect(reads.unqueried == ["h:/new": [0, 1]])
        reads.read()
        #expect(reads.unqueried.isEmpty)
    }

    @Test func aRetiredReplicasWorkerIsRefusedOnlyAfterAReadThatBeganAfterItAsked() {
        var reads = ControlPlaneReads()
        let r6 = reads.refuseAfterRead(worker: "w")
        #expect(!r6)
        let r7 = reads.refuseAfterRead(worker: "w")
        #expect(!r7)
        reads.read()
        let r8 = reads.refuseAfterRead(worker: "w")
        #expect(!r8)
        reads.read()
        let r9 = reads.refuseAfterRead(worker: "w")
        #expect(r9)
        // Asked afresh next time.
        let r10 = reads.refuseAfterRead(worker: "w")
        #expect(!r10)
    }

    @Test func anAdmittedWorkerIsForgotten() {
        var reads = ControlPlaneReads()
        let r11 = reads.refuseAfterRead(worker: "w")
        #expect(!r11)
        reads.admitted(worker: "w")
        reads.read()
        reads.read()
        // A later refusal starts its own wait.
        let r12 = reads.refuseAfterRead(worker: "w")
        #expect(!r12)
    }
}
