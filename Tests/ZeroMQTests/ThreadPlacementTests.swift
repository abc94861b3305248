import Foundation
import Testing
@testable import ZeroMQ

/// The CPUs a thread of this process may run on, from /proc (the kernel's
/// own account, not the call that set it).
private func allowedCPUs(thread tid: String) throws -> String {
    let status = try String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)
    let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
    return line.split(separator: "\t").last.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
}

/// The process's threads named `name` (Linux keeps 15 characters of it).
private func threads(named name: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").filter { tid in
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
        return comm.trimmingCharacters(in: .whitespacesAndNewlines) == String(name.prefix(15))
    }
}

@Suite("ThreadPlacement (sockets' threads beside ZeroMQ's I/O thread)")
struct ThreadPlacementTests {
    @Test func aPlacedContextPinsItsIOThreadAndItsSocketsOwnerThreads() async throws {
        let cpus = ProcessInfo.processInfo.activeProcessorCount
        // The last CPU, so that the test tells a pin from the default (on a
        // one-CPU machine every thread is on CPU 0 anyway, and that is all
        // it can check).
        let cpu = cpus - 1
        let context = try Context(placement: .cpu(cpu))
        #expect(context.placement == .cpu(cpu))
        let before = Set(try threads(named: "ZMQbg/IO/0"))
        let name = "placed-\(getpid() % 10000)"
        let router = try AsyncSocket(context: context, type: .router, name: name) { try $0.bind("tcp://127.0.0.1:0") }
        defer { router.close() }
        let owner = try #require(try threads(named: name).first)
        #expect(try allowedCPUs(thread: owner) == String(cpu))
        let io = try threads(named: "ZMQbg/IO/0").filter { !before.contains($0) }
        #expect(io.count == 1)
        for t in io { #expect(try allowedCPUs(thread: t) == String(cpu)) }

        // The default leaves them to the kernel: every CPU allowed.
        let free = try Context()
        #expect(free.placement == .anywhere)
        let name2 = "free-\(getpid() % 10000)"
        let other = try AsyncSocket(context: free, type: .router, name: name2) { try $0.bind("tcp://127.0.0.1:0") }
        defer { other.close() }
        let freeOwner = try #require(try threads(named: name2).first)
        #expect(try allowedCPUs(thread: freeOwner) == (cpus == 1 ? "0" : "0-\(cpus - 1)"))
    }

    @Test func hereIsTheCPUTheContextIsMadeOn() throws {
        let context = try Context(placement: .here)
        guard case .cpu(let cpu) = context.placement else {
            Issue.record("here resolved to \(context.placement)")
            return
        }
        #expect(cpu >= 0 && cpu < ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test func aCPUThisProcessMayNotRunOnIsRefusedByNumber() {
        do {
            _ = try Context(placement: .cpu(4000))
            Issue.record("CPU 4000 was accepted")
        } catch let error as ZMQError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("CPU 4000"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func theFlagsForm() {
        #expect(ThreadPlacement("here") == .here)
        #expect(ThreadPlacement("anywhere") == .anywhere)
        #expect(ThreadPlacement("3") == .cpu(3))
        #expect(ThreadPlacement("-1") == nil)
        #expect(ThreadPlacement("fast") == nil)
        #expect(ThreadPlacement.cpu(2).description == "2")
    }
}
