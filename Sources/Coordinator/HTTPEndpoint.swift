import Foundation
import Hummingbird
import HummingbirdCore
import Items
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The coordinator's HTTP endpoint: the status page, `/stats`, `/metrics`, `/healthz`, `/readyz`.
///
/// Hummingbird (SwiftNIO) serves it: HTTP/1.1 with keep-alive, HEAD answered
/// with the GET's headers and no body, malformed requests answered 400 and
/// oversized headers refused, none of which the hand-written HTTP over a
/// ZeroMQ STREAM socket it replaces did. It runs on NIO's event loops beside
/// the ZeroMQ sockets' threads and asks the `CoordinatorCore` actor for one
/// `ClusterSnapshot` per request, so a scrape never blocks message routing for
/// longer than building that snapshot.
///
/// Routes (`docs/operations.md` has the fields):
/// - `GET /` the status page (`StatusPage`), which polls `/stats`;
/// - `GET /stats` the statistics object, as in `stats_reply`;
/// - `GET /metrics` Prometheus text format (`CoordinatorMetrics`);
/// - `GET /healthz` 200 while the process serves (liveness);
/// - `GET /readyz` 200 when every shard has a live indexer and query worker, else 503 (readiness);
///   `GET /health` is the same test under its earlier name, with its earlier body.
///
/// A request with query parameters a route does not take gets 400 naming them,
/// rather than being silently answered as if they were absent.
struct HTTPEndpoint: Sendable {
    /// Request head limits: a scraper or browser needs a few hundred bytes;
    /// anything near these is not a monitoring client.
    static let maxHeaderFieldBytes = 8 * 1024
    static let maxHeaderListBytes = 16 * 1024
    static let maxHeaderFields = 64

    let host: String
    let port: Int
    let core: CoordinatorCore
    let logger: Logger
    let bound = BoundAddress()
    static let paths: Set<String> = ["/", "/search", "/stats", "/metrics", "/healthz", "/readyz", "/health"]

    /// Serves until the task is cancelled, then shuts down gracefully (requests
    /// under way are answered). Throws when the address cannot be bound.
    func run() async throws {
        // HEAD answers with the GET's status and headers and no body.
        let router = Router(options: .autoGenerateHeadEndpoints)
        // Before the routes: Hummingbird applies middleware to the routes added after it.
        router.middlewares.add(ErrorBodies())
        let core = self.core
        router.get("/") { request, _ -> Response in
            try Self.refuseParameters(request, allowed: [])
            return Self.response(.ok, "text/html; charset=utf-8", StatusPage.html)
        }
        router.get("/search") { request, _ -> Response in
            try Self.refuseParameters(request, allowed: ["index", "key", "app", "range"])
            return Self.response(.ok, "text/html; charset=utf-8", SearchPage.html)
        }
        router.get("/stats") { request, _ -> Response in
            try Self.refuseParameters(request, allowed: [])
            let stats = await core.stats()
            return Self.response(.ok, "application/json", String(decoding: stats.serialized(), as: UTF8.self))
        }
        router.get("/metrics") { request, _ -> Response in
            try Self.refuseParameters(request, allowed: [])
            let snapshot = await core.snapshot()
            return Self.response(.ok, "text/plain; version=0.0.4; charset=utf-8", core.metrics.render(snapshot))
        }
        router.get("/healthz") { request, _ -> Response in
            try Self.refuseParameters(request, allowed: [])
            return Self.response(.ok, "application/json", #"{"status":"ok"}"#)
        }
        router.get("/readyz") { request, _ -> Response in
            try Self.refuseParameters(request, allowed: [])
            let pong = await core.pong()
            let missing = Set(0..<pong.shardCount).subtracting(pong.servedShards).sorted()
            let body = JSONValue.object([
                "ready": .bool(missing.isEmpty), "shardCount": .number(Double(pong.shardCount)),
                "servedShards": .array(pong.servedShards.map { .number(Double($0)) }),
                "unservedShards": .array(missing.map { .number(Double($0)) }),
            ]).serialized()
            return Self.response(missing.isEmpty ? .ok : .serviceUnavailable, "application/json", String(decoding: body, as: UTF8.self))
        }
        router.get("/health") { request, _ -> Response in
            try Self.refuseParameters(request, allowed: [])
            let pong = await core.pong()
            let healthy = pong.servedShards.count == pong.shardCount
            let body = JSONValue.object([
                "healthy": .bool(healthy), "servedShards": .number(Double(pong.servedShards.count)),
                "shardCount": .number(Double(pong.shardCount)),
            ]).serialized()
            return Self.response(healthy ? .ok : .serviceUnavailable, "application/json", String(decoding: body, as: UTF8.self))
        }

        // Algolia's REST API (``AlgoliaREST``): it answers every path under /1 itself.
        let rest = AlgoliaREST(core: core)
        for method in [HTTPRequest.Method.get, .post, .put, .delete, .options] {
            router.on("/1/**", method: method) { request, _ -> Response in await rest.handle(request) }
        }

        let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: Self.maxHeaderFieldBytes, maxHeaderListSize: Self.maxHeaderListBytes,
            maxHeaderFieldCount: Self.maxHeaderFields)
        let bound = self.bound
        let app = Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: .seconds(120), httpDecoderConfiguration: decoder)),
            configuration: .init(address: .hostname(host, port: port), serverName: "limelight-coordinator"),
            onServerRunning: { channel in bound.set(.success(channel.localAddress?.port ?? 0)) },
            logger: logger)
        // Cancelling the server outright makes it log each open connection's
        // cancellation as an error; a graceful shutdown closes them quietly.
        // The group runs in a task of its own, which the caller's cancellation
        // does not reach: only the graceful shutdown stops it.
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let serving = Task { try await group.run() }
        do {
            try await withTaskCancellationHandler {
                try await serving.value
            } onCancel: {
                Task { await group.triggerGracefulShutdown() }
            }
            bound.set(.failure(HTTPBindError(host: host, port: port, reason: "stopped before listening")))
        } catch {
            bound.set(.failure(HTTPBindError(host: host, port: port, reason: "\(error)")))
            throw error
        }
    }

    static func response(_ status: HTTPResponse.Status, _ contentType: String, _ body: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    static func refuseParameters(_ request: Request, allowed: Set<String>) throws {
        let unknown = request.uri.queryParameters.map { String($0.key) }.filter { !allowed.contains($0) }
        guard unknown.isEmpty else {
            throw HTTPError(.badRequest, message: "\(request.uri.path) takes no parameter '\(unknown.sorted().joined(separator: "', '"))'")
        }
    }
}

