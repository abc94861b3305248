import ArgumentParser
import Foundation
import Items
import LimelightClient
import WireProtocol

/// Runs a request, turning a refused key into exit 6, another refusal by the
/// server into exit 2 and a lost server into exit 3 (``failure(_:_:refused:)``).
func runRequest<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let e as ClientError {
        throw failure(e, what)
    }
}

/// Names the shards a result lacks on standard error and exits 4, if any.
func reportMissing(_ failed: [ShardFailure]) throws {
    guard !failed.isEmpty else { return }
    for f in failed { printError("limelight: shard \(f.shard) missing from the result: \(f.reason)") }
    throw ExitCode(ExitCodes.missingShards)
}

/// `limelight entities donate|delete|associate`.
struct EntitiesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "entities", abstract: "Donate, delete and associate App Intents entities.",
        subcommands: [Donate.self, Delete.self, Associate.self])

    struct Donate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Donate entities from a JSON Lines file (- for standard input).",
            discussion: """
                One entity a line: {"type", "id", "displayRepresentation": {"title", "subtitle", "image"}, \
                "properties": {indexing key: value}, "priority", "domainIdentifier"}. With --json, one \
                {"index", "uniqueIdentifier", "status", "error"} line per entity.
                """)
        @Argument(help: "The JSON Lines file.") var file: String
        @Option(help: "The batch's priority (overrides each entity's).") var priority: Double?
        @Option(help: "Entities per request.") var batchSize = 500
        @Flag(help: "Print one JSON object per entity per line, and nothing else on standard output.") var json = false
        @OptionGroup var endpoint: EndpointOptions

        func run() async throws {
            let data: Data?
            if file == "-" { data = FileHandle.standardInput.readDataToEndOfFile() } else { data = FileManager.default.contents(atPath: file) }
            guard let data else {
                printError("limelight: cannot read \(file)")
                throw ExitCode(ExitCodes.badInput)
            }
            var entities: [JSONValue] = []
            for (n, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let t = line.trimmingCharacters(in: .whitespaces)
                if t.isEmpty { continue }
                do { entities.append(try JSONValue.parse(t)) } catch {
                    printError(
                        "limelight: \(file):\(n + 1): not valid JSON\(whereNotJSON(t))"
                    )
                    throw ExitCode(ExitCodes.badInput)
                }
            }
            let client = try await connect(endpoint)
            defer { client.close() }
            var stored = 0, rejected = 0
            var start = 0
            while start < entities.count {
                let batch = Array(entities[start..<min(entities.count, start + max(1, batchSize))])
                let ack = try await runRequest("donate") { try await client.donateEntities(batch, priority: priority) }
                for r in ack.results {
                    let index = start + r.index
                    if json {
                        var o: [String: JSONValue] = [
                            "index": .number(Double(index)), "status": .string(r.status.rawValue),
                            "uniqueIdentifier": r.uniqueIdentifier.map(JSONValue.string) ?? .null,
                        ]
                        if let e = r.error { o["error"] = .string(e.description) }
                        printLine(JSONValue.object(o).serializedString())
                    }
                    if r.status == .rejected { printError("limelight: entity \(index + 1) rejected: \(r.error?.description ?? "?")") }
                }
                stored += ack.stored
                rejected += ack.rejected
                start += batch.count
            }
            if !json { printError("\(stored) entities stored, \(rejected) rejected") }
            if rejected > 0 { throw ExitCode(ExitCodes.rejected) }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete entities of a type: some ids, or every one of the type.")
        @Option(help: "The entity type.") var type: String
        @Option(help: "Entity ids, comma-separated (default: every entity of the type).") var ids: String?
        @Flag(help: "Print {\"deleted\": N} and nothing else on standard output.") var json = false
        @OptionGroup var endpoint: EndpointOptions

        func run() async throws {
            let client = try await connect(endpoint)
            defer { client.close() }
            let list = ids.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            let n = try await runRequest("delete entities") { try await client.deleteEntities(type: type, ids: list) }
            if json { printLine(JSONValue.object(["deleted": .number(Double(n))]).serializedString()) } else { printLine("deleted \(n)") }
        }
    }

    struct Associate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Associate a stored item with an entity (its results then carry it).")
        @Option(help: "The item's uniqueIdentifier.") var item: String
        @Option(help: "The entity type.") var type: String
        @Option(help: "The entity id.") var id: String
        @Option(help: "The entity's priority in ranking.") var priority: Double = 0
        @Flag(help: "Print {\"associated\": ID} and nothing else on standard output.") var json = false
        @OptionGroup var endpoint: EndpointOptions

        func run() async throws {
            let client = try await connect(endpoint)
            defer { client.close() }
            try await runRequest("associate") {
                try await client.associateEntity(item: item, EntityAssociation(type: type, id: id, priority: priority))
            }
            if json { printLine(JSONValue.object(["associated": .string(item)]).serializedString()) } else { printLine("associated \(item)") }
        }
    }
}

