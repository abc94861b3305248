import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Items
import NIOCore
import QueryPlan
import WireProtocol

/// Algolia's REST API (`/1/…`) on the coordinator's HTTP server, so that
/// Algolia's own clients and InstantSearch work against Limelight unchanged
/// (docs/algolia.md has every endpoint, parameter and setting).
///
/// Nothing here searches, writes or checks a key itself: every request
/// becomes the messages a ZeroMQ client would send (a `search`, `publish`,
/// `delete` or `query`, with the request's key), handled by the same
/// ``CoordinatorCore`` handlers (``CoordinatorCore/localRequest(_:key:)``).
/// What this layer adds is the mapping: paths and bodies in, records and
/// indices onto items and domains (``AlgoliaIndex``, ``AlgoliaRecord``),
/// index settings applied as search parameters (``AlgoliaSettings``), and
/// Algolia's response shapes and errors out.
///
/// Keys: `X-Algolia-API-Key` (header, or the query string's
/// `x-algolia-api-key`, which browsers send to avoid a preflight); the
/// `X-Algolia-Application-Id`, when the cluster has keys, must be the key's app.
/// Bodies are read as JSON whatever their `Content-Type`. Errors are
/// `{"message", "status"}`: 4xx for the client's mistakes (404 for an unknown
/// index or object), 5xx only for what a retry on another host may cure.
struct AlgoliaREST: Sendable {
    let core: CoordinatorCore
    let state = AlgoliaState()
    /// The largest body read: a batch of a few thousand records.
    static let maxBodyBytes = 64 * 1024 * 1024

    /// What the handlers need of one request.
    struct Call: Sendable {
        var method: HTTPRequest.Method
        /// The path's segments after `/1/`, percent-decoded.
        var segments: [String]
        var body: JSONValue
        var query: [String: String]
        var key: String?
        var applicationID: String?
        /// The key's app (nil without keys), read once per request: the
        /// settings cache is per app.
        var app: String?
        /// A secured key's `restrictIndices`, as the index domains it may see
        /// (nil: every index).
        var restrictDomains: [String]? = nil
    }

    func handle(_ request: Request) async -> Response {
        if request.method == .options { return Self.withCORS(Response(status: .ok)) }
        do throws(RESTError) {
            let call = try await read(request)
            switch try await route(call) {
            case .json(let value): return Self.json(.ok, value)
            case .bytes(let bytes): return Self.json(.ok, bytes)
            }
        } catch {
            return Self.json(HTTPResponse.Status(code: error.status), Self.errorBody(error))
        }
    }

