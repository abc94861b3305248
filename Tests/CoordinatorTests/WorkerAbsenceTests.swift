import Testing

@testable import Coordinator

/// When an active coordinator steps down for want of workers (``WorkerAbsence``).
@Suite struct WorkerAbsenceTests {
    func step(_ a: inout WorkerAbsence, _ live: Int, _ at: ContinuousClock.Instant) -> Bool { a.observe(live: live, at: at) }

    @Test func stepsDownOnceNoWorkerHasBeenLiveForTheTimeAfterSomeWere() {
        var a = WorkerAbsence(after: .seconds(6))
        let t = ContinuousClock.now
        #expect(!step(&a, 3, t))
        #expect(!step(&a, 0, t + .seconds(1)))
        #expect(!step(&a, 0, t + .seconds(6.9)))
        #expect(step(&a, 0, t + .seconds(7)))
    }

    @Test func aWorkerBackStartsTheWaitAgain() {
        var a = WorkerAbsence(after: .seconds(6))
        let t = ContinuousClock.now
        _ = a.observe(live: 1, at: t)
        _ = a.observe(live: 0, at: t + .seconds(1))
        #expect(!step(&a, 1, t + .seconds(5)))
        #expect(!step(&a, 0, t + .seconds(8)))
        #expect(!step(&a, 0, t + .seconds(13.9)))
        #expect(step(&a, 0, t + .seconds(14)))
    }

    /// A coordinator that has heard from no worker since it took over keeps
    /// the role however long that lasts: losing every worker hands the role
    /// over once, not back and forth.
    @Test func neverWithoutHavingHadWorkers() {
        var a = WorkerAbsence(after: .seconds(6))
        let t = ContinuousClock.now
        for s in stride(from: 0.0, through: 600, by: 0.5) { #expect(!step(&a, 0, t + .seconds(s))) }
        #expect(!a.hadWorkers)
    }
}