/// Errors (404, 400, 405) answered as JSON naming the fault, as the rest of Limelight does.
struct ErrorBodies: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            var error = error
            // Hummingbird answers a known path with an unrouted method as not found.
            if error.status == .notFound, HTTPEndpoint.paths.contains(request.uri.path) {
                error = HTTPError(.methodNotAllowed)
            }
            let message: String
            switch error.status {
            case .notFound:
                message = "no such path: \(request.uri.path) (try /, /search, /stats, /metrics, /healthz, /readyz or /1/indexes)"
            case .methodNotAllowed:
                message = "\(request.method.rawValue) is not allowed on \(request.uri.path): only GET and HEAD"
            default:
                message = error.body ?? error.status.reasonPhrase
            }
            var r = HTTPEndpoint.response(
                error.status, "application/json",
                String(decoding: JSONValue.object(["error": .string(message)]).serialized(), as: UTF8.self))
            if error.status == .methodNotAllowed { r.headers[.allow] = "GET, HEAD" }
            return r
        }
    }
}

/// Why the HTTP endpoint could not start.
package struct HTTPBindError: Error, CustomStringConvertible {
    package var host: String
    package var port: Int
    package var reason: String
    package var description: String { "cannot serve HTTP on \(host):\(port): \(reason)" }
}

/// The port the HTTP server bound, once it has (or why it could not), for
/// whoever must print the URL before serving begins.
final class BoundAddress: Sendable {
    private struct State {
        var result: Result<Int, HTTPBindError>?
        var waiters: [CheckedContinuation<Result<Int, HTTPBindError>, Never>] = []
    }
    private let state = Mutex(State())

    func set(_ r: Result<Int, HTTPBindError>) {
        let toResume = state.withLock { state -> [CheckedContinuation<Result<Int, HTTPBindError>, Never>] in
            guard state.result == nil else { return [] }
            state.result = r
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        toResume.forEach { $0.resume(returning: r) }
    }

    func wait() async -> Result<Int, HTTPBindError> {
        await withCheckedContinuation { c in
            let ready = state.withLock { state -> Result<Int, HTTPBindError>? in
                if let result = state.result { return result }
                state.waiters.append(c)
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}
