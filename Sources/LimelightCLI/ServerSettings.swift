import ArgumentParser
import Foundation
import Items

/// One configuration file for every server process, with the environment and
/// the command line over it.
///
/// The file is JSON (`--config FILE`, or `$LIMELIGHT_CONFIG`), one section per
/// process and one for logging, each key a flag's name in camel case:
///
/// ```json
/// {"log": {"level": "info", "format": "json"},
///  "coordinator": {"listen": "tcp://0.0.0.0:7700", "workers": "tcp://0.0.0.0:7701",
///                  "statsListen": "0.0.0.0:7780", "shards": 8},
///  "indexer": {"coordinator": "tcp://10.0.0.1:7701", "data": "/var/lib/limelight", "shards": "0-3"},
///  "query": {"coordinator": "tcp://10.0.0.1:7701", "data": "/var/lib/limelight", "shards": [0, 1, 2, 3]}}
/// ```
///
/// so one file can be installed on every host. A setting is also read from
/// `LIMELIGHT_` and the key in upper snake case (`LIMELIGHT_STATS_LISTEN`,
/// `LIMELIGHT_LOG_FORMAT`). The command line wins over the environment, which
/// wins over the file: a setting a stronger source gives is dropped from the
/// weaker ones, and so is the other of two settings that exclude each other
/// (`statsListen`, `statsPort`). What remains becomes flags placed before the
/// command line's, so every setting is checked exactly as its flag is. A key
/// the process does not know, or a value of the wrong type, is an error naming
/// the file and the key: a misspelt setting that is silently ignored is worse
/// than one that stops the start.
package enum ServerSettings {
    package enum Role: String, Sendable { case coordinator, indexer, query }

    enum Kind { case text, integer, number, flag, shardList }

    struct Setting {
        var key: String
        var kind: Kind
        var flag: String { "--" + key.reduce(into: "") { s, c in s += c.isUppercase ? "-" + c.lowercased() : String(c) } }
        var environment: String { "LIMELIGHT_" + key.reduce(into: "") { s, c in s += c.isUppercase ? "_" + String(c) : c.uppercased() } }
    }

    static let log: [Setting] = [Setting(key: "logLevel", kind: .text), Setting(key: "logFormat", kind: .text)]
    static let worker: [Setting] = [
        Setting(key: "coordinator", kind: .text), Setting(key: "data", kind: .text),
        Setting(key: "shards", kind: .shardList), Setting(key: "id", kind: .text),
        Setting(key: "clusterSecretFile", kind: .text), Setting(key: "curveServerKey", kind: .text),
        Setting(key: "curveSecretKey", kind: .text), Setting(key: "socketCpu", kind: .text),
    ]
    static func settings(_ role: Role) -> [Setting] {
        switch role {
        case .coordinator:
            return [
                Setting(key: "listen", kind: .text), Setting(key: "workers", kind: .text),
                Setting(key: "statsListen", kind: .text), Setting(key: "statsPort", kind: .integer),
                Setting(key: "statsHost", kind: .text), Setting(key: "noStats", kind: .flag),
                Setting(key: "shards", kind: .integer), Setting(key: "heartbeatMs", kind: .integer),
                Setting(key: "livenessMs", kind: .integer), Setting(key: "deadlineMs", kind: .integer),
                Setting(key: "maxFrameBytes", kind: .integer), Setting(key: "maxPendingWrites", kind: .integer),
                Setting(key: "maxWaitingWrites", kind: .integer), Setting(key: "peerOutboxLimit", kind: .integer),
                Setting(key: "clusterSecretFile", kind: .text), Setting(key: "curveSecretKey", kind: .text),
                Setting(key: "clientKeys", kind: .text), Setting(key: "workerKeys", kind: .text),
                Setting(key: "keys", kind: .text), Setting(key: "requireKeys", kind: .flag),
                Setting(key: "masterKeyFile", kind: .text), Setting(key: "socketCpu", kind: .text),
            ]
        case .indexer: return worker + [Setting(key: "purgeInterval", kind: .number), Setting(key: "durability", kind: .text)]
        case .query: return worker + [Setting(key: "concurrency", kind: .integer), Setting(key: "memoryBudget", kind: .text)]
        }
    }
    static let exclusive: [Set<String>] = [["statsListen", "statsPort"]]

    /// A fault in the configuration file or the environment.
    package struct SettingsError: Error, CustomStringConvertible {
        package var description: String
    }

    /// The arguments the role's command parses: settings from the file, then
    /// the environment's, then `commandLine`.
    package static func arguments(role: Role, commandLine: [String], environment: [String: String]) throws -> [String] {
        let known = settings(role) + log
        let byFlag = Dictionary(uniqueKeysWithValues: known.map { ($0.flag, $0) })
        // What the command line sets, by key (`--flag value` and `--flag=value`).
        var strongest = Set<String>()
        var configPath = environment["LIMELIGHT_CONFIG"]
        var i = 0
        while i < commandLine.count {
            let token = commandLine[i]
            let name = String(token.split(separator: "=", maxSplits: 1).first ?? "")
            if let s = byFlag[name] { strongest.insert(s.key) }
            if name == "--config" {
                if token.contains("=") {
                    configPath = String(token.dropFirst("--config=".count))
                } else if i + 1 < commandLine.count {
                    configPath = commandLine[i + 1]; i += 1
                }
            }
            i += 1
        }

        var fromEnvironment: [(Setting, String)] = []
        for s in known {
            if let v = environment[s.environment] { fromEnvironment.append((s, v)) }
        }
        let fromFile = try configPath.map { try read(path: $0, role: role, known: known) } ?? []

        func excluded(_ key: String, by stronger: Set<String>) -> Bool {
            stronger.contains(key) || exclusive.contains { $0.contains(key) && !$0.isDisjoint(with: stronger) }
        }
        var envArgs: [String] = []
        var envKeys = Set<String>()
        for (s, v) in fromEnvironment where !excluded(s.key, by: strongest) {
            envArgs += try flagArguments(s, text: v, source: "$\(s.environment)")
            envKeys.insert(s.key)
        }
        var fileArgs: [String] = []
        for (s, args) in fromFile where !excluded(s.key, by: strongest.union(envKeys)) {
            fileArgs += args
        }
        return fileArgs + envArgs + commandLine
    }

    static func flagArguments(_ s: Setting, text: String, source: String) throws -> [String] {
        switch s.kind {
        case .flag:
            switch text.lowercased() {
            case "1", "true", "yes": return [s.flag]
            case "0", "false", "no", "": return []
            default: throw SettingsError(description: "\(source) must be true or false, not '\(text)'")
            }
        default:
            return [s.flag, text]
        }
    }

    /// The file's settings for `role`, as flags.
    static func read(path: String, role: Role, known: [Setting]) throws -> [(Setting, [String])] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsError(description: "cannot read the configuration file \(path)")
        }
        let root: JSONValue
        do { root = try JSONValue.parse(data) } catch {
            let why = JSONSyntaxError.find(in: String(decoding: data, as: UTF8.self)).map { "\($0)" } ?? "\(error)"
            throw SettingsError(description: "\(path) is not JSON: \(why)")
        }
        guard case .object(let sections) = root else { throw SettingsError(description: "\(path): expected a JSON object of sections") }
        let sectionNames: Set<String> = ["log", "coordinator", "indexer", "query"]
        for name in sections.keys.sorted() where !sectionNames.contains(name) {
            throw SettingsError(description: "\(path): '\(name)' is not a section (expected log, coordinator, indexer, query)")
        }
        var out: [(Setting, [String])] = []
        func take(_ section: String, _ settings: [Setting], prefix: String) throws {
            guard let value = sections[section] else { return }
            guard case .object(let fields) = value else { throw SettingsError(description: "\(path): '\(section)' must be an object") }
            let byKey = Dictionary(uniqueKeysWithValues: settings.map { (String($0.key.dropFirst(prefix.count)).lowercasedFirst, $0) })
            for (key, v) in fields.sorted(by: { $0.key < $1.key }) {
                guard let s = byKey[key] else {
                    throw SettingsError(
                        description: "\(path): \(section).\(key) is not a setting (known: \(byKey.keys.sorted().joined(separator: ", ")))")
                }
                out.append((s, try arguments(s, v, where: "\(path): \(section).\(key)")))
            }
        }
        try take("log", log, prefix: "log")
        try take(role.rawValue, settings(role), prefix: "")
        return out
    }

    static func arguments(_ s: Setting, _ v: JSONValue, where place: String) throws -> [String] {
        switch (s.kind, v) {
        case (.text, .string(let t)): return [s.flag, t]
        case (.integer, .number(let n)) where n == n.rounded(): return [s.flag, String(Int(n))]
        case (.number, .number(let n)): return [s.flag, String(n)]
        case (.flag, .bool(let b)): return b ? [s.flag] : []
        case (.shardList, .string(let t)): return [s.flag, t]
        case (.shardList, .array(let xs)):
            let shards = xs.compactMap { x -> Int? in if case .number(let n) = x, n == n.rounded(), n >= 0 { return Int(n) } else { return nil } }
            guard shards.count == xs.count, !shards.isEmpty else { throw SettingsError(description: "\(place) must list shard numbers") }
            return [s.flag, shards.map(String.init).joined(separator: ",")]
        default:
            let expected = ["text", "an integer", "a number", "true or false", "a shard list (\"0-3\" or [0, 1])"]
            let k: Int
            switch s.kind {
            case .text: k = 0;
            case .integer: k = 1;
            case .number: k = 2;
            case .flag: k = 3;
            case .shardList: k = 4
            }
            throw SettingsError(description: "\(place) must be \(expected[k]), not \(v.kindName)")
        }
    }
}

extension String {
    var lowercasedFirst: String { prefix(1).lowercased() + dropFirst() }
}

/// The three server commands read `ServerSettings` before their flags.
package protocol ConfigurableServerCommand: AsyncParsableCommand {
    static var role: ServerSettings.Role { get }
}

extension ConfigurableServerCommand {
    /// `main()` with the configuration file and the environment applied: a
    /// fault in either exits 64 (as a bad flag does), naming it.
    package static func mainWithSettings() async {
        let args: [String]
        do {
            args = try ServerSettings.arguments(
                role: role, commandLine: Array(CommandLine.arguments.dropFirst()),
                environment: ProcessInfo.processInfo.environment)
        } catch {
            printError("Error: \(error)")
            Foundation.exit(64)
        }
        await main(args)
    }
}

extension CoordinatorCommand: ConfigurableServerCommand { package static var role: ServerSettings.Role { .coordinator } }
extension IndexerCommand: ConfigurableServerCommand { package static var role: ServerSettings.Role { .indexer } }
extension QueryWorkerCommand: ConfigurableServerCommand { package static var role: ServerSettings.Role { .query } }
