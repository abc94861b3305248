import ArgumentParser
import Foundation
import Items
import LimelightClient
import Synchronization
import WireProtocol

/// `limelight publish`: reads items as JSON Lines and publishes them in batches.
///
/// Several batches are in flight at once (`--window`), and each waits for its
/// acknowledgement, which the coordinator sends only after every live replica
/// has committed: the window is the back-pressure, so a slow indexer slows the
/// producer rather than filling queues. A line `{"customAttributeKey": {...}}`
/// declares a custom attribute before the items after it.
///
/// Batches are cut by size as well as by count (`--batch-bytes`), and a line
/// longer than `--max-item-bytes` is a rejected item like any other, found
/// without reading it into memory: so no valid item can make a message exceed
/// the server's limit (32 MiB by default), and the items around a huge one
/// are stored.
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
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish items from JSON Lines files (or - for standard input).")

    @Argument(help: "JSONL files; - reads standard input.") var files: [String] = ["-"]
    @Option(help: "Items per batch.") var batchSize = 1000
    @Option(help: "Bytes of JSON per batch, at most (a larger item goes alone).") var batchBytes = 8 << 20
    @Option(help: "The largest item accepted, in bytes of its line; a longer line is rejected, and the rest of the file published.")
    var maxItemBytes = 16 << 20
    @Option(help: "Batches in flight at once.") var window = 4
    @Option(help: "Seconds to wait for one attempt's acknowledgement before sending the batch again.") var ackTimeout = 30.0
    @Option(help: "Seconds after a batch's first attempt during which unacknowledged items are sent again.") var retryFor = 300.0
    @Flag(help: "Never show the progress bar.") var quiet = false
    @OptionGroup var endpoint: EndpointOptions

    func validate() throws {
        guard batchSize >= 1, window >= 1 else { throw ValidationError("--batch-size and --window must be at least 1") }
        guard batchBytes >= 1, maxItemBytes >= 1 else { throw ValidationError("--batch-bytes and --max-item-bytes must be at least 1") }
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
        var batchLineBytes = 0
        var sources: [Source] = []
        var bytesRead = 0
        var linesRead = 0

        let ackTimeout = Duration.milliseconds(Int(self.ackTimeout * 1000)), retryFor = Duration.milliseconds(Int(self.retryFor * 1000))
        // A refusal of a whole batch (a refused key, a malformed message) is
        // the same for every batch: said once, and the publish stops.
        do {
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
                        printError(
                            "\(src[i].file):\(src[i].line): not acknowledged \(uid) after \(outcome.attempts) attempts in \(Int(self.retryFor)) s: \(outcome.lastFailure ?? "no answer")"
                        )
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
                    batchLineBytes = 0
                    sources = []
                }
                for file in files {
                    let name = file == "-" ? "stdin" : file
                    var lineNo = 0
                    for try await read in LineReader(path: file, limit: maxItemBytes) {
                        lineNo += 1
                        linesRead += 1
                        bytesRead += read.fileBytes
                        guard case .text(let line) = read else {
                            rejected += 1
                            printError(
                                "\(name):\(lineNo): rejected: item is \(read.fileBytes - 1) bytes, more than the limit of \(maxItemBytes) (--max-item-bytes)"
                            )
                            continue
                        }
                        if line.allSatisfy(\.isWhitespace) { continue }
                        let value: JSONValue
                        do { value = try JSONValue.parse(line) } catch {
                            rejected += 1
                            printError(
                                "\(name):\(lineNo): rejected: not valid JSON\(whereNotJSON(line))"
                            )
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
                        if !batch.isEmpty, batchLineBytes + line.utf8.count > batchBytes { try await flush() }
                        batch.append(value)
                        batchLineBytes += line.utf8.count
                        sources.append(Source(file: name, line: lineNo))
                        if batch.count >= batchSize { try await flush() }
                    }
                }
                try await flush()
                while let (outcome, src, sent) = try await group.next() { collect(outcome, src, sent) }
            }
        } catch let e as ClientError {
            progress.finish()
            printError("published \(stored) item\(stored == 1 ? "" : "s") before the server refused a batch")
            throw failure(e, "publish", refused: ExitCodes.rejected)
        }
        progress.finish()
        printError(
            "published \(stored) item\(stored == 1 ? "" : "s")\(rejected > 0 ? ", rejected \(rejected)" : "")"
                + (unacknowledged > 0 ? ", not acknowledged \(unacknowledged)" : "") + (resent > 0 ? " (\(resent) resent)" : ""))
        if unacknowledged > 0 { throw ExitCode(ExitCodes.unacknowledged) }
        if rejected > 0 { throw ExitCode(ExitCodes.rejected) }
    }
}

