import ArgumentParser
import Foundation
import Items
import LimelightClient
import Tenancy
import WireProtocol

/// `limelight keys`: API keys (docs/security.md).
///
/// `create`, `list` and `revoke` ask the coordinator, with a master key (any
/// app) or an app's admin key (that app). Without `--key` they use
/// `master.key` from the data folder of `limelight up` when it is there, else
/// the usual key. `secure` needs no server: a secured key is an HMAC of its
/// restrictions made from a search key, as Algolia's `generateSecuredApiKey`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Create, list, revoke and secure API keys; make CURVE key pairs.",
        subcommands: [
            KeysCreateCommand.self, KeysSecureCommand.self, KeysListCommand.self, KeysRevokeCommand.self,
            CurveKeysCommand.self,
        ])
}

/// Connects with the key that manages keys: `--key` and the like, else the
/// data folder's master key, else its admin key.
func connectForKeys(_ options: EndpointOptions) async throws -> LimelightClient {
    let explicit =
        options.key != nil || options.keyFile != nil
        || ProcessInfo.processInfo.environment["LIMELIGHT_KEY"] != nil || ProcessInfo.processInfo.environment["LIMELIGHT_KEY_FILE"] != nil
    if !explicit, try options.resolvedKey(defaultFile: "master.key") != nil {
        return try await connect(options, defaultKeyFile: "master.key")
    }
    return try await connect(options)
}

/// Runs a `keys` request; a refusal prints the server's reason and exits 2
/// (6 for a refused key).
func keysRequest(_ options: EndpointOptions, _ request: Body.Keys) async throws -> Body.KeysReply {
    let client = try await connectForKeys(options)
    defer { client.close() }
    do {
        return try await client.keys(request, timeout: .milliseconds(Int(options.timeout * 1000)))
    } catch let e as ClientError {
        throw failure(e, "keys \(request.action)")
    }
}

struct KeysCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Make a key of an app; prints the key alone on standard output (it is shown only this once).")

    @Option(help: "The app (a-z, 0-9, _ and -). An admin key may leave it out: its own app.") var app: String?
    @Option(help: "admin (write, delete, declare, search) or search (search only).") var role: String
    @Option(help: "Requests per second the key may make (default: no limit).") var rateLimit: Double?
    @Option(help: "Items one publish may carry (default: no limit).") var maxItems: Int?
    @Option(help: "A note kept with the key (shown by list).") var description: String?
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let reply = try await keysRequest(
            endpoint,
            Body.Keys(
                action: "create", app: app, role: role, rateLimit: rateLimit,
                maxItemsPerPublish: maxItems, description: description))
        guard let key = reply.apiKey else {
            printError("limelight: the server answered without a key")
            throw ExitCode(1)
        }
        printLine(key)
        if let id = reply.keys.first?["id"]?.stringValue {
            printError("created key \(id) (\(role) of app \(reply.keys.first?["app"]?.stringValue ?? "-"))")
        }
    }
}

struct KeysSecureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secure",
        abstract: "Make a secured key from a search key and restrictions, with no call to the server; prints it alone on standard output.")

    @Option(help: "The search key the secured key derives from.") var parent: String
    @Option(help: "An Algolia filters expression ANDed into every search of the key, in every query language.") var filters: String?
    @Option(help: "When the key stops working: an ISO-8601 date and time (2026-12-01T00:00:00Z) or Unix seconds.") var validUntil: String?
    @Option(help: "Only items of these domains (and their subdomains): a,b.") var domains: String?
    @Option(help: "Whose key it is; rate limits count per user token.") var userToken: String?

    func run() throws {
        var r = KeyRestrictions(filters: filters, userToken: userToken)
        if let v = validUntil {
            guard let date = ISODate.parse(v) ?? Double(v).map({ Date(timeIntervalSince1970: $0) }) else {
                printError("limelight: --valid-until '\(v)' is neither an ISO-8601 date and time nor Unix seconds")
                throw ExitCode(ExitCodes.badInput)
            }
            r.validUntil = date
        }
        if let d = domains {
            r.restrictDomains = d.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        do throws(TenancyError) {
            printLine(try SecuredKey.generate(parentKey: parent.trimmingCharacters(in: .whitespacesAndNewlines), r))
        } catch {
            printError("limelight: \(error.field.map { "--\($0 == "restrictDomains" ? "domains" : $0): " } ?? "")\(error.message)")
            throw ExitCode(ExitCodes.badInput)
        }
    }
}

struct KeysListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List keys: id, app, role, limits, dates (never a key's value).")

    @Option(help: "Only this app's keys.") var app: String?
    @Flag(help: "One JSON object per key per line.") var json = false
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let reply = try await keysRequest(endpoint, Body.Keys(action: "list", app: app))
        for k in reply.keys {
            if json { printLine(k.serializedString()); continue }
            func s(_ name: String) -> String { k[name]?.stringValue ?? "-" }
            var line = "\(s("id"))  \(s("role"))  app=\(s("app"))  created=\(s("created"))"
            if let r = k["rateLimit"]?.doubleValue { line += "  rate=\(r)/s" }
            if let m = k["maxItemsPerPublish"]?.intValue { line += "  maxItems=\(m)" }
            if k["revoked"]?.stringValue != nil { line += "  REVOKED \(s("revoked"))" }
            if let d = k["description"]?.stringValue { line += "  \(d)" }
            printLine(line)
        }
    }
}

struct KeysRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Revoke a key (by value or id), and every secured key made from it.")

    @Argument(help: "The key, or its id as list shows it.") var target: String
    @OptionGroup var endpoint: EndpointOptions

    func run() async throws {
        let reply = try await keysRequest(endpoint, Body.Keys(action: "revoke", target: target))
        printError("revoked key \(reply.keys.first?["id"]?.stringValue ?? "?")")
    }
}
