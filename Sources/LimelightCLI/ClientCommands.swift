import ArgumentParser
import Foundation
import Items
import LimelightClient
import SpotlightQuery
import WireProtocol

/// Connects and checks the server answers, or exits 3.
func connect(_ options: EndpointOptions, defaultKeyFile: String = "limelight.key") async throws -> LimelightClient {
    let curve = try options.curve.keys()
    let key = try options.resolvedKey(defaultFile: defaultKeyFile)
    // Several endpoints (standby coordinators): the active one, found by ping.
    let endpoints = options.resolved.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    let client: LimelightClient
    do {
        client = try await LimelightClient.connectActive(
            endpoints.isEmpty ? [options.resolved] : endpoints, key: key, curve: curve, timeout: .milliseconds(Int(options.timeout * 1000)))
    } catch let error as ClientError {
        // A CURVE handshake that fails looks like silence to the client.
        let hint = curve == nil ? "" : "; with CURVE, also check --curve-server-key and that the server allows this client's key"
        printError("limelight: cannot reach a server at \(options.resolved) (\(error))\(hint)")
        throw ExitCode(ExitCodes.unreachable)
    }
    return client
}

/// `limelight query`: runs a Core Spotlight query string.
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run a Spotlight query string, e.g. 'title == \"Window\"w && InRange(installedSize, 0, 500)'.")

    @Argument(help: "The query string (CSSearchQuery syntax).") var query: String
    @Flag(help: "Print one JSON object per item per line, and nothing else on standard output.") var json = false
    @Option(
        name: [.customLong("fetch"), .customLong("fetch-attributes")],
        help: "Attributes to return, comma-separated (default: all).") var fetch: String?
    @Option(help: "Sort by an attribute: NAME or NAME:desc; repeatable.") var sort: [String] = []
    @Option(help: "At most this many results.") var limit: Int?
    @Option(help: "Results per batch.") var batchSize: Int?
    @Option(help: "Deadline in milliseconds.") var deadlineMs: Int?
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        // A bad query exits 2 with its position whether or not a server answers.
        do throws(SpotlightQueryError) { _ = try SpotlightQueryParser().parse(query) } catch {
            throw Self.badQuery(error.description, position: error.offset, in: query)
        }
        let client = try await connect(endpoint)
        defer { client.close() }
        let fetchList = fetch.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        let sortKeys: [JSONValue] = sort.map { s in
            let parts = s.split(separator: ":", maxSplits: 1)
            let desc = parts.count == 2 && parts[1].lowercased().hasPrefix("desc")
            return .object(["attribute": .string(String(parts[0])), "ascending": .bool(!desc)])
        }
        let handle = client.query(
            Body.QueryRequest(
                language: "spotlight", query: query, fetchAttributes: fetchList,
                sort: sortKeys.isEmpty ? nil : sortKeys, limit: limit,
                batchSize: batchSize, deadlineMs: deadlineMs))
        guard let completion = try await Self.stream(handle, json: json, fetch: fetchList, text: query) else { return }
        if !json {
            printError(
                "\(completion.count) item\(completion.count == 1 ? "" : "s") in \(completion.elapsedMs) ms\(completion.cancelled ? " (cancelled)" : "")"
            )
        }
        if !completion.failedShards.isEmpty {
            for f in completion.failedShards { printError("limelight: shard \(f.shard) missing from the result: \(f.reason)") }
            throw ExitCode(ExitCodes.missingShards)
        }
    }

    /// Prints why a query is bad, with a caret under `text` at `position`,
    /// and gives the exit of bad input (2) to throw.
    static func badQuery(_ description: String, position: Int?, in text: String) -> ExitCode {
        printError("limelight: bad query: \(description)")
        if let position {
            printCaret(under: text, at: position)
        }
        return ExitCode(ExitCodes.badInput)
    }

    /// Prints a query's results (``printResults``) until its completion, which
    /// it returns; SIGINT cancels the query. A query the server rejects
    /// (`rejected`) exits 2, with a caret under `text` at the position the
    /// error names (when it names no field: a position in a field's value
    /// is not one in `text`); a refused key exits 6, any other server error
    /// 1, and a client error (unreachable, timed out) 3.
    static func stream(
        _ handle: QueryHandle, json: Bool, fetch: [String]?, text: String,
        rejected: Set<String> = ["bad_query", "invalid_query", "unsupported_language"]
    ) async throws -> Body.Completion? {
        let cancel = SignalWatcher(signals: [SIGINT]) { Task { await handle.cancel() } }
        defer { _ = cancel }
        do {
            return try await printResults(handle, json: json, fetch: fetch)
        } catch let e as ClientError where e.code == .server {
            if let s = e.server, rejected.contains(s.code) {
                // A position in a field's value is not one in `text`.
                throw badQuery(s.description, position: s.field == nil ? s.position : nil, in: text)
            }
            throw failure(e, refused: 1)
        } catch let e as ClientError {
            throw failure(e)
        }
    }

    /// Prints a query's batches as they come, a line per item (JSON lines
    /// with `json`; with `fetch`, the identifier and the fetched attributes
    /// as tab-separated columns under a header line), and returns its
    /// completion.
    static func printResults(_ handle: QueryHandle, json: Bool, fetch: [String]?) async throws -> Body.Completion? {
        var completion: Body.Completion?
        var header = !json && fetch != nil
        for try await event in handle.events {
            switch event {
            case .batch(let items):
                var out = ""
                if header, let fetch {
                    out += (["uniqueIdentifier"] + fetch).joined(separator: "\t") + "\n"
                    header = false
                }
                for item in items {
                    out += (json ? jsonLine(item, fetch: fetch) : fetch.map { columnsLine(item, fetch: $0) } ?? humanLine(item)) + "\n"
                }
                FileHandle.standardOutput.write(Data(out.utf8))
            case .completion(let c):
                completion = c
            }
        }
        return completion
    }

    /// `uniqueIdentifier`, `domainIdentifier` and the requested `attributes`;
    /// and `entity` for an item that comes from (or is associated with) an
    /// app entity, so that the app can run its open intent.
    static func jsonLine(_ item: JSONValue, fetch: [String]?) -> String {
        var o: [String: JSONValue] = [:]
        o["uniqueIdentifier"] = item["uniqueIdentifier"] ?? .null
        o["domainIdentifier"] = item["domainIdentifier"] ?? .string("")
        if let entity = item["entity"], entity != .null { o["entity"] = entity }
        var attrs = item["attributes"]?.objectValue ?? [:]
        if let fetch { attrs = attrs.filter { fetch.contains($0.key) } }
        o["attributes"] = .object(attrs)
        return JSONValue.object(o).serializedString()
    }

    /// The identifier and each fetched attribute, tab-separated: text as it
    /// is (tabs and newlines as spaces), a list's values joined with ", ", a
    /// missing value empty.
    static func columnsLine(_ item: JSONValue, fetch: [String]) -> String {
        let attrs = item["attributes"]?.objectValue ?? [:]
        func cell(_ v: JSONValue?) -> String {
            switch v {
            case nil, .null?: return ""
            case .string(let s)?: return s.map { $0 == "\t" || $0.isNewline ? " " : String($0) }.joined()
            case .array(let a)?: return a.map { cell($0) }.joined(separator: ", ")
            case let other?: return other.serializedString()
            }
        }
        return ([item["uniqueIdentifier"]?.stringValue ?? "?"] + fetch.map { cell(attrs[$0]) }).joined(separator: "\t")
    }

    static func humanLine(_ item: JSONValue) -> String {
        let uid = item["uniqueIdentifier"]?.stringValue ?? "?"
        let attrs = item["attributes"]?.objectValue ?? [:]
        let title = attrs["displayName"]?.stringValue ?? attrs["title"]?.stringValue ?? ""
        return title.isEmpty ? uid : "\(uid)\t\(title)"
    }
}

