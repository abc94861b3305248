import Testing

@testable import Workers

/// Whether a search may run on the socket's thread follows how long the
/// recent ones took: quick ones let it, a run of slow ones stops it, and
/// quick ones again let it back.
@Suite struct SearchPaceTests {
    @Test func slowSearchesSendTheNextToTheThreadsAndQuickOnesBringThemBack() {
        let pace = SearchPace(limit: .milliseconds(1))
        #expect(pace.allowsInline)
        for _ in 0..<20 { pace.record(.microseconds(300)) }
        #expect(pace.allowsInline)
        // One slow search among quick ones does not stop it...
        pace.record(.milliseconds(4))
        #expect(pace.allowsInline)
        // ...a run of them does.
        for _ in 0..<6 { pace.record(.milliseconds(4)) }
        #expect(!pace.allowsInline)
        for _ in 0..<30 { pace.record(.microseconds(300)) }
        #expect(pace.allowsInline)
        // A search stuck for minutes counts as ten seconds, so the pace recovers.
        pace.record(.seconds(600))
        #expect(!pace.allowsInline)
        for _ in 0..<80 { pace.record(.microseconds(100)) }
        #expect(pace.allowsInline)
    }
}
