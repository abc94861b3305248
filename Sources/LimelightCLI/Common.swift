import ArgumentParser
import Foundation
import LimelightClient
import Logging
import Synchronization
import Tenancy

/// Exit codes of docs/design.md's command line.
package enum ExitCodes {
    /// Some items were rejected (each is named on standard error).
    package static let rejected: Int32 = 1
    /// The query (or other input) is malformed; the message names the position.
    package static let badInput: Int32 = 2
    /// The server could not be reached.
    package static let unreachable: Int32 = 3
    /// The result lacks shards; they are named on standard error.
    package static let missingShards: Int32 = 4
    /// Some published items were never acknowledged within the time limit
    /// (each is named on standard error): they may or may not be stored.
    package static let unacknowledged: Int32 = 5
    /// The server refused the key: none was sent where one is required, it is
    /// unknown, revoked or expired, or its role does not allow the request.
    /// One code for authentication and authorization alike, in every command,
    /// so a script tells "fix the key" from "fix the input".
    package static let notAllowed: Int32 = 6

    /// The wire error codes that exit ``notAllowed``: Tenancy's key refusals.
    static let accessCodes = Set(TenancyError.Code.keyRefusals.map(\.rawValue))
}

/// Prints why a request failed and gives the exit code for it: a refused key
/// exits ``ExitCodes/notAllowed`` (with where keys are looked for, when none
/// was sent), another refusal by the server `refused` (bad input unless the
/// caller says otherwise), and a client error (no answer) exits
/// ``ExitCodes/unreachable``. `what` names the request in the message.
func failure(_ error: ClientError, _ what: String? = nil, refused: Int32 = ExitCodes.badInput) -> ExitCode {
    let prefix = "limelight: " + (what.map { "\($0): " } ?? "")
    guard error.code == .server, let server = error.server else {
        printError(prefix + error.message)
        return ExitCode(ExitCodes.unreachable)
    }
    if ExitCodes.accessCodes.contains(server.code) {
        printError(prefix + "\(server.code): " + server.description)
        if server.code == "key_required" { printError("  " + ClientDefaults.missingKeyHint) }
        return ExitCode(ExitCodes.notAllowed)
    }
    printError(prefix + server.description)
    return ExitCode(refused)
}

/// Options every client command takes.
struct EndpointOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "Coordinator endpoint (default: $LIMELIGHT_ENDPOINT or tcp://127.0.0.1:7700); with standby coordinators, each one's, separated by commas: the active one is used."
    )
    var endpoint: String?

    @Option(name: .long, help: "Seconds to wait for the server to answer.")
    var timeout: Double = 5

    @OptionGroup var curve: ClientCurveOptions
    @Option(name: .long, help: "API key (default: $LIMELIGHT_KEY, else the key file; see --key-file).")
    var key: String?

    @Option(
        name: .long,
        help:
            "File holding the API key (default: $LIMELIGHT_KEY_FILE, else limelight.key in $LIMELIGHT_DATA or ./limelight-data, which limelight up writes)."
    )
    var keyFile: String?

    var resolved: String { endpoint ?? ClientDefaults.endpoint }

    /// The key requests carry, found as every client finds it
    /// (``ClientDefaults/key(_:keyFile:dataFolderFile:)``): `--key`,
    /// `$LIMELIGHT_KEY`, `--key-file`, `$LIMELIGHT_KEY_FILE`, then
    /// `defaultFile` in the data folder of `limelight up`.
    func resolvedKey(defaultFile: String = "limelight.key") throws -> String? {
        do { return try ClientDefaults.key(key, keyFile: keyFile, dataFolderFile: defaultFile) } catch {
            printError("limelight: \(error.message)")
            throw ExitCode(ExitCodes.badInput)
        }
    }
}

/// Options every server process takes.
struct ServerLogOptions: ParsableArguments {
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"
    @Option(name: .long, help: "Log lines as text, or as one JSON object each (json).")
    var logFormat: LogFormat = .text
    @Option(
        name: .long, help: "JSON configuration file (also $LIMELIGHT_CONFIG); flags and LIMELIGHT_* variables override it. See docs/operations.md.")
    var config: String?

    func logger(_ label: String) -> Logger {
        LoggingSetup.bootstrapOnce(format: logFormat)
        var l = Logger(label: label)
        l.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        return l
    }
}

enum LoggingSetup {
    /// Whether the logging system was set up: it may be, once per process.
    private static let done = Mutex(false)
    /// Logs go to standard error, so standard output stays for results.
    static func bootstrapOnce(format: LogFormat = .text) {
        // Held while bootstrapping, so that a second caller finds it done.
        done.withLock { done in
            guard !done else { return }
            done = true
            switch format {
            case .text: LoggingSystem.bootstrap { label in StreamLogHandler.standardError(label: label) }
            case .json: LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
            }
        }
    }
}

/// Writes a line to standard output at once (no buffering), for lines other programs wait for.
func printLine(_ s: String) {
    FileHandle.standardOutput.write(Data((s + "\n").utf8))
}

/// Writes to standard error.
func printError(_ s: String) {
    FileHandle.standardError.write(Data((s + "\n").utf8))
}

/// Shows where a fault is: `text` on standard error, indented, with a caret
/// under its character at `offset` (past the end: under its end).
func printCaret(under text: String, at offset: Int) {
    printError("  \(text)\n  \(String(repeating: " ", count: min(max(0, offset), text.count)))^")
}

/// Why a line of a JSON Lines file is not JSON, as ` (column N: what)`
/// after "not valid JSON"; empty when no fault can be placed.
func whereNotJSON(_ line: String) -> String {
    JSONSyntaxError.find(in: line).map { " (column \($0.column): \($0.message))" } ?? ""
}

/// Runs `body` until SIGINT or SIGTERM arrives, then cancels it and waits for it to finish.
///
/// The signals are watched before `body` starts: a server prints its ready
/// line from `body`, and a signal sent the moment that line is read must
/// find the watcher in place (while it is being installed, the signal is
/// ignored and would be lost).
func runUntilSignalled(_ body: @escaping @Sendable () async -> Void) async {
    // The task once started, and whether a signal came before it was.
    let state = Mutex<(task: Task<Void, Never>?, signalled: Bool)>((nil, false))
    let watcher = SignalWatcher(signals: [SIGINT, SIGTERM]) {
        state.withLock { s in
            s.signalled = true
            s.task?.cancel()
        }
    }
    let task = Task { await body() }
    state.withLock { s in
        s.task = task
        if s.signalled { task.cancel() }
    }
    await task.value
    _ = watcher
}
