import Testing

@testable import Workers

/// A worker registers once for a burst of `unregistered` answers: while a
/// registration it sent is unanswered and recent, another is not sent.
@Suite struct LinkStateTests {
    @Test func aRegistrationOnItsWayAnswersTheBurst() throws {
        let state = LinkState()
        #expect(!state.awaitsRegistration(within: .seconds(3)))
        state.registrationSent()
        #expect(state.awaitsRegistration(within: .seconds(3)))
        #expect(!state.awaitsRegistration(within: .zero))  // too old: send again
        state.setRegistered(true)
        #expect(!state.awaitsRegistration(within: .seconds(3)))
    }
}