/// `limelight delete`.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete items by identifier, by domain (with its subdomains), or all.")

    @Option(help: "Unique identifiers, comma-separated.") var ids: String?
    @Option(help: "Domain identifiers, comma-separated; subdomains go too.") var domains: String?
    @Flag(help: "Delete every item.") var all = false
    @OptionGroup var endpoint: EndpointOptions

    func validate() throws {
        let n = (ids == nil ? 0 : 1) + (domains == nil ? 0 : 1) + (all ? 1 : 0)
        guard n >= 1 else { throw ValidationError("name --ids, --domains or --all") }
    }

    func run() async throws {
        let client = try await connect(endpoint)
        defer { client.close() }
        func list(_ s: String?) -> [String]? { s.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } }
        do {
            let n = try await client.delete(ids: list(ids), domains: list(domains), all: all)
            print("deleted \(n)")
        } catch let e as ClientError {
            throw failure(e, refused: e.server?.code == "shard_unavailable" ? ExitCodes.missingShards : ExitCodes.badInput)
        }
    }
}

/// `limelight declare`: a custom attribute, as `CSCustomAttributeKey` declares it.
struct DeclareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "declare",
        abstract: "Declare a custom attribute's type (needed for dates) and flags.")

    @Argument(help: "Attribute name.") var name: String
    @Option(help: "text, number, date, boolean or location (a standard attribute's own type when omitted).") var type: String?
    @Flag(inversion: .prefixedNo, help: "Indexed for queries.") var searchable = true
    @Flag(inversion: .prefixedNo, help: "Searched when a query names every attribute (*).") var searchableByDefault = true
    @Flag(help: "An identifier: matched whole, not word by word.") var unique = false
    @Flag(help: "A list of values.") var multiValued = false
    @Flag(
        inversion: .prefixedNo,
        help: "Embedded for semantic search (text attributes, standard ones too), in the order declared; --no-semantic stops it.")
    var semantic: Bool?
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let standard = StandardAttributes.all[name]
        guard let t = type.map({ ValueType(rawValue: $0) }) ?? standard?.type else {
            printError(
                type == nil
                    ? "limelight: --type is needed for a custom attribute (text, number, date, boolean or location)"
                    : "limelight: --type must be one of text, number, date, boolean, location")
            throw ExitCode(ExitCodes.badInput)
        }
        if standard != nil, semantic == nil {
            printError("limelight: '\(name)' is a standard attribute; its type is fixed (only --semantic or --no-semantic can be declared)")
            throw ExitCode(ExitCodes.badInput)
        }
        let client = try await connect(endpoint)
        defer { client.close() }
        let spec =
            standard
            ?? AttributeSpec(
                name: name, type: t, multiValued: multiValued, searchable: searchable,
                searchableByDefault: searchableByDefault, unique: unique)
        do { try await client.declare([AttributeDeclaration(spec, semantic: semantic)]) } catch let e as ClientError {
            throw failure(e)
        }
        print("declared \(name) (\(t.rawValue)\(semantic == true ? ", semantic" : semantic == false ? ", not semantic" : ""))")
    }
}

/// `limelight stats`.
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Print the cluster's stats as JSON.")
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let client = try await connect(endpoint)
        defer { client.close() }
        let s: JSONValue
        do { s = try await client.stats() } catch let e as ClientError { throw failure(e, "stats") }
        print(s.serializedString())
    }
}
