import ArgumentParser
import Foundation
import Items
import LimelightClient
import Logging
import QueryPlan
import SearchParameters
import ShardStore
import SpotlightQuery
import WireProtocol
import ZeroMQ

/// A `limelight up` started for a benchmark: its data folder, its client
/// endpoint, and a stop that ends it and removes the folder.
struct BenchCluster {
    let dir: String
    let endpoint: String
    let process: Process
    /// `limelight up`'s ready line: `ready ENDPOINT STATS-URL REST-URL`.
    let readyLine: String
    /// Each process of the cluster (`up`'s children, named by their `--id`,
    /// or `coordinator`) and its resident memory in MB, from /proc: all of
    /// it, and its anonymous and file-backed parts (`RssAnon`, `RssFile`:
    /// mapped derived files and the binary count in the second).
    func residentMemory() -> [(name: String, megabytes: Int, anonymous: Int, file: Int)] {
        var out: [(String, Int, Int, Int)] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where Int32(entry) != nil {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let ppid = stat.split(separator: ")").last?.split(separator: " ").dropFirst().first.flatMap({ Int32($0) }),
                ppid == process.processIdentifier,
                let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                let status = ProcStatus(pid: entry)
            else { continue }
            let argv = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            let name =
                argv.firstIndex(of: "--id").flatMap { argv.indices.contains($0 + 1) ? argv[$0 + 1] : nil }
                ?? (argv.first.map { ($0 as NSString).lastPathComponent } ?? entry)
            out.append((name, status.kb("VmRSS") / 1024, status.kb("RssAnon") / 1024, status.kb("RssFile") / 1024))
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// Bytes of the cluster's data folder (shards, their logs, keys).
    func dataBytes() -> Int { dataBytes(matching: { _ in true }) }

    /// The admin key `limelight up` wrote; nil when it runs keyless.
    var adminKey: String? {
        FileManager.default.contents(atPath: dir + "/limelight.key").map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// A secured key made from `parent` with `filters`, by `limelight keys
    /// secure` (no call to the server), as an app's backend makes one.
    func securedKey(binDir: String, parent: String, filters: String) throws -> String {
        let (output, status) = try runToEnd(binDir + "/limelight", ["keys", "secure", "--parent", parent, "--filters", filters])
        guard status == 0 else { throw ValidationError("limelight keys secure failed") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `limelight up` with `min(shards, 2)` indexers and query workers
    /// (as the benchmark's figures are taken) and waits for its "ready" line.
    init(binDir: String, shards n: Int, extra: [String] = [], socketCPU: ThreadPlacement? = nil) throws {
        dir = NSTemporaryDirectory() + "limelight-cbench-\(UUID().uuidString)"
        let up = Process()
        up.executableURL = URL(fileURLWithPath: binDir + "/limelight")
        up.arguments =
            [
                "up", "--data", dir, "--listen", "tcp://127.0.0.1:0", "--stats-port", "0", "--shards", String(n),
                "--indexers", String(min(n, 2)), "--query-workers", String(min(n, 2)), "--log-level", "warning",
            ] + extra
        if let socketCPU {
            // Every process of the cluster reads it (--socket-cpu).
            up.environment = ProcessInfo.processInfo.environment.merging(["LIMELIGHT_SOCKET_CPU": socketCPU.description]) { $1 }
        }
        let out = Pipe()
        up.standardOutput = out
        try up.run()
        process = up
        var buf = Data()
        while !buf.contains(0x0A) {
            let d = out.fileHandleForReading.availableData
            if d.isEmpty { break }
            buf.append(d)
        }
        let ready = String(decoding: buf, as: UTF8.self).split(separator: " ")
        guard ready.first == "ready", ready.count > 1 else {
            kill(up.processIdentifier, SIGTERM); up.waitUntilExit()
            throw ValidationError("cluster did not start")
        }
        endpoint = String(ready[1]).trimmingCharacters(in: .whitespacesAndNewlines)
        readyLine = String(decoding: buf, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    }

    func stop() {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: dir)
    }
}
