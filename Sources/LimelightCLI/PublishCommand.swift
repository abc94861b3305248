import ArgumentParser
import Foundation
import Items
import LimelightClient
import WireProtocol

/// `limelight publish`: reads items as JSON Lines and publishes them in batches.
///
/// Several batches are in flight at once (`--window`), and each waits for its
/// acknowledgement, which the coordinator sends only after every live replica
/// has committed: the window is the back-pressure, so a slow indexer slows the
/// producer rather than filling queues. A line `{"customAttributeKey": {...}}`
/// declares a custom attribute before the items after it.
///
/// At least once: a batch whose acknowledgement does not come within
/// `--ack-timeout` seconds (a restarted coordinator, a reconnect), or whose
/// items come back `shard_unavailable` (an indexer died before committing),
/// is sent again — what is left of it — until every item is acknowledged or
/// `--retry-for` seconds have passed since its first attempt. Upserts are
/// idempotent, so a resent item is stored once. Exit status 0 only when every
/// item was acknowledged as stored; 1 when some were rejected; 5 when some
/// were never acknowledged (each named on standard error with its line).
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "publish",
                                                    abstract: "Publish items from JSON Lines files (or - for standard input).")

    @Argument(help: "JSONL files; - reads standard input.") var files: [String] = ["-"]
    @Option(help: "Items per batch.") var batchSize = 1000
    @Option(help: "Batches in flight at once.") var window = 4
    @Option(help: "Seconds to wait for one attempt's acknowledgement before sending the batch again.") var ackTimeout = 30.0
    @Option(help: "Seconds after a batch's first attempt during which unacknowledged items are sent again.") var retryFor = 300.0
    @Flag(help: "Never show the progress bar.") var quiet = false
    @OptionGroup var endpoint: EndpointOptions

    func validate() throws {
        guard batchSize >= 1, window >= 1 else { throw ValidationError("--batch-size and --window must be at least 1") }
        guard ackTimeout > 0, retryFor >= 0 else { throw ValidationError("--ack-timeout must be more than 0 and --retry-for at least 0") }
    }

    struct Source: Sendable {
        var file: String
        var line: Int
    }

    func run() async throws {
        let client = try await connect(endpoint)
        defer { client.close() }
        var totalBytes = 0
        for f in files where f != "-" {
            guard let attrs = try? FileManager.default.attributesOfItem(atPath: f) else {
                printError("limelight: cannot read \(f)")
                throw ExitCode(ExitCodes.badInput)
            }
            totalBytes += (attrs[.size] as? Int) ?? 0
        }
        let progress = Progress(enabled: !quiet && isatty(STDERR_FILENO) == 1 && totalBytes > 1_000_000, totalBytes: totalBytes)
        var stored = 0, rejected = 0, unacknowledged = 0, resent = 0
        var batch: [JSONValue] = []
        var sources: [Source] = []
        var bytesRead = 0
        var linesRead = 0

        let ackTimeout = Duration.milliseconds(Int(self.ackTimeout * 1000)), retryFor = Duration.milliseconds(Int(self.retryFor * 1000))
        try await withThrowingTaskGroup(of: (PublishOutcome, [Source], [JSONValue]).self) { group in
            var inFlight = 0
            func collect(_ outcome: PublishOutcome, _ src: [Source], _ items: [JSONValue]) {
                stored += outcome.stored
                resent += outcome.resentItems
                for r in outcome.rejected {
                    rejected += 1
                    let s = r.index < src.count ? src[r.index] : Source(file: "?", line: 0)
                    printError("\(s.file):\(s.line): rejected \(r.uniqueIdentifier ?? "item"): \(r.error?.description ?? "unknown reason")")
                }
                for i in outcome.unacknowledged {
                    unacknowledged += 1
                    let uid = items[i]["uniqueIdentifier"]?.stringValue ?? "item"
                    printError("\(src[i].file):\(src[i].line): not acknowledged \(uid) after \(outcome.attempts) attempts in \(Int(self.retryFor)) s: \(outcome.lastFailure ?? "no answer")")
                }
                progress.update(items: stored + rejected, read: linesRead, bytes: bytesRead)
            }
            func flush() async throws {
                guard !batch.isEmpty else { return }
                if inFlight >= window, let (outcome, src, sent) = try await group.next() {
                    inFlight -= 1
                    collect(outcome, src, sent)
                }
                let items = batch, src = sources
                let batchID = UUID().uuidString
                group.addTask {
                    (try await client.publishUntilAcknowledged(items, batch: batchID, retryFor: retryFor, attemptTimeout: ackTimeout), src, items)
                }
                inFlight += 1
                batch = []
                sources = []
            }
            for file in files {
                let name = file == "-" ? "stdin" : file
                var lineNo = 0
                for try await line in LineReader(path: file) {
                    lineNo += 1
                    linesRead += 1
                    bytesRead += line.utf8.count + 1
                    if line.allSatisfy(\.isWhitespace) { continue }
                    let value: JSONValue
                    do { value = try JSONValue.parse(line) } catch {
                        rejected += 1
                        printError("\(name):\(lineNo): rejected: not valid JSON")
                        continue
                    }
                    if let decl = value["customAttributeKey"] {
                        try await flush()
                        while inFlight > 0, let (outcome, src, sent) = try await group.next() { inFlight -= 1; collect(outcome, src, sent) }
                        do {
                            let d = try JSONDecoder().decode(AttributeDeclaration.self, from: decl.serialized())
                            try await client.declare([d])
                        } catch {
                            rejected += 1
                            printError("\(name):\(lineNo): rejected declaration: \(error)")
                        }
                        continue
                    }
                    batch.append(value)
                    sources.append(Source(file: name, line: lineNo))
                    if batch.count >= batchSize { try await flush() }
                }
            }
            try await flush()
            while let (outcome, src, sent) = try await group.next() { collect(outcome, src, sent) }
        }
        progress.finish()
        printError("published \(stored) item\(stored == 1 ? "" : "s")\(rejected > 0 ? ", rejected \(rejected)" : "")"
            + (unacknowledged > 0 ? ", not acknowledged \(unacknowledged)" : "") + (resent > 0 ? " (\(resent) resent)" : ""))
        if unacknowledged > 0 { throw ExitCode(ExitCodes.unacknowledged) }
        if rejected > 0 { throw ExitCode(ExitCodes.rejected) }
    }
}

