import ArgumentParser
import ControlPlane
import Foundation

/// `limelight control-plane`: reads and writes the cluster's control plane
/// (docs/architecture.md, "Control plane and failover") — who is active and
/// with which epoch, and single keys, for operators and scripts.
struct ControlPlaneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "control-plane", abstract: "Show and change the cluster's control plane (etcd or a local file).",
        subcommands: [
            ControlPlaneStatusCommand.self, ControlPlaneGetCommand.self, ControlPlanePutCommand.self, ControlPlaneListCommand.self,
            ControlPlaneIncrementCommand.self,
        ])
}

struct ControlPlaneOptions: ParsableArguments {
    @Option(help: "etcd://HOST:PORT[,HOST:PORT…] or file:///PATH.") var controlPlane: String
    @Option(help: "The cluster's name there.") var cluster = "default"

    func open() throws -> any ControlPlaneStore {
        do { return try openControlPlane(controlPlane) } catch {
            printError("limelight control-plane: \(error)")
            throw ExitCode(ExitCodes.badInput)
        }
    }

    var keys: ClusterKeys { ClusterKeys(cluster: cluster) }
}

/// Runs a control-plane call; an unreachable store exits 3, as an unreachable server does.
func controlPlaneCall<T>(_ body: () async throws(ControlPlaneError) -> T) async throws -> T {
    do { return try await body() } catch {
        printError("limelight control-plane: \(error)")
        throw ExitCode(error.code == .unreachable ? ExitCodes.unreachable : ExitCodes.badInput)
    }
}

/// `status`: the epoch and the active coordinator, one JSON object.
struct ControlPlaneStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "The coordinator epoch and the active coordinator, as JSON.")
    @OptionGroup var options: ControlPlaneOptions

    func run() async throws {
        let store = try options.open()
        let keys = options.keys
        let read = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.range(keys.coordinatorPrefix, prefix: true) }
        var out: [String: Any] = ["epoch": Int(read.first(keys.epoch)?.string ?? "") ?? 0, "revision": read.revision]
        if let active = read.first(keys.active).flatMap({ ActiveCoordinator.decode($0.value) }) {
            out["active"] = ["id": active.id, "epoch": active.epoch, "clients": active.clients, "workers": active.workers]
        } else {
            out["active"] = NSNull()
        }
        let data = try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])
        printLine(String(decoding: data, as: UTF8.self))
    }
}

struct ControlPlaneGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a key's value (exit 1 when it does not exist).")
    @OptionGroup var options: ControlPlaneOptions
    @Argument(help: "The key, below the cluster's prefix (e.g. coordinator/epoch).") var key: String

    func run() async throws {
        let store = try options.open()
        let full = options.keys.root + key
        guard let kv = try await controlPlaneCall({ () async throws(ControlPlaneError) in try await store.get(full) }) else {
            printError("limelight control-plane: no key \(full)")
            throw ExitCode(1)
        }
        printLine(kv.string)
    }
}

struct ControlPlanePutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "put", abstract: "Set a key's value.")
    @OptionGroup var options: ControlPlaneOptions
    @Argument(help: "The key, below the cluster's prefix.") var key: String
    @Argument(help: "The value.") var value: String

    func run() async throws {
        let store = try options.open()
        let full = options.keys.root + key, value = Data(self.value.utf8)
        _ = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.put(full, value) }
    }
}

/// `increment`: adds one to an integer key `times` times, each by compare
/// and swap (read, then write only if unchanged since): processes running it
/// at once on one key lose no increment. Prints the values it wrote.
///
/// Each write also records who made it, at `KEY.by/N`, in the same
/// transaction: a write whose answer was lost (the etcd member died after
/// committing it) is recognised when read back, rather than taken for a
/// failed compare; and one committed later still (a proposal that outlived
/// its timeout) is named there, so every value has its writer.
struct ControlPlaneIncrementCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "increment", abstract: "Add one to an integer key, by compare-and-swap, --times times; print each value written.")
    @OptionGroup var options: ControlPlaneOptions
    @Argument(help: "The key, below the cluster's prefix.") var key: String
    @Option(help: "How many increments.") var times = 1
    @Option(help: "Who writes, as recorded at KEY.by/N (default HOST-PID).") var writer: String?

    func run() async throws {
        let store = try options.open()
        let full = options.keys.root + key
        let me = writer ?? "\(ProcessInfo.processInfo.hostName)-\(getpid())"
        var done = 0, attempt = 0
        while done < times {
            attempt += 1
            let token = Data("\(me) \(attempt)".utf8)
            let wrote = try await controlPlaneCall { () async throws(ControlPlaneError) -> Int? in
                let kv = try await store.get(full)
                let next = (Int(kv?.string ?? "0") ?? 0) + 1
                let t = Transaction(
                    if: [.unchanged(full, since: kv?.modRevision ?? 0)],
                    then: [.put(full, Data(String(next).utf8)), .put("\(full).by/\(next)", token)])
                do throws(ControlPlaneError) {
                    return try await store.commit(t).succeeded ? next : nil
                } catch {
                    // The answer was lost: the write may have been made.
                    guard error.code == .unreachable else { throw error }
                    return try await store.get("\(full).by/\(next)")?.value == token ? next : nil
                }
            }
            if let wrote {
                printLine(String(wrote))
                done += 1
            }
        }
    }
}

/// `list`: every key below a prefix, with its value, one per line.
struct ControlPlaneListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Print every key below a prefix and its value, one per line.")
    @OptionGroup var options: ControlPlaneOptions
    @Argument(help: "The prefix, below the cluster's.") var prefix: String = ""

    func run() async throws {
        let store = try options.open()
        let root = options.keys.root, full = root + prefix
        let found = try await controlPlaneCall { () async throws(ControlPlaneError) in try await store.range(full, prefix: true) }
        for kv in found.values { printLine("\(kv.key.dropFirst(root.count)) \(kv.string)") }
    }
}
