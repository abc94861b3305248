import Foundation
import Items
import PredicateQuery
import QueryPlan
import WireProtocol

extension Planner {
    /// A `cloudkit` or `nspredicate` query: `CKQuery(recordType:predicate:)`
    /// with its sort descriptors, `resultsLimit` and cursor.
    ///
    /// The sort always ends with the unique identifier, so results with equal
    /// sort values come in one order on every shard and page, and a cursor —
    /// the last result's sort values — names exactly one place to resume.
    package func planPredicate(_ request: Body.QueryRequest, dialect: PredicateQueryParser.Dialect) throws(WireError) -> Query {
        guard let recordType = request.recordType, !recordType.isEmpty else {
            throw WireError(code: "invalid_query", message: "a \(dialect.rawValue) query needs its record type in 'recordType'", field: "recordType")
        }
        guard let format = request.predicate else {
            throw WireError(
                code: "invalid_query", message: "a \(dialect.rawValue) query needs its predicate format string in 'predicate'", field: "predicate")
        }
        let predicate: QueryPlan.Predicate
        do throws(PredicateQueryError) {
            predicate = try PredicateQueryParser(dialect: dialect, now: now())
                .parse(recordType: recordType, format, arguments: request.arguments ?? [])
        } catch {
            throw WireError(code: "bad_query", message: error.message, position: error.offset)
        }
        var sort: [SortKey] = []
        for (i, s) in (request.sort ?? []).enumerated() {
            do throws(PlanDecodingError) { sort.append(try SortKey(json: s, path: "sort[\(i)]")) } catch {
                throw WireError(code: "invalid_query", message: error.message, field: error.path)
            }
        }
        if !sort.contains(.identifier) { sort.append(.identifier) }
        if let limit = request.limit, limit < 0 {
            throw WireError(code: "invalid_query", message: "limit must not be negative", field: "limit")
        }
        if let b = request.batchSize, b < 1 {
            throw WireError(code: "invalid_query", message: "batchSize must be at least 1", field: "batchSize")
        }
        var after: [JSONValue]?
        if let token = request.cursor {
            after = try QueryCursor.decode(token, fingerprint: QueryCursor.fingerprint(of: request), sortKeys: sort.count)
        }
        return Query(
            predicate: predicate.simplified(), fetchAttributes: request.fetchAttributes, sort: sort,
            limit: request.limit, batchSize: min(request.batchSize ?? Query.defaultBatchSize, Self.maxBatchSize),
            after: after)
    }
}

/// The opaque cursor of a predicate query: which query it belongs to and the
/// sort values of the last result returned.
///
/// The token is base64url of `{"v": 1, "q": fingerprint, "after": [sort values]}`.
/// The fingerprint is a 64-bit FNV-1a hash of the request's language,
/// record type, predicate text, arguments and sort, so a cursor made for one
/// query is refused for another; the limit, the batch size and the fetched
/// attributes may change from page to page.
package enum QueryCursor {
    /// Nil for languages without cursors.
    package static func fingerprint(of request: Body.QueryRequest) -> String? {
        guard let language = request.language, PredicateQueryParser.Dialect(rawValue: language) != nil else { return nil }
        let identity: JSONValue = .object([
            "language": .string(language),
            "recordType": request.recordType.map(JSONValue.string) ?? .null,
            "predicate": request.predicate.map(JSONValue.string) ?? .null,
            "arguments": .array(request.arguments ?? []),
            "sort": .array(request.sort ?? []),
        ])
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in JSONWriter.bytes(identity) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    package static func encode(after: [JSONValue], fingerprint: String) -> String {
        let payload: JSONValue = .object(["v": .number(1), "q": .string(fingerprint), "after": .array(after)])
        return Data(JSONWriter.bytes(payload)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func decode(_ token: String, fingerprint: String?, sortKeys: Int) throws(WireError) -> [JSONValue] {
        func invalid(_ why: String) -> WireError {
            WireError(code: "invalid_cursor", message: why, field: "cursor")
        }
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let payload = try? JSONValue.parse(data),
            payload["v"]?.intValue == 1, let q = payload["q"]?.stringValue, let after = payload["after"]?.arrayValue
        else {
            throw invalid("the cursor is not one this service issued (it is opaque: pass back a completion's 'cursor' unchanged)")
        }
        guard q == fingerprint else {
            throw invalid(
                "the cursor was made for another query: a cursor resumes only the query (record type, predicate, arguments, sort) that returned it")
        }
        guard after.count == sortKeys else { throw invalid("the cursor does not fit the query's sort") }
        return after
    }
}
