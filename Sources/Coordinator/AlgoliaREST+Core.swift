import Foundation
import Items
import QueryPlan
import SearchParameters
import Synchronization
import WireProtocol

/// The REST API's way into the core: messages as a ZeroMQ client sends them.
extension AlgoliaREST {
    /// Sends one request; its replies, or its error as Algolia answers it.
    func call(_ body: Body, key: String?) async throws(RESTError) -> [Body] {
        let replies = await core.localRequest(body, key: key)
        if case .error(let e)? = replies.last { throw RESTError(e) }
        return replies
    }

    /// Publishes items (already in the index's item form); refused items are
    /// a 400 naming the first, after the others are stored.
    func publish(_ items: [JSONValue], key: String?) async throws(RESTError) {
        let size = 1000
        var start = 0
        while start < items.count {
            let part = Array(items[start..<min(items.count, start + size)])
            start += size
            guard case .publishAck(let ack)? = try await call(.publish(Body.Publish(items: part)), key: key).last else {
                throw RESTError(.internalError, "the coordinator answered a publish with something else than its acknowledgement")
            }
            if let bad = ack.results.first(where: { $0.status == .rejected }) {
                let id = bad.uniqueIdentifier.map { $0.split(separator: "/", maxSplits: 1).last.map(String.init) ?? $0 } ?? "#\(bad.index)"
                let why = bad.error.map { e in e.field.map { "\(e.message) (\($0))" } ?? e.message } ?? "rejected"
                throw RESTError(.badRequest, "record '\(id)' was not stored: \(why)")
            }
        }
    }

    /// Deletes items by identifier or whole domains (the app's names).
    func delete(ids: [String]? = nil, domains: [String]? = nil, key: String?) async throws(RESTError) {
        if ids?.isEmpty == true && domains == nil { return }
        _ = try await call(.delete(Body.Delete(ids: ids, domains: domains)), key: key)
    }

    /// Every item a predicate matches, as stored (identifier, domain, attributes).
    func items(_ predicate: QueryPlan.Predicate, key: String?, limit: Int? = nil) async throws(RESTError) -> [JSONValue] {
        let request = Body.QueryRequest(language: "plan", plan: predicate.json, limit: limit, completionInBatch: true)
        var out: [JSONValue] = []
        for reply in try await call(.query(request), key: key) {
            guard case .resultBatch(let b) = reply else { continue }
            out += b.items
            for raw in b.rawItems ?? [] {
                if let v = try? raw.decoded() { out.append(v) }
            }
        }
        return out
    }

    /// A search of `predicate`'s items with Algolia's parameters: the
    /// response as the core wrote it (one JSON object).
    func searchBytes(
        _ params: [String: JSONValue], within predicate: QueryPlan.Predicate, key: String?,
        prepare: @escaping @Sendable (inout SearchRequest) -> Void = { _ in }
    ) async throws(RESTError) -> ArraySlice<UInt8> {
        let replies = await core.localSearch(params: .object(params), key: key, within: predicate, prepare: prepare)
        switch replies.last {
        case .error(let e)?: throw RESTError(e)
        case .searchResult(let r)?: return r.written?.bytes ?? ArraySlice(JSONWriter.bytes(r.response))
        default:
            throw RESTError(.internalError, "the coordinator answered a search with something else than its result")
        }
    }

    /// ``searchBytes(_:within:key:prepare:)``'s response as a JSON object.
    func search(
        _ params: [String: JSONValue], within predicate: QueryPlan.Predicate, key: String?,
        prepare: @escaping @Sendable (inout SearchRequest) -> Void = { _ in }
    ) async throws(RESTError) -> [String: JSONValue] {
        let bytes = try await searchBytes(params, within: predicate, key: key, prepare: prepare)
        guard case .object(let o)? = try? JSONValue.parse(Data(bytes)) else {
            throw RESTError(.internalError, "the search's response is not a JSON object")
        }
        return o
    }
}

/// What the REST API keeps in the coordinator's process: index settings as
/// last read or written (the store holds them, ``AlgoliaIndexMeta``), and
/// the task counter.
///
/// Task ids are global and increase; a write is answered only once every
/// replica acknowledged it, so every task id handed out is `published`.
final class AlgoliaState: Sendable {
    private let metas = Mutex<[String: AlgoliaIndexMeta]>([:])
    /// Each index's synonyms as matching applies them, read at its first
    /// search and dropped whenever its synonyms or meta are written here.
    private let synonymLists = Mutex<[String: [QuerySynonym]]>([:])
    private let lastTask: Atomic<Int>
    /// Whether ``AlgoliaRecord/objectsAttribute`` was declared by this process.
    let objectsDeclared = Atomic<Bool>(false)

    init() {
        // Ids keep increasing across restarts: they start from the clock.
        lastTask = Atomic(Int(Date().timeIntervalSince1970 * 1000))
    }

    func nextTask() -> Int { lastTask.add(1, ordering: .relaxed).newValue }
    func issued(_ task: Int) -> Bool { task <= lastTask.load(ordering: .relaxed) }

    func meta(_ app: String?, _ index: String) -> AlgoliaIndexMeta? { metas.withLock { $0[Self.key(app, index)] } }
    func setMeta(_ app: String?, _ index: String, _ m: AlgoliaIndexMeta?) {
        metas.withLock { $0[Self.key(app, index)] = m }
        setSynonyms(app, index, nil)
    }

    func synonyms(_ app: String?, _ index: String) -> [QuerySynonym]? { synonymLists.withLock { $0[Self.key(app, index)] } }
    func setSynonyms(_ app: String?, _ index: String, _ s: [QuerySynonym]?) { synonymLists.withLock { $0[Self.key(app, index)] = s } }

    static func key(_ app: String?, _ index: String) -> String { (app ?? "") + "\u{0}" + index }
}
