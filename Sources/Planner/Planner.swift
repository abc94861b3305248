import Foundation
import Items
import PredicateQuery
import QueryPlan
import SpotlightQuery
import WireProtocol

/// Turns a query request, in whichever language it was written, into the one
/// shared query plan, and decides which shards must answer it.
///
/// Parsing happens once, at the coordinator: a malformed query is reported
/// once with its position rather than by every shard, and `$time` values are
/// resolved against a single clock so all shards agree on "today".
package struct Planner: Sendable {
    package var now: @Sendable () -> Date
    package var timeZone: TimeZone

    package init(timeZone: TimeZone = TimeZone(identifier: "UTC")!, now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
        self.timeZone = timeZone
    }

    /// The largest batch a client may ask for; larger requests are clamped.
    package static let maxBatchSize = 10_000

    package func plan(_ request: Body.QueryRequest) throws(WireError) -> Query {
        let predicate: QueryPlan.Predicate
        let language = request.language ?? "spotlight"
        if let dialect = PredicateQueryParser.Dialect(rawValue: language) { return try planPredicate(request, dialect: dialect) }
        var fromPlan: Query?
        switch language {
        case "spotlight":
            guard let text = request.query else {
                throw WireError(code: "invalid_query", message: "a spotlight query needs its text in 'query'", field: "query")
            }
            do throws(SpotlightQueryError) {
                predicate = try SpotlightQueryParser(now: now(), timeZone: timeZone).parse(text)
            } catch {
                throw WireError(code: "bad_query", message: error.message, position: error.offset)
            }
        case "plan":
            guard let p = request.plan else {
                throw WireError(code: "invalid_query", message: "a plan query needs its plan in 'plan'", field: "plan")
            }
            do throws(PlanDecodingError) {
                // Either a bare predicate, or a whole plan whose settings fill what the request leaves out.
                if p["predicate"] != nil {
                    fromPlan = try Query(json: p)
                    predicate = fromPlan!.predicate
                } else {
                    predicate = try QueryPlan.Predicate(json: p)
                }
            } catch {
                throw WireError(code: "bad_query", message: error.message, field: error.path)
            }
        default:
            throw WireError(
                code: "unsupported_language",
                message: "query language '\(language)' is not supported (use 'spotlight', 'plan', 'cloudkit' or 'nspredicate')",
                field: "language")
        }
        var sort: [SortKey] = request.sort == nil ? (fromPlan?.sort ?? []) : []
        for (i, s) in (request.sort ?? []).enumerated() {
            do throws(PlanDecodingError) { sort.append(try SortKey(json: s, path: "sort[\(i)]")) } catch {
                throw WireError(code: "invalid_query", message: error.message, field: error.path)
            }
        }
        if let limit = request.limit, limit < 0 {
            throw WireError(code: "invalid_query", message: "limit must not be negative", field: "limit")
        }
        if let b = request.batchSize, b < 1 {
            throw WireError(code: "invalid_query", message: "batchSize must be at least 1", field: "batchSize")
        }
        return Query(
            predicate: predicate.simplified(), fetchAttributes: request.fetchAttributes ?? fromPlan?.fetchAttributes,
            sort: sort, limit: request.limit ?? fromPlan?.limit,
            batchSize: min(request.batchSize ?? fromPlan?.batchSize ?? Query.defaultBatchSize, Self.maxBatchSize))
    }

    /// Shards that can hold a match. A plan that can match nothing needs none;
    /// otherwise every shard, since a domain's subdomains hash to shards of their own.
    package func shards(for query: Query, shardCount: Int) -> [Int] {
        if query.predicate == .none || query.limit == 0 { return [] }
        return Array(0..<shardCount)
    }
}