/// A progress bar on standard error, redrawn at most ten times a second.
final class Progress: @unchecked Sendable {
    // Only touched from the publishing task.
    let enabled: Bool
    let totalBytes: Int
    let started = Date()
    var lastDraw = Date.distantPast

    init(enabled: Bool, totalBytes: Int) {
        self.enabled = enabled
        self.totalBytes = totalBytes
    }

    /// `items` acknowledged so far; `read` lines and `bytes` read so far, from
    /// which the total number of items is estimated (acknowledgements trail reading).
    func update(items: Int, read: Int, bytes: Int) {
        guard enabled, Date().timeIntervalSince(lastDraw) > 0.1 else { return }
        lastDraw = Date()
        let estimatedTotal = bytes > 0 ? Double(read) * Double(totalBytes) / Double(bytes) : 0
        let fraction = estimatedTotal > 0 ? min(1, Double(items) / estimatedTotal) : 0
        let width = 30
        let filled = Int(fraction * Double(width))
        let rate = Double(items) / max(0.001, Date().timeIntervalSince(started))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let line = "\r\(bar) \(Int(fraction * 100))%  \(items) items  \(Int(rate)) items/s "
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

/// Reads a file (or standard input) line by line without loading it whole.
struct LineReader: AsyncSequence {
    typealias Element = String
    let path: String

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        var buffer = Data()
        var eof = false

        init(path: String) {
            handle = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
        }

        var start = 0

        mutating func next() async throws -> String? {
            guard let handle else { return nil }
            while true {
                if let nl = buffer[(buffer.startIndex + start)...].firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[(buffer.startIndex + start)..<nl], as: UTF8.self)
                    start = nl + 1 - buffer.startIndex
                    return line
                }
                if eof {
                    if start >= buffer.count { return nil }
                    let line = String(decoding: buffer[(buffer.startIndex + start)...], as: UTF8.self)
                    start = buffer.count
                    return line
                }
                // Keep only the unread tail before reading more.
                buffer = Data(buffer[(buffer.startIndex + start)...])
                start = 0
                let chunk = handle.readData(ofLength: 1 << 20)
                if chunk.isEmpty { eof = true } else { buffer.append(chunk) }
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(path: path) }
}