    func read(_ request: Request) async throws(RESTError) -> Call {
        var request = request
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(upTo: Self.maxBodyBytes) } catch {
            throw RESTError(.payloadTooLarge, "the body is larger than \(Self.maxBodyBytes) bytes: split the batch")
        }
        var body = JSONValue.null
        if buffer.readableBytes > 0 {
            do { body = try JSONValue.parse(Data(buffer.readableBytesView)) } catch {
                throw RESTError(.badRequest, "the body is not valid JSON: \(error)")
            }
        }
        var query: [String: String] = [:]
        for (k, v) in request.uri.queryParameters { query[String(k)] = String(v) }
        let raw = request.uri.path.split(separator: "/", omittingEmptySubsequences: true).dropFirst()
        let segments = raw.map { $0.removingPercentEncoding ?? String($0) }
        func header(_ name: String) -> String? {
            HTTPField.Name(name).flatMap { request.headers[$0] } ?? query[name]
        }
        let key = header("x-algolia-api-key")
        let (app, domains) = core.appAndDomainsInPlace(ofKey: key)
        return Call(
            method: request.method, segments: Array(segments), body: body, query: query,
            key: key, applicationID: header("x-algolia-application-id"), app: app, restrictDomains: domains)
    }

    // MARK: Routes

    /// An answer: a JSON value, or JSON already written (a search's, as the core wrote it).
    enum Answer {
        case json(JSONValue)
        case bytes([UInt8])
    }

    func route(_ c: Call) async throws(RESTError) -> Answer {
        let s = c.segments
        let m = c.method
        func unknown() -> RESTError {
            RESTError(
                .notFound,
                "\(m.rawValue) /1/\(s.joined(separator: "/")) is not an endpoint of Algolia's API that Limelight serves (docs/algolia.md lists them)")
        }
        try checkApplication(c)
        // /1/task/{id}, /1/indexes
        if s.count == 2, s[0] == "task", m == .get { return .json(try task(s[1])) }
        guard s.first == "indexes" else { throw unknown() }
        if s.count == 1 {
            guard m == .get else { throw unknown() }
            return .json(try await listIndices(c))
        }
        let index = s[1]
        if index == "*" {
            guard s.count == 3, m == .post else { throw unknown() }
            switch s[2] {
            case "queries": return try await multipleQueries(c)
            case "objects": return .json(try await getObjects(c))
            case "batch": return .json(try await multipleBatch(c))
            default: throw unknown()
            }
        }
        guard !index.isEmpty else { throw RESTError(.badRequest, "the index name is empty") }
        try checkIndex(c, index)
        let r = Array(s.dropFirst(2))
        let path = r.joined(separator: "/")
        switch (m, r.count) {
        case (.post, 0): return .json(try await addObject(c, index))
        case (.delete, 0): return .json(try await deleteIndex(c, index))
        case (.post, 1) where path == "query", (.get, 1) where path == "query": return try await searchIndex(c, index)
        case (.post, 1) where path == "browse", (.get, 1) where path == "browse": return .json(try await browse(c, index))
        case (.post, 1) where path == "batch": return .json(try await batch(c, index))
        case (.post, 1) where path == "clear": return .json(try await clear(c, index))
        case (.post, 1) where path == "deleteByQuery": return .json(try await deleteByQuery(c, index))
        case (.post, 1) where path == "operation": return .json(try await operation(c, index))
        case (.get, 1) where path == "settings": return .json(try await getSettings(c, index))
        case (.put, 1) where path == "settings", (.post, 1) where path == "settings": return .json(try await setSettings(c, index))
        case (.get, 2) where r[0] == "task": return .json(try task(r[1]))
        case (.post, 3) where r[0] == "facets" && r[2] == "query": return .json(try await searchFacetValues(c, index, r[1]))
        case (.post, 2) where path == "synonyms/batch": return .json(try await saveSynonyms(c, index))
        case (.post, 2) where path == "synonyms/search": return .json(try await searchSynonyms(c, index))
        case (.post, 2) where path == "synonyms/clear": return .json(try await clearSynonyms(c, index))
        case (.get, 2) where r[0] == "synonyms": return .json(try await getSynonym(c, index, r[1]))
        case (.put, 2) where r[0] == "synonyms": return .json(try await saveSynonym(c, index, r[1]))
        case (.delete, 2) where r[0] == "synonyms": return .json(try await deleteSynonym(c, index, r[1]))
        case (.get, 1): return .json(try await getObject(c, index, r[0]))
        case (.put, 1): return .json(try await putObject(c, index, r[0]))
        case (.delete, 1): return .json(try await deleteObject(c, index, r[0]))
        case (.post, 2) where r[1] == "partial": return .json(try await partialUpdate(c, index, r[0]))
        default: throw unknown()
        }
    }

    /// With keys, the application id (when sent) must name the key's app.
    func checkApplication(_ c: Call) throws(RESTError) {
        guard let asked = c.applicationID, !asked.isEmpty else { return }
        guard let app = c.app, app != asked else { return }
        throw RESTError(.forbidden, "the API key belongs to app '\(app)', not to the application id '\(asked)' this request names")
    }

    /// A secured key with `restrictIndices` reaches only those indices;
    /// another is refused as Algolia refuses it (403), not answered empty.
    /// An index is allowed when its domain is within one the key may see.
    func checkIndex(_ c: Call, _ index: String) throws(RESTError) {
        guard let allowed = c.restrictDomains else { return }
        let domain = AlgoliaIndex.domain(index)
        for d in allowed where domain == d || domain.hasPrefix(d + ".") || d.hasPrefix(domain + ".") { return }
        throw RESTError(.forbidden, "Index not allowed with this API key")
    }

    // MARK: Responses

    static func json(_ status: HTTPResponse.Status, _ value: JSONValue) -> Response {
        json(status, JSONWriter.bytes(value))
    }

    static func json(_ status: HTTPResponse.Status, _ bytes: [UInt8]) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return withCORS(Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes))))
    }

    /// Browsers call from any origin with the key in hand, as they call Algolia.
    static func withCORS(_ response: Response) -> Response {
        var r = response
        r.headers[.accessControlAllowOrigin] = "*"
        r.headers[.accessControlAllowMethods] = "GET, POST, PUT, DELETE, OPTIONS"
        r.headers[.accessControlAllowHeaders] = "content-type, x-algolia-api-key, x-algolia-application-id, x-algolia-agent, x-algolia-user-id"
        r.headers[.accessControlMaxAge] = "86400"
        return r
    }

    static func errorBody(_ e: RESTError) -> JSONValue {
        .object(["message": .string(e.message), "status": .number(Double(e.status))])
    }

    static func now() -> String { ISODate.format(Date()) }
}

/// A REST request's failure: Algolia's `{"message", "status"}`.
struct RESTError: Error, Sendable {
    enum Code: Int, Sendable {
        case badRequest = 400, forbidden = 403, notFound = 404, payloadTooLarge = 413, tooManyRequests = 429
        case internalError = 500, unavailable = 503
    }
    var code: Code
    var message: String
    var status: Int { code.rawValue }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A core's refusal as Algolia answers it: the key's faults 403, limits
    /// 429, a cluster that cannot serve now 503 (clients retry those), any
    /// other fault of the request 400, naming the field.
    init(_ e: WireError) {
        let message = e.field.map { "\(e.message) (\($0))" } ?? e.message
        switch e.code {
        case "key_required", "invalid_key", "key_revoked", "key_expired", "forbidden", "keys_disabled":
            self.init(.forbidden, message)
        case "rate_limited": self.init(.tooManyRequests, message)
        case "busy", "shard_unavailable", "timeout", "not_active", "unavailable": self.init(.unavailable, message)
        case "internal": self.init(.internalError, message)
        default: self.init(.badRequest, message)
        }
    }
}