/// A progress bar on standard error, redrawn at most ten times a second.
final class Progress: Sendable {
    let enabled: Bool
    let totalBytes: Int
    let started = Date()
    private let lastDraw = Mutex(Date.distantPast)

    init(enabled: Bool, totalBytes: Int) {
        self.enabled = enabled
        self.totalBytes = totalBytes
    }

    /// `items` acknowledged so far; `read` lines and `bytes` read so far, from
    /// which the total number of items is estimated (acknowledgements trail reading).
    func update(items: Int, read: Int, bytes: Int) {
        guard enabled,
            lastDraw.withLock({ last in
                guard Date().timeIntervalSince(last) > 0.1 else { return false }
                last = Date()
                return true
            })
        else { return }
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
///
/// A line longer than `limit` bytes is not held: its bytes are counted up to
/// the next newline and dropped, and it comes back as ``Line/tooLong(bytes:)``,
/// so one huge line costs no memory and no parse, and the lines after it are
/// read as usual.
struct LineReader: AsyncSequence {
    enum Line: Sendable, Equatable {
        case text(String)
        /// A line of `bytes` bytes (without its newline), more than the limit.
        case tooLong(bytes: Int)

        /// The bytes the line took in the file, its newline included.
        var fileBytes: Int {
            switch self {
            case .text(let s): s.utf8.count + 1
            case .tooLong(let n): n + 1
            }
        }
    }

    typealias Element = Line
    let path: String
    var limit = Int.max
    var chunkBytes = 1 << 20

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        let limit: Int
        let chunkBytes: Int
        var buffer = Data()
        var start = 0
        var eof = false
        /// Bytes of an over-long line dropped so far; nil while none is being skipped.
        var skipped: Int?

        init(path: String, limit: Int, chunkBytes: Int) {
            handle = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
            self.limit = limit
            self.chunkBytes = chunkBytes
        }

        mutating func next() async throws -> Line? {
            guard let handle else { return nil }
            while true {
                let unread = buffer[(buffer.startIndex + start)...]
                if let nl = unread.firstIndex(of: 0x0A) {
                    let length = nl - unread.startIndex
                    start = nl + 1 - buffer.startIndex
                    if let n = skipped {
                        skipped = nil
                        return .tooLong(bytes: n + length)
                    }
                    if length > limit { return .tooLong(bytes: length) }
                    return .text(String(decoding: unread[..<nl], as: UTF8.self))
                }
                if eof {
                    if let n = skipped {
                        skipped = nil
                        start = buffer.count
                        return .tooLong(bytes: n + unread.count)
                    }
                    if unread.isEmpty { return nil }
                    start = buffer.count
                    if unread.count > limit { return .tooLong(bytes: unread.count) }
                    return .text(String(decoding: unread, as: UTF8.self))
                }
                if skipped != nil || unread.count > limit {
                    // No newline in more than the limit: drop what is held
                    // and count the rest of the line as it comes.
                    skipped = (skipped ?? 0) + unread.count
                    buffer = Data()
                } else {
                    // Keep only the unread tail before reading more.
                    buffer = Data(unread)
                }
                start = 0
                let chunk = handle.readData(ofLength: chunkBytes)
                if chunk.isEmpty { eof = true } else { buffer.append(chunk) }
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(path: path, limit: limit, chunkBytes: chunkBytes) }
}
