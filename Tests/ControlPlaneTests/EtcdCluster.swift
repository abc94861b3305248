import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real 3-member etcd cluster on loopback ports, in a temporary folder,
/// started by the test that needs it and stopped (with its folder removed)
/// when `stop()` is called. etcd must be installed (`scripts/install-deps
/// --tests`): a missing etcd fails the test, it is not skipped.
final class EtcdCluster: @unchecked Sendable {
    // @unchecked Sendable: `processes` changes only in `kill(_:)` and `stop()`,
    // which one test calls from one task.
    struct Member {
        var name: String
        var client: Int
        var peer: Int
        var url: String { "http://127.0.0.1:\(client)" }
    }

    let folder: URL
    let members: [Member]
    var processes: [Int: Process] = [:]

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(size: Int = 3) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-etcd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var ports = try freePorts(size * 2)
        members = (0..<size).map { i in Member(name: "m\(i)", client: ports.removeFirst(), peer: ports.removeFirst()) }
        let etcd = ["/usr/bin/etcd", "/usr/local/bin/etcd"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let etcd else { throw Failure(description: "etcd is not installed: run scripts/install-deps --tests (Debian's etcd-server)") }
        let initial = members.map { "\($0.name)=http://127.0.0.1:\($0.peer)" }.joined(separator: ",")
        for (i, m) in members.enumerated() {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: etcd)
            p.arguments = [
                "--name", m.name, "--data-dir", folder.appendingPathComponent(m.name).path,
                "--listen-client-urls", m.url, "--advertise-client-urls", m.url,
                "--listen-peer-urls", "http://127.0.0.1:\(m.peer)", "--initial-advertise-peer-urls", "http://127.0.0.1:\(m.peer)",
                "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", folder.lastPathComponent,
                "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "error",
            ]
            p.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            let log = folder.appendingPathComponent("\(m.name).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            p.standardError = try FileHandle(forWritingTo: log)
            try p.run()
            processes[i] = p
        }
    }

    var endpoint: String { "etcd://" + members.map { "127.0.0.1:\($0.client)" }.joined(separator: ",") }
    var urls: [String] { members.map(\.url) }

    /// Waits until a member is the leader and every live member knows it.
    func waitForLeader(timeout: Duration = .seconds(20)) async throws -> Int {
        let end = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < end {
            if let l = await leader() { return l }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "the etcd cluster elected no leader in \(timeout); logs in \(folder.path)")
    }

    /// The index of the leader, asked of the live members (`/v3/maintenance/status`).
    func leader() async -> Int? {
        var ids: [String: Int] = [:]
        var leaders: Set<String> = []
        for (i, m) in members.enumerated() where processes[i] != nil {
            guard let url = URL(string: m.url + "/v3/maintenance/status") else { continue }
            var r = URLRequest(url: url, timeoutInterval: 1)
            r.httpMethod = "POST"
            r.httpBody = Data("{}".utf8)
            guard let (data, _) = try? await URLSession.shared.data(for: r),
                let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let header = o["header"] as? [String: Any], let me = header["member_id"] as? String,
                let leader = o["leader"] as? String, leader != "0"
            else { return nil }
            ids[me] = i
            leaders.insert(leader)
        }
        guard leaders.count == 1, let l = leaders.first else { return nil }
        return ids[l]
    }

    /// SIGKILLs member `i`.
    func kill(_ i: Int) {
        guard let p = processes.removeValue(forKey: i) else { return }
        // A member that has ended is not signalled: its pid may be another process's now.
        if p.isRunning { Foundation.kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
    }

    func stop() {
        for i in processes.keys.sorted() { kill(i) }
        try? FileManager.default.removeItem(at: folder)
    }
}

/// Ports the kernel gives out now, for servers started next (bound to port 0, read, closed).
func freePorts(_ n: Int) throws -> [Int] {
    var fds: [Int32] = []
    defer { for fd in fds { close(fd) } }
    var ports: [Int] = []
    for _ in 0..<n {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        fds.append(fd)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { throw EtcdCluster.Failure(description: "cannot find a free port") }
        ports.append(Int(UInt16(bigEndian: addr.sin_port)))
    }
    return ports
}
