import Foundation
import Testing
import WireProtocol

@testable import Coordinator

@Suite struct KeySharingTests {
    func request(_ id: String) -> HeldRequest {
        HeldRequest(route: [Data(id.utf8)], envelope: Envelope(id: id, body: .ping(Body.Empty())))
    }

    @Test func requestsWaitUntilTheKeysAreReadForEachEpoch() {
        var s = KeySharing(holdLimit: 2)
        #expect(s.mustRead(epoch: 1))
        let (a, b, c) = (s.hold(request("a")), s.hold(request("b")), s.hold(request("c")))
        #expect(a && b)
        #expect(!c, "beyond the limit a request is refused, not held")
        let released = s.read(epoch: 1)
        #expect(released.map(\.envelope.id) == ["a", "b"], "in the order they came")
        #expect(!s.mustRead(epoch: 1))
        #expect(s.held.isEmpty)
        // A coordinator serves one epoch; a new one (in a test of the value) reads again.
        #expect(s.mustRead(epoch: 2))
    }

    @Test func aDeposedCoordinatorGivesUpWhatItHeld() {
        var s = KeySharing()
        let held = s.hold(request("a"))
        #expect(held)
        let dropped = s.dropHeld()
        #expect(dropped.map(\.envelope.id) == ["a"])
        #expect(s.held.isEmpty)
        #expect(s.mustRead(epoch: 1))
    }
}
