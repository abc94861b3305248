import Testing

@testable import Workers

/// When a query worker lets its mapped pages go (``ResidentBound``): past
/// its limit only, and less often while letting them go frees little,
/// unless the resident set grows again.
@Suite struct ResidentBoundTests {
    let mb = 1 << 20

    @Test func onlyPastTheLimit() {
        let bound = ResidentBound(limit: 1000 * mb)
        let now = ContinuousClock.now
        #expect(!bound.shouldRelease(resident: 1000 * mb, now: now))
        #expect(bound.shouldRelease(resident: 1000 * mb + 1, now: now))
    }

    @Test func aReleaseThatFreesMuchLeavesTheNextCheckFree() {
        var bound = ResidentBound(limit: 1000 * mb)
        let now = ContinuousClock.now
        bound.released(before: 1500 * mb, after: 600 * mb, now: now)
        #expect(bound.releases == 1 && bound.notBefore == nil)
        #expect(bound.shouldRelease(resident: 1100 * mb, now: now))
    }

    @Test func releasesThatFreeLittleWaitTwiceAsLongEachTimeUpToTheLongest() {
        var bound = ResidentBound(limit: 1600 * mb)
        var now = ContinuousClock.now
        var waits: [Duration] = []
        for _ in 0..<9 {
            bound.released(before: 2000 * mb, after: 1950 * mb, now: now)  // 50 MB freed: under a sixteenth
            waits.append(bound.wait)
            #expect(!bound.shouldRelease(resident: 2000 * mb, now: now + bound.wait - .milliseconds(1)))
            #expect(bound.shouldRelease(resident: 2000 * mb, now: now + bound.wait))
            now += bound.wait
        }
        #expect(waits == [1, 2, 4, 8, 16, 32, 64, 64, 64].map { Duration.seconds($0) })
        // One that frees a sixteenth or more ends the waiting.
        bound.released(before: 2000 * mb, after: 1900 * mb, now: now)
        #expect(bound.wait == .zero && bound.shouldRelease(resident: 2000 * mb, now: now))
    }

    @Test func aWaitEndsOnceTheResidentSetHasGrownASixteenthSinceTheRelease() {
        var bound = ResidentBound(limit: 1600 * mb)
        let now = ContinuousClock.now
        bound.released(before: 1700 * mb, after: 1680 * mb, now: now)  // idle: 20 MB freed
        #expect(bound.wait == .seconds(1))
        let soon = now + .milliseconds(500)
        #expect(!bound.shouldRelease(resident: 1680 * mb + 99 * mb, now: soon))
        #expect(bound.shouldRelease(resident: 1680 * mb + 100 * mb, now: soon))
    }

    @Test func theResidentBytesOfThisProcessAreRead() throws {
        let resident = try #require(ResidentBound.resident())
        #expect(resident > 1 * mb && resident < 64 * 1024 * mb)
    }
}
