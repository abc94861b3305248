import ArgumentParser
import Foundation
import Items
import LimelightClient
import WireProtocol

/// `limelight search`: a parameter search with Algolia's parameters; prints
/// the response object and nothing else on standard output.
struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Search with Algolia's parameters, e.g. --params '{\"query\": \"vim\", \"facets\": [\"section\"]}'.",
        discussion: "Prints the JSON response (hits, nbHits, facets, …) on standard output. --params @FILE reads the parameters from a file.")

    @Option(help: "The search parameters as a JSON object, or @FILE.") var params: String = "{}"
    @Option(help: "Also rank by meaning: the text to embed (sets the parameters' semantic.query).") var semantic: String?
    @Option(help: "With --semantic: its weight, 0 (words alone) to 1 (meaning alone); default 0.5.") var ratio: Double?
    @Option(help: "Deadline in milliseconds.") var deadlineMs: Int?
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let text: String
        if params.hasPrefix("@") {
            let path = String(params.dropFirst())
            guard let data = FileManager.default.contents(atPath: path) else {
                printError("limelight: cannot read the parameters file \(path)")
                throw ExitCode(ExitCodes.badInput)
            }
            text = String(decoding: data, as: UTF8.self)
        } else {
            text = params
        }
        let parsed = try parseParameters(text, option: "--params", source: params.hasPrefix("@") ? String(params.dropFirst()) : nil)
        guard case .object(var fields) = parsed else {
            printError("limelight: --params must be a JSON object of search parameters")
            throw ExitCode(ExitCodes.badInput)
        }
        if ratio != nil, semantic == nil {
            printError("limelight: --ratio needs --semantic TEXT")
            throw ExitCode(ExitCodes.badInput)
        }
        if let semantic {
            var s: [String: JSONValue] = ["query": .string(semantic)]
            if let ratio { s["ratio"] = .number(ratio) }
            fields["semantic"] = .object(s)
        }
        let value = JSONValue.object(fields)
        let client = try await connect(endpoint)
        defer { client.close() }
        let result: Body.SearchResult
        do {
            result = try await client.search(value, deadlineMs: deadlineMs, timeout: .seconds(max(endpoint.timeout, 30)))
        } catch let e as ClientError where e.code == .server && !ExitCodes.accessCodes.contains(e.server?.code ?? "") {
            printError("limelight: bad search: \(e.server?.description ?? e.message)")
            if let s = e.server, s.field == "filters", let pos = s.position, let filters = value["filters"]?.stringValue {
                printCaret(under: filters, at: pos)
            }
            throw ExitCode(ExitCodes.badInput)
        } catch let e as ClientError {
            throw failure(e)
        }
        printLine(result.response.serializedString())
        if !result.failedShards.isEmpty {
            for f in result.failedShards { printError("limelight: shard \(f.shard) missing from the result: \(f.reason)") }
            throw ExitCode(ExitCodes.missingShards)
        }
    }
}

/// Parses a JSON object given on the command line (or in the file `source`),
/// or exits 2 naming the option and, for text that is not JSON, the line and
/// column of the fault with a caret under it.
func parseParameters(_ text: String, option: String, source: String? = nil) throws -> JSONValue {
    do { return try JSONValue.parse(text) } catch {
        let from = source.map { " (\($0))" } ?? ""
        guard let fault = JSONSyntaxError.find(in: text) else {
            printError("limelight: \(option)\(from) is not valid JSON")
            throw ExitCode(ExitCodes.badInput)
        }
        printError("limelight: \(option)\(from) is not valid JSON: \(fault)")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if fault.line <= lines.count {
            printCaret(under: String(lines[fault.line - 1]), at: fault.column - 1)
        }
        throw ExitCode(ExitCodes.badInput)
    }
}
