import Foundation
import Testing
import ZeroMQ

@testable import LimelightCLI

/// The configuration layers of the server commands: which flags a file, the
/// environment and the command line become, and in which order.
@Suite struct ServerSettingsTests {
    func file(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-\(UUID().uuidString).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func fileThenEnvironmentThenCommandLine() throws {
        let path = try file(#"{"log": {"format": "json"}, "coordinator": {"shards": 3, "noStats": true, "listen": "tcp://0.0.0.0:7700"}}"#)
        let args = try ServerSettings.arguments(
            role: .coordinator, commandLine: ["--config", path, "--shards", "6"],
            environment: ["LIMELIGHT_SHARDS": "5", "LIMELIGHT_LOG_LEVEL": "debug"])
        // The file's settings, then the environment's, then the command line; a key a stronger source sets
        // is dropped from the weaker ones (the file's and the environment's --shards here).
        #expect(
            args == [
                "--log-format", "json", "--listen", "tcp://0.0.0.0:7700", "--no-stats",
                "--log-level", "debug", "--config", path, "--shards", "6",
            ])
        let withoutFlag = try ServerSettings.arguments(
            role: .coordinator, commandLine: ["--config", path],
            environment: ["LIMELIGHT_SHARDS": "5"])
        #expect(
            withoutFlag == [
                "--log-format", "json", "--listen", "tcp://0.0.0.0:7700", "--no-stats",
                "--shards", "5", "--config", path,
            ])
    }

