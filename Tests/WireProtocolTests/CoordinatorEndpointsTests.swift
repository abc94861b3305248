import Testing
import WireProtocol

/// Which coordinator a worker connects to: the next on silence, the one a
/// standby names on `not_active`, but not back to one just left as silent.
@Suite struct CoordinatorEndpointsTests {
    @Test func oneCoordinatorNeverMoves() {
        var t = CoordinatorEndpoints("tcp://a:7701")
        #expect(t.current == "tcp://a:7701")
        #expect(t.silent() == nil)
        #expect(t.redirected(to: "tcp://a:7701") == nil)
    }

    @Test func silenceMovesToTheNextAndRoundTheList() {
        var t = CoordinatorEndpoints("tcp://a:1, tcp://b:1,tcp://c:1")
        #expect(t.endpoints == ["tcp://a:1", "tcp://b:1", "tcp://c:1"])
        #expect(t.silent() == .init(from: "tcp://a:1", to: "tcp://b:1"))
        #expect(t.silent() == .init(from: "tcp://b:1", to: "tcp://c:1"))
        #expect(t.silent() == .init(from: "tcp://c:1", to: "tcp://a:1"))
    }

    @Test func aStandbyRedirectsUnlessItNamesTheSilentOne() {
        var t = CoordinatorEndpoints("tcp://a:1,tcp://b:1")
        // Connected to the standby b: it names a, the active one.
        _ = t.silent()
        #expect(t.current == "tcp://b:1")
        // a went silent and was left; b still names it until a's lease lapses.
        #expect(t.redirected(to: "tcp://a:1") == nil)
        #expect(t.current == "tcp://b:1")
        // Once registered somewhere, a may be named again.
        t.registered()
        #expect(t.redirected(to: "tcp://a:1") == .init(from: "tcp://b:1", to: "tcp://a:1"))
        // An active coordinator not in the list is added and moved to.
        #expect(t.redirected(to: "tcp://c:1") == .init(from: "tcp://a:1", to: "tcp://c:1"))
        #expect(t.endpoints == ["tcp://a:1", "tcp://b:1", "tcp://c:1"])
    }
}
