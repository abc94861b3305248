import CZeroMQ
import Foundation
import Testing

@testable import ZeroMQ

/// The CPUs a thread of this process may run on, from /proc (the kernel's
/// own account, not the call that set it).
private func allowedCPUs(thread tid: String) throws -> String {
    let status = try String(contentsOfFile: tid == "self" ? "/proc/thread-self/status" : "/proc/self/task/\(tid)/status", encoding: .utf8)
    let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
    return line.split(separator: "\t").last.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
}

/// A kernel CPU list ("0-3,6") as numbers.
private func cpuList(_ text: String) -> [Int] {
    text.split(separator: ",").flatMap { part -> [Int] in
        let ends = part.split(separator: "-").compactMap { Int($0) }
        return ends.count == 2 ? Array(ends[0]...ends[1]) : ends
    }
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
        let allowed = ThreadPlacement.allowedCPUs()
        // The last CPU this process may use, so that the test tells a pin
        // from the default (with one CPU every thread is on it anyway, and
        // that is all it can check).
        let cpu = try #require(allowed.last)
        let context = try Context(placement: .cpu(cpu))
        #expect(context.placement == .cpu(cpu))
        // Other tests make contexts at the same time, so this one's I/O
        // thread is told from theirs by a name prefix of its own
        // ("<prefix>/ZMQbg/IO/0"), set before its first socket starts it.
        let prefix = Int32(getpid() % 1000)
        #expect(zmq_ctx_set(context.handle, ZMQ_THREAD_NAME_PREFIX, prefix) == 0)
        let name = "placed-\(getpid() % 10000)"
        let router = try AsyncSocket(context: context, type: .router, name: name) { try $0.bind("tcp://127.0.0.1:0") }
        defer { router.close() }
        let owner = try #require(try threads(named: name).first)
        #expect(try allowedCPUs(thread: owner) == String(cpu))
        // The I/O thread names (and pins) itself once it runs, which a
        // loaded machine can leave for after the socket is bound: wait.
        var io = try threads(named: "\(prefix)/ZMQbg/IO/0")
        let end = Date().addingTimeInterval(10)
        while io.isEmpty, Date() < end {
            try await Task.sleep(for: .milliseconds(20))
            io = try threads(named: "\(prefix)/ZMQbg/IO/0")
        }
        #expect(io.count == 1)
        for t in io { #expect(try allowedCPUs(thread: t) == String(cpu)) }

        // The default leaves them to the kernel: every CPU allowed.
        let free = try Context()
        #expect(free.placement == .anywhere)
        let name2 = "free-\(getpid() % 10000)"
        let other = try AsyncSocket(context: free, type: .router, name: name2) { try $0.bind("tcp://127.0.0.1:0") }
        defer { other.close() }
        let freeOwner = try #require(try threads(named: name2).first)
        #expect(cpuList(try allowedCPUs(thread: freeOwner)) == allowed)
    }

    @Test func theAllowedCPUsAreThisProcesssOwn() {
        let cpus = ThreadPlacement.allowedCPUs()
        // What the kernel says this thread may use.
        #expect(cpus == cpuList(try! allowedCPUs(thread: "self")))
        #expect(!cpus.isEmpty)
        #expect(ThreadPlacement.currentCPU().map(cpus.contains) == true)
    }

    @Test func hereIsTheCPUTheContextIsMadeOn() throws {
        let context = try Context(placement: .here)
        guard case .cpu(let cpu) = context.placement else {
            Issue.record("here resolved to \(context.placement)")
            return
        }
        #expect(ThreadPlacement.allowedCPUs().contains(cpu))
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
