import ArgumentParser
import Foundation
import Items
import LimelightClient
import PredicateQuery
import WireProtocol

/// `limelight predicate`: a CloudKit-style query, `CKQuery(recordType:predicate:)`.
struct PredicateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "predicate",
        abstract: "Run a CloudKit-style predicate query, e.g. --record-type Employee 'favoriteColor == %@' --arg red.",
        discussion: """
            The next page's cursor, when there is one, is the last line of standard error: `cursor TOKEN`; \
            pass it back with --cursor and the same record type, predicate, arguments and sort. \
            Arguments are read as JSON when they parse as JSON and as text otherwise: red, 5, \
            '{"latitude": 37.33, "longitude": -122.03}' (a location), '{"recordName": "e1"}' (a reference).
            """)

    @Argument(help: "The predicate format string (NSPredicate syntax, CloudKit's subset unless --dialect nspredicate).")
    var predicate: String
    @Option(name: .customLong("record-type"), help: "The record type: items whose contentType is exactly this.")
    var recordType: String
    @Option(help: "cloudkit (CloudKit's rules, the default) or nspredicate (OR, ENDSWITH, LIKE, MATCHES, ALL, NONE, [cd]).")
    var dialect: String = "cloudkit"
    @Option(help: "Sort keys, comma-separated: KEY or KEY:desc (ties are broken by the unique identifier).")
    var sort: String?
    @Option(help: "At most this many results (CKQueryOperation's resultsLimit).") var limit: Int?
    @Option(help: "Resume after the last result of a previous page: its cursor.") var cursor: String?
    @Option(
        name: [.customLong("fetch"), .customLong("fetch-attributes")],
        help: "Attributes to return, comma-separated (default: all).") var fetch: String?
    @Option(name: .customLong("arg"), help: "A value for %@ or %K, in order; repeatable.") var arguments: [String] = []
    @Flag(help: "Print one JSON object per item per line, and nothing else on standard output.") var json = false
    @Option(help: "Deadline in milliseconds.") var deadlineMs: Int?
    @OptionGroup var endpoint: EndpointOptions

    /// JSON when the text parses as JSON, text otherwise (DESIGN.md's rule for `--arg`).
    static func argument(_ text: String) -> JSONValue {
        (try? JSONValue.parse(text)) ?? .string(text)
    }

    static func sortKeys(_ spec: String?) -> [JSONValue]? {
        guard let spec, !spec.isEmpty else { return nil }
        return spec.split(separator: ",").map { part in
            let s = part.trimmingCharacters(in: .whitespaces)
            let pieces = s.split(separator: ":", maxSplits: 1)
            let desc = pieces.count == 2 && pieces[1].lowercased().hasPrefix("desc")
            return .object(["attribute": .string(String(pieces[0])), "ascending": .bool(!desc)])
        }
    }

    func validate() throws {
        guard ["cloudkit", "nspredicate"].contains(dialect) else {
            throw ValidationError("--dialect is cloudkit or nspredicate, not '\(dialect)'")
        }
    }

    func run() async throws {
        // A bad predicate exits 2 with its position whether or not a server answers.
        let parser = PredicateQueryParser(dialect: dialect == "nspredicate" ? .nspredicate : .cloudkit)
        do throws(PredicateQueryError) {
            _ = try parser.parse(recordType: recordType, predicate, arguments: arguments.map(Self.argument))
        } catch {
            throw QueryCommand.badQuery(error.description, position: error.offset, in: predicate)
        }
        let client = try await connect(endpoint)
        defer { client.close() }
        let fetchList = fetch.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        let request = Body.QueryRequest(
            language: dialect, fetchAttributes: fetchList, sort: Self.sortKeys(sort), limit: limit,
            deadlineMs: deadlineMs, recordType: recordType, predicate: predicate,
            arguments: arguments.map(Self.argument), cursor: cursor)
        let handle = client.query(request)
        guard
            let completion = try await QueryCommand.stream(
                handle, json: json, fetch: fetchList, text: predicate,
                rejected: ["bad_query", "invalid_query", "invalid_cursor", "unsupported_language"])
        else { return }
        if !json {
            printError(
                "\(completion.count) record\(completion.count == 1 ? "" : "s") in \(completion.elapsedMs) ms\(completion.cancelled ? " (cancelled)" : "")"
            )
        }
        for f in completion.failedShards { printError("limelight: shard \(f.shard) missing from the result: \(f.reason)") }
        if let next = completion.cursor { printError("cursor \(next)") }
        if !completion.failedShards.isEmpty { throw ExitCode(ExitCodes.missingShards) }
    }
}
