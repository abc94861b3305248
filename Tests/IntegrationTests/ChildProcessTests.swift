import Foundation
import Testing

/// The tests' own way of running commands (``ChildProcess``): it must never
/// hang a test, which is what it is for.
@Suite struct ChildProcessTests {
    /// A child that outlives its limit is stopped, and said to have timed out.
    @Test func aHangingChildIsStoppedAtItsLimit() throws {
        let started = Date()
        let r = try ChildProcess.run("/bin/sleep", ["60"], limit: 1)
        #expect(r.timedOut)
        #expect(Date().timeIntervalSince(started) < 20)
    }

    /// A child that writes far more than a pipe holds on standard error
    /// before it writes standard output finishes, with both outputs whole.
    @Test func bothOutputsAreReadAtOnce() throws {
        let script = "head -c 300000 /dev/zero | tr '\\\\0' e >&2; echo out"
        let r = try ChildProcess.run("/bin/sh", ["-c", script], limit: 60)
        #expect(!r.timedOut && r.status == 0)
        #expect(r.stderr.count == 300_000)
        #expect(String(decoding: r.stdout, as: UTF8.self) == "out\n")
    }

    /// Standard input gets what is given, then its end.
    @Test func inputReachesTheChild() throws {
        let r = try ChildProcess.run("/bin/cat", [], input: Data("a line\n".utf8), limit: 60)
        #expect(!r.timedOut && String(decoding: r.stdout, as: UTF8.self) == "a line\n")
    }
}