/// Geo and other parameters shared by `suggest` and `spotlight`.
struct TypedQueryOptions: ParsableArguments {
    @Option(help: "Only items within --radius metres of this point, nearest first: LAT,LNG.") var around: String?
    @Option(help: "Metres around --around.") var radius: Double?
    @Option(help: "Only items inside this box: LAT1,LNG1,LAT2,LNG2.") var insideBox: String?
    @Option(help: "More search parameters as a JSON object (Algolia's names).") var params: String?

    func value() throws -> JSONValue? {
        var o: [String: JSONValue] = [:]
        if let params {
            guard case .object(let p) = try parseParameters(params, option: "--params") else {
                printError("limelight: --params must be a JSON object of search parameters")
                throw ExitCode(ExitCodes.badInput)
            }
            o = p
        }
        if let around { o["aroundLatLng"] = .string(around) }
        if let radius { o["aroundRadius"] = .number(radius) }
        if let insideBox {
            let n = insideBox.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard n.count == 4 else {
                printError("limelight: --inside-box needs LAT1,LNG1,LAT2,LNG2")
                throw ExitCode(ExitCodes.badInput)
            }
            o["insideBoundingBox"] = .array([.array(n.map { .number($0) })])
        }
        return o.isEmpty ? nil : .object(o)
    }

    /// Connects and runs a typed-text request with these options'
    /// parameters, exiting as ``runRequest(_:_:)`` says on an error.
    func request<T>(
        _ what: String, _ endpoint: EndpointOptions,
        _ body: (LimelightClient, JSONValue?) async throws -> T
    ) async throws -> T {
        let params = try value()
        let client = try await connect(endpoint)
        defer { client.close() }
        return try await runRequest(what) { try await body(client, params) }
    }
}

/// `limelight suggest`: completions of typed text.
struct SuggestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suggest", abstract: "Suggest completions of typed text, best first, with how many items each finds.")
    @Argument(help: "The typed text.") var text: String
    @Option(help: "Suggestions wanted.") var limit = 10
    @Flag(help: "Print one {\"suggestion\", \"count\"} per line and nothing else on standard output.") var json = false
    @OptionGroup var options: TypedQueryOptions
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let r = try await options.request("suggest", endpoint) { client, params in try await client.suggest(text, limit: limit, params: params) }
        for s in r.suggestions {
            printLine(
                json
                    ? JSONValue.object(["suggestion": .string(s.suggestion), "count": .number(Double(s.count))]).serializedString()
                    : "\(s.suggestion)\t\(s.count)")
        }
        try reportMissing(r.failedShards)
    }
}

/// `limelight spotlight`: the grouped view.
struct SpotlightCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spotlight", abstract: "Search typed text as Spotlight shows it: the best few of each domain, best group first.")
    @Argument(help: "The typed text.") var text: String
    @Option(help: "Results per group.") var perDomain = 3
    @Flag(help: "Print one {\"domainIdentifier\", \"total\", \"items\", \"continuation\"} per line and nothing else on standard output.") var json =
        false
    @OptionGroup var options: TypedQueryOptions
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let r = try await options.request("spotlight", endpoint) { client, params in
            try await client.spotlight(text, perDomain: perDomain, params: params)
        }
        for g in r.groups {
            if json {
                printLine(
                    JSONValue.object([
                        "domainIdentifier": .string(g.domainIdentifier), "total": .number(Double(g.total)),
                        "items": .array(g.items), "continuation": .string(g.continuation),
                    ]).serializedString())
            } else {
                printLine("\(g.domainIdentifier.isEmpty ? "(no domain)" : g.domainIdentifier) — \(g.total)")
                for item in g.items {
                    printLine("  \(item["objectID"]?.stringValue ?? "?")\t\(item["title"]?.stringValue ?? "")")
                }
                printLine("  more: limelight continue \(g.continuation)")
            }
        }
        try reportMissing(r.failedShards)
    }
}

/// `limelight continue`: a page of a group's full list.
struct ContinueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "continue", abstract: "Resume a Spotlight group's full result list from its continuation token.",
        discussion: "Prints the page's items, one a line; while another page follows, the last line of standard error is 'page N'.")
    @Argument(help: "The group's continuation token.") var token: String
    @Option(help: "The page (from 0).") var page = 0
    @Option(help: "Items per page.") var hitsPerPage = 20
    @Flag(help: "Print one hit object per line and nothing else on standard output.") var json = false
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let client = try await connect(endpoint)
        defer { client.close() }
        let r = try await runRequest("continue") { try await client.continueSearch(token, page: page, hitsPerPage: hitsPerPage) }
        for hit in r.response["hits"]?.arrayValue ?? [] {
            printLine(json ? hit.serializedString() : "\(hit["objectID"]?.stringValue ?? "?")\t\(hit["title"]?.stringValue ?? "")")
        }
        try reportMissing(r.failedShards)
        let pages = r.response["nbPages"]?.intValue ?? 0
        if page + 1 < pages { printError("page \(page + 1)") }
    }
}