    @Test func theEnvironmentNamesTheConfigurationFile() throws {
        let path = try file(#"{"indexer": {"shards": [0, 1, 5], "data": "/srv"}, "query": {"concurrency": 2}}"#)
        let args = try ServerSettings.arguments(role: .indexer, commandLine: [], environment: ["LIMELIGHT_CONFIG": path])
        #expect(args == ["--data", "/srv", "--shards", "0,1,5"])
    }

    /// Where the socket threads run: a setting of every server, whose value
    /// the command checks (a CPU's number, here, anywhere).
    @Test func theSocketCPUIsASettingOfEveryServer() throws {
        let path = try file(#"{"coordinator": {"socketCpu": "1"}, "query": {"socketCpu": "anywhere"}}"#)
        #expect(
            try ServerSettings.arguments(role: .coordinator, commandLine: ["--config", path], environment: [:])
                == ["--socket-cpu", "1", "--config", path])
        #expect(
            try ServerSettings.arguments(role: .query, commandLine: ["--config", path], environment: [:])
                == ["--socket-cpu", "anywhere", "--config", path])
        #expect(
            try ServerSettings.arguments(role: .indexer, commandLine: [], environment: ["LIMELIGHT_SOCKET_CPU": "0"])
                == ["--socket-cpu", "0"])
        #expect(throws: (any Error).self) { try QueryWorkerCommand.parse(["--data", "/d", "--shards", "0", "--socket-cpu", "fast"]) }
        let parsed = try QueryWorkerCommand.parse(["--data", "/d", "--shards", "0", "--socket-cpu", "1"])
        #expect(parsed.worker.socketCpu == .cpu(1))
        #expect(try CoordinatorCommand.parse([]).socketCpu == .here)
    }

    @Test func aStrongerStatsSettingDropsTheOther() throws {
        let path = try file(#"{"coordinator": {"statsPort": 7000}}"#)
        var args = try ServerSettings.arguments(
            role: .coordinator, commandLine: ["--config=\(path)", "--stats-listen", "0.0.0.0:1"],
            environment: ["LIMELIGHT_STATS_PORT": "7001"])
        #expect(args == ["--config=\(path)", "--stats-listen", "0.0.0.0:1"])
        args = try ServerSettings.arguments(
            role: .coordinator, commandLine: ["--config", path],
            environment: ["LIMELIGHT_STATS_LISTEN": "0.0.0.0:2"])
        #expect(args == ["--stats-listen", "0.0.0.0:2", "--config", path])
    }

    @Test(arguments: [
        (#"{"coordinator": {"shardz": 1}}"#, "coordinator.shardz is not a setting"),
        (#"{"coordinator": {"shards": 1.5}}"#, "coordinator.shards must be an integer, not number"),
        (#"{"indexer": {"shards": ["a"]}}"#, "indexer.shards must list shard numbers"),
        (#"{"log": 3}"#, "'log' must be an object"),
        (#"[1]"#, "expected a JSON object of sections"),
    ])
    func faultsNameTheFileAndKey(json: String, message: String) throws {
        let path = try file(json)
        let role: ServerSettings.Role = json.contains("indexer") ? .indexer : .coordinator
        #expect {
            _ = try ServerSettings.arguments(role: role, commandLine: ["--config", path], environment: [:])
        } throws: { error in
            "\(error)".hasPrefix(path) && "\(error)".contains(message)
        }
    }

    @Test func aFlagSettingMustBeABoolean() {
        #expect(throws: ServerSettings.SettingsError.self) {
            _ = try ServerSettings.arguments(role: .coordinator, commandLine: [], environment: ["LIMELIGHT_NO_STATS": "maybe"])
        }
        #expect((try? ServerSettings.arguments(role: .coordinator, commandLine: [], environment: ["LIMELIGHT_NO_STATS": "false"])) == [])
    }

    @Test func hostAndPort() throws {
        #expect(try parseHostPort("127.0.0.1:7780", option: "--x") == ("127.0.0.1", 7780))
        #expect(try parseHostPort("[::1]:0", option: "--x") == ("::1", 0))
        #expect(try parseHostPort("coordinator.internal:80", option: "--x") == ("coordinator.internal", 80))
        for bad in ["7780", ":7780", "host:", "host:65536", "host:http", "[::1]7780"] {
            #expect(throws: (any Error).self, "\(bad)") { try parseHostPort(bad, option: "--stats-listen") }
        }
    }
}

/// `limelight up` gives every child the same `--socket-cpu`.
@Suite struct UpSocketPlacementTests {
    @Test func hereIsResolvedOnceForEveryChild() throws {
        #expect(UpCommand.socketArguments(option: nil, environment: [:], currentCPU: 1) == ["--socket-cpu", "1"])
        #expect(UpCommand.socketArguments(option: .here, environment: [:], currentCPU: 0) == ["--socket-cpu", "0"])
        #expect(UpCommand.socketArguments(option: .cpu(3), environment: [:], currentCPU: 0) == ["--socket-cpu", "3"])
        #expect(UpCommand.socketArguments(option: .anywhere, environment: [:], currentCPU: 0) == ["--socket-cpu", "anywhere"])
        // Unknown CPU: each child takes its own.
        #expect(UpCommand.socketArguments(option: nil, environment: [:], currentCPU: nil) == ["--socket-cpu", "here"])
        // The environment's setting reaches the children by itself; a flag still wins.
        #expect(UpCommand.socketArguments(option: nil, environment: ["LIMELIGHT_SOCKET_CPU": "1"], currentCPU: 0) == [])
        #expect(UpCommand.socketArguments(option: .cpu(0), environment: ["LIMELIGHT_SOCKET_CPU": "1"], currentCPU: 0) == ["--socket-cpu", "0"])
        // A bad value is refused where the flag is read.
        #expect(throws: (any Error).self) { try UpCommand.parse(["--socket-cpu", "fast"]) }
        #expect(try UpCommand.parse(["--socket-cpu", "1"]).socketCpu == .cpu(1))
    }

    /// `--memory-budget`: bytes, or K, M, G as powers of 1,024; anything
    /// else is refused by the parser. Settable from the environment too.
    @Test func memoryBudgetsReadAsBytes() throws {
        #expect(MemorySize(argument: "1048576")?.bytes == 1 << 20)
        #expect(MemorySize(argument: "512M")?.bytes == 512 << 20)
        #expect(MemorySize(argument: "512mb")?.bytes == 512 << 20)
        #expect(MemorySize(argument: "1.5G")?.bytes == 3 << 29)
        #expect(MemorySize(argument: "64k")?.bytes == 64 << 10)
        for bad in ["", "M", "-1", "12X", "1.5", "lots"] { #expect(MemorySize(argument: bad) == nil, "\(bad)") }
        #expect(MemorySize.defaultQueryBudget.bytes == Int(ProcessInfo.processInfo.physicalMemory / 16))
        let args = try ServerSettings.arguments(role: .query, commandLine: [], environment: ["LIMELIGHT_MEMORY_BUDGET": "256M"])
        #expect(args.contains("--memory-budget") && args.contains("256M"))
    }
}
