import Foundation
import Logging
import ShardStore
import Testing

@testable import Workers

/// Numbered changes wait while a registration is unanswered, and after one
/// accepted by a coordinator of epoch E those of lower epochs are refused.
@Suite struct RegistrationFenceTests {
    @Test func changesWaitForTheAnswerThenLowerEpochsAreStale() {
        var fence = RegistrationFence()
        #expect(fence.verdict(changeEpoch: 1) == .apply)
        fence.sent()
        #expect(fence.verdict(changeEpoch: 1) == .wait)
        #expect(fence.verdict(changeEpoch: nil) == .wait)
        fence.accepted(epoch: 2)
        #expect(fence.verdict(changeEpoch: 1) == .stale(epoch: 2))
        #expect(fence.verdict(changeEpoch: 2) == .apply)
        #expect(fence.verdict(changeEpoch: 3) == .apply)
        // A coordinator without a control plane numbers without epochs.
        #expect(fence.verdict(changeEpoch: nil) == .apply)
    }

    /// A deposed coordinator's late answer does not lower the fence.
    @Test func theFenceNeverGoesDown() {
        var fence = RegistrationFence()
        fence.sent()
        fence.accepted(epoch: 3)
        fence.sent()
        fence.accepted(epoch: 2)
        #expect(fence.epoch == 3)
        #expect(fence.verdict(changeEpoch: 2) == .stale(epoch: 3))
    }

    @Test func withoutEpochsOnlyTheWaitHolds() {
        var fence = RegistrationFence()
        fence.sent()
        fence.accepted(epoch: nil)
        #expect(fence.epoch == nil)
        #expect(fence.verdict(changeEpoch: 5) == .apply)
    }

    @Test func waitersGoOnOnceAnswered() async {
        let gate = RegistrationGate()
        await gate.settled()  // nothing unanswered: at once
        gate.sent()
        let waiter = Task { await gate.settled() }
        try? await Task.sleep(for: .milliseconds(50))
        gate.accepted(epoch: 1)
        await waiter.value
        #expect(!gate.fence.registering)
    }

    @Test func onlySmallMessagesNamingTheTypeAreLookedAt() {
        #expect(RegistrationGate.mayBeRegistered(Data(#"{"v":1,"type":"registered","id":"reg-x","shardCount":4,"heartbeatMs":1000}"#.utf8)))
        #expect(!RegistrationGate.mayBeRegistered(Data(#"{"v":1,"type":"heartbeat","id":"hb"}"#.utf8)))
        #expect(!RegistrationGate.mayBeRegistered(Data((#"{"type":"registered","pad":""# + String(repeating: "x", count: 5000) + #""}"#).utf8)))
    }

    /// The sequenced apply refuses as the fence says, before looking at the store.
    @Test func theApplyAsksTheFenceFirst() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-fence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try ShardStore(
            path: folder.appendingPathComponent("shard-0.sqlite").path, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        var fence = RegistrationFence()
        fence.sent()
        var ran = false
        let waiting = try IndexerService.sequenced(store, sequence: 1, epoch: 1, fence: fence) { _ in ran = true }
        #expect(!ran)
        guard case .awaitingRegistration = waiting else {
            Issue.record("expected to wait, got \(waiting)")
            return
        }
        fence.accepted(epoch: 2)
        let stale = try IndexerService.sequenced(store, sequence: 1, epoch: 1, fence: fence) { _ in ran = true }
        #expect(!ran)
        guard case .staleEpoch(let have) = stale else {
            Issue.record("expected stale, got \(stale)")
            return
        }
        #expect(have == 2)
        let applied = try IndexerService.sequenced(store, sequence: 1, epoch: 2, fence: fence) { _ in ran = true }
        #expect(ran)
        guard case .done = applied else {
            Issue.record("expected applied, got \(applied)")
            return
        }
    }
}
