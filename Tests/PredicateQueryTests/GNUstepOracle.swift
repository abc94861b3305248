import Foundation
import Items

/// GNUstep Base's `NSPredicate`, as a process: `GNUstepOracle/oracle.m`,
/// compiled once per test run with `gcc` and `gnustep-config` (Debian's
/// `gobjc` and `libgnustep-base-dev`, which `scripts/install-deps --tests`
/// installs), fed the records once and then one predicate a line.
///
/// Building it fails, never skips: a differential test without its
/// reference would pass on nothing.
final class GNUstepOracle {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// What the oracle said of one predicate.
    enum Answer {
        /// The ids it matches, and the records for which evaluating it raised
        /// an exception (with the reason), which Foundation answers for none.
        case matched(Set<String>, raised: [String: String])
        /// The format string was refused.
        case refused(String)
    }

    private let process = Process()
    private let input: FileHandle
    private let output: FileHandle
    private var buffered = Data()

    /// The compiled oracle, built once for all the tests that use it.
    private static let binary: Result<String, Failure> = build()

    private static func build() -> Result<String, Failure> {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("GNUstepOracle/oracle.m").path
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-oracle-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let binary = folder.appendingPathComponent("oracle").path
        let script = "gcc -std=gnu11 -w $(gnustep-config --objc-flags) '\(source)' -o '\(binary)' $(gnustep-config --base-libs)"
        let (status, log) = run("/bin/sh", ["-c", script])
        guard status == 0 else {
            return .failure(
                Failure(
                    description: """
                        the GNUstep oracle did not build (install gobjc and libgnustep-base-dev: scripts/install-deps --tests): \(log)
                        """))
        }
        return .success(binary)
    }

    private static func run(_ path: String, _ arguments: [String]) -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return (-1, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Starts an oracle over `records`: `{"id", "attributes"}` objects, dates as `{"$date": seconds}`.
    init(records: [JSONValue]) throws(Failure) {
        let binary = try Self.binary.get()
        process.executableURL = URL(fileURLWithPath: binary)
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        input = stdin.fileHandleForWriting
        output = stdout.fileHandleForReading
        do { try process.run() } catch { throw Failure(description: "the GNUstep oracle did not start: \(error)") }
        try send(.array(records))
    }

    deinit {
        try? input.close()
        process.waitUntilExit()
    }

    private func send(_ value: JSONValue) throws(Failure) {
        do { try input.write(contentsOf: Data((JSONWriter.string(value) + "\n").utf8)) } catch {
            throw Failure(description: "the GNUstep oracle stopped reading: \(error)")
        }
    }

    private func line() throws(Failure) -> String {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self)
                buffered.removeSubrange(buffered.startIndex...newline)
                return line
            }
            let more = output.availableData
            if more.isEmpty { throw Failure(description: "the GNUstep oracle exited") }
            buffered.append(more)
        }
    }

    /// Evaluates a format string with its arguments (dates as `{"$date": seconds}`, nil as null).
    func evaluate(_ format: String, _ arguments: [JSONValue]) throws(Failure) -> Answer {
        try send(.object(["format": .string(format), "arguments": .array(arguments)]))
        let text = try line()
        guard case .object(let o)? = try? JSONValue.parse(text) else { throw Failure(description: "the GNUstep oracle answered '\(text)'") }
        if let reason = o["error"]?.stringValue { return .refused(reason) }
        guard case .array(let ids)? = o["ids"] else { throw Failure(description: "the GNUstep oracle answered '\(text)'") }
        var raised: [String: String] = [:]
        if case .object(let r)? = o["raised"] {
            for (id, reason) in r { raised[id] = reason.stringValue ?? "" }
        }
        return .matched(Set(ids.compactMap(\.stringValue)), raised: raised)
    }
}
