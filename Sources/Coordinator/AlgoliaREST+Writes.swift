import Foundation
import Items
import QueryPlan
import SearchParameters
import WireProtocol

/// Records: writes, reads, and whole-index operations. Every write is
/// answered once every live replica of its shards acknowledged it (the
/// publish's own acknowledgement), so its task is `published` at once.
extension AlgoliaREST {
    // MARK: Single records

    func addObject(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        let record = try Self.object(c.body, "the body must be the record, a JSON object")
        let id = record["objectID"]?.stringValue ?? UUID().uuidString.lowercased()
        try await write(c, index, [.save(id, record)])
        return .object(["objectID": .string(id), "taskID": task(), "createdAt": .string(Self.now())])
    }

    func putObject(_ c: Call, _ index: String, _ id: String) async throws(RESTError) -> JSONValue {
        let record = try Self.object(c.body, "the body must be the record, a JSON object")
        try await write(c, index, [.save(id, record)])
        return .object(["objectID": .string(id), "taskID": task(), "updatedAt": .string(Self.now())])
    }

    func deleteObject(_ c: Call, _ index: String, _ id: String) async throws(RESTError) -> JSONValue {
        try await write(c, index, [.delete(id)])
        return .object(["taskID": task(), "deletedAt": .string(Self.now())])
    }

    /// Atomic against every other write of the record (``atomically(_:_:_:)``).
    func partialUpdate(_ c: Call, _ index: String, _ id: String) async throws(RESTError) -> JSONValue {
        let changes = try Self.object(c.body, "the body must be the attributes to change, a JSON object")
        let create = c.query["createIfNotExists"] != "false"
        try await write(c, index, [.partial(id, changes, create: create)])
        return .object(["objectID": .string(id), "taskID": task(), "updatedAt": .string(Self.now())])
    }

    func getObject(_ c: Call, _ index: String, _ id: String) async throws(RESTError) -> JSONValue {
        let meta = try await loadMeta(c, index)
        let found = try await records(c, meta?.settings.primary ?? index, [id])
        guard var record = found[id] else {
            throw RESTError(.notFound, "index '\(index)' has no record with objectID '\(id)'")
        }
        let keep = c.query["attributesToRetrieve"].map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
        record = Self.retrieved(record, keep, hidden: meta?.settings.unretrievable ?? [])
        return .object(record)
    }

    /// `POST /1/indexes/*/objects`: each request's record, or null when absent.
    func getObjects(_ c: Call) async throws(RESTError) -> JSONValue {
        guard let requests = c.body["requests"]?.arrayValue else {
            throw RESTError(.badRequest, "the body needs 'requests': a list of {indexName, objectID}")
        }
        var results: [JSONValue] = []
        for (i, r) in requests.enumerated() {
            guard let index = r["indexName"]?.stringValue, let id = r["objectID"]?.stringValue else {
                throw RESTError(.badRequest, "requests[\(i)] needs indexName and objectID")
            }
            try checkIndex(c, index)
            let meta = try await loadMeta(c, index)
            guard var record = try await records(c, meta?.settings.primary ?? index, [id])[id] else {
                results.append(.null)
                continue
            }
            let keep = r["attributesToRetrieve"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) }
            record = Self.retrieved(record, keep, hidden: meta?.settings.unretrievable ?? [])
            results.append(.object(record))
        }
        return .object(["results": .array(results)])
    }

    static func retrieved(_ record: [String: JSONValue], _ keep: Set<String>?, hidden: Set<String>) -> [String: JSONValue] {
        record.filter { k, _ in k == "objectID" || (!hidden.contains(k) && (keep == nil || keep!.contains("*") || keep!.contains(k))) }
    }

    /// The records of an index with these objectIDs, by objectID.
    func records(_ c: Call, _ index: String, _ ids: [String]) async throws(RESTError) -> [String: [String: JSONValue]] {
        guard !ids.isEmpty else { return [:] }
        let predicate = QueryPlan.Predicate.and([AlgoliaIndex.records(index), .identifier(ids.map { AlgoliaIndex.uid(index, $0) })])
        var out: [String: [String: JSONValue]] = [:]
        for item in try await items(predicate, key: c.key) {
            if let r = AlgoliaRecord.record(item: item, index: index), let id = r["objectID"]?.stringValue { out[id] = r }
        }
        return out
    }

    // MARK: Batches

    enum Operation {
        case save(String, [String: JSONValue])
        case partial(String, [String: JSONValue], create: Bool)
        case delete(String)
        case clear
        case deleteIndex
    }

    func batch(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        let ops = try Self.operations(c.body["requests"], index: nil).map(\.op)
        try await write(c, index, ops)
        return .object(["taskID": task(), "objectIDs": .array(ops.compactMap(Self.objectID).map { .string($0) })])
    }

    /// `POST /1/indexes/*/batch`: each request names its index.
    func multipleBatch(_ c: Call) async throws(RESTError) -> JSONValue {
        let ops = try Self.operations(c.body["requests"], index: "")
        var taskIDs: [String: JSONValue] = [:]
        var order: [String] = []
        var byIndex: [String: [Operation]] = [:]
        for (index, op) in ops {
            if byIndex[index] == nil { order.append(index) }
            byIndex[index, default: []].append(op)
        }
        try await atomically(c, order.map { ($0, byIndex[$0]!) }) { () async throws(RESTError) in
            // Every index's operations checked before any is stored.
            var prepared: [PreparedWrite] = []
            for index in order { prepared.append(try await prepare(c, index, byIndex[index]!)) }
            for w in prepared {
                try await apply(c, w)
                taskIDs[w.index] = task()
            }
        }
        return .object(["taskID": .object(taskIDs), "objectIDs": .array(ops.compactMap { Self.objectID($0.op) }.map { .string($0) })])
    }

    static func objectID(_ op: Operation) -> String? {
        switch op {
        case .save(let id, _), .partial(let id, _, _), .delete(let id): id
        case .clear, .deleteIndex: nil
        }
    }

    /// A batch's `requests` as operations; `index` non-nil: each names its `indexName`.
    static func operations(_ requests: JSONValue?, index: String?) throws(RESTError) -> [(index: String, op: Operation)] {
        guard let list = requests?.arrayValue else {
            throw RESTError(.badRequest, "the body needs 'requests': a list of {action, body}")
        }
        var out: [(String, Operation)] = []
        for (i, r) in list.enumerated() {
            let at = "requests[\(i)]"
            guard let action = r["action"]?.stringValue else { throw RESTError(.badRequest, "\(at) needs an action") }
            var name = ""
            if index != nil {
                guard let n = r["indexName"]?.stringValue, !n.isEmpty else { throw RESTError(.badRequest, "\(at) needs an indexName") }
                name = n
            }
            let needsBody: Bool
            switch action {
            case "addObject", "updateObject", "partialUpdateObject", "partialUpdateObjectNoCreate": needsBody = true
            default: needsBody = false
            }
            if needsBody, r["body"]?.objectValue == nil {
                throw RESTError(.badRequest, "\(at): \(action) needs a body that is the record, a JSON object; nothing of the batch was stored")
            }
            let body = r["body"]?.objectValue ?? [:]
            let id = body["objectID"]?.stringValue
            func needID() throws(RESTError) -> String {
                guard let id, !id.isEmpty else { throw RESTError(.badRequest, "\(at): \(action) needs the body's objectID") }
                return id
            }
            switch action {
            case "addObject": out.append((name, .save(id ?? UUID().uuidString.lowercased(), body)))
            case "updateObject": out.append((name, .save(try needID(), body)))
            case "partialUpdateObject": out.append((name, .partial(try needID(), body, create: true)))
            case "partialUpdateObjectNoCreate": out.append((name, .partial(try needID(), body, create: false)))
            case "deleteObject": out.append((name, .delete(try needID())))
            case "delete": out.append((name, .deleteIndex))
            case "clear": out.append((name, .clear))
            default:
                throw RESTError(
                    .badRequest,
                    "\(at): action '\(action)' is not one of addObject, updateObject, partialUpdateObject, partialUpdateObjectNoCreate, deleteObject, delete, clear"
                )
            }
        }
        return out
    }

    /// A batch's effects, worked out in full before anything is stored.
    enum Step {
        /// Records to store, as items; `flattens`: some record of the index
        /// so far had a nested object or `_geoloc`.
        case publish([JSONValue], flattens: Bool)
        case deleteIDs([String])
        case clear
        case deleteIndex
    }

    /// One index's operations, checked and made into steps.
    struct PreparedWrite {
        var index: String
        var steps: [Step]
    }

    /// Runs operations in order, refused whole when one is bad.
    func write(_ c: Call, _ index: String, _ ops: [Operation]) async throws(RESTError) {
        try await atomically(c, [(index, ops)]) { () async throws(RESTError) in
            try await apply(c, try await prepare(c, index, ops))
        }
    }

    /// Runs `work` holding the keys of every record the operations write
    /// when one of them is a partial update (a read, then a write): no other
    /// write of those records — REST or ZeroMQ, through this coordinator,
    /// the only one taking writes — is applied between the read and the
    /// write, and the read sees every write of them acknowledged before
    /// (``ItemWriteLocks``). The keys are taken all at once, so two batches
    /// never wait for each other. Without a partial update each publish or
    /// delete holds its own records' keys as it is stored.
    func atomically(_ c: Call, _ ops: [(index: String, ops: [Operation])], _ work: () async throws(RESTError) -> Void) async throws(RESTError) {
        let reads = ops.contains { $0.ops.contains { if case .partial = $0 { true } else { false } } }
        guard reads else { return try await work() }
        let uids = ops.flatMap { i in i.ops.compactMap(Self.objectID).map { AlgoliaIndex.uid(i.index, $0) } }
        let owner = await core.lockItems(uids, key: c.key)
        let result: Result<Void, RESTError> = await CoordinatorCore.$lockOwner.withValue(owner) {
            do throws(RESTError) {
                try await work()
                return .success(())
            } catch { return .failure(error) }
        }
        await core.unlockItems(owner)
        try result.get()
    }

    /// Checks every operation and works out its effect, storing nothing:
    /// each record is made into its item and checked as a shard checks it
    /// (``ItemDecoder``), partial updates applied to the records they change
    /// (their last state within the batch), so that a bad record or
    /// operation refuses the whole batch, naming it, as Algolia does.
    /// Saves are gathered into publishes; a delete or clear ends one.
    func prepare(_ c: Call, _ index: String, _ ops: [Operation]) async throws(RESTError) -> PreparedWrite {
        if let primary = try await loadMeta(c, index)?.settings.primary {
            throw RESTError(.badRequest, "index '\(index)' is a replica of '\(primary)': write its records to '\(primary)'")
        }
        let partialIDs = ops.compactMap { op -> String? in if case .partial(let id, _, _) = op { id } else { nil } }
        // The records as the batch leaves them, for its partial updates to
        // start from: kept only when the batch has one.
        let tracking = !partialIDs.isEmpty
        var current = try await records(c, index, Array(Set(partialIDs)))
        var steps: [Step] = []
        var pending: [String: JSONValue] = [:]
        var pendingOrder: [String] = []
        var flattens = false
        // Checks each item as a shard decodes it, keeping nothing (the items
        // are sent on as JSON).
        let decoder = ItemDecoder()
        let names = AlgoliaIndex.Names(index)
        func close() {
            guard !pendingOrder.isEmpty else { return }
            steps.append(.publish(pendingOrder.compactMap { pending[$0] }, flattens: flattens))
            pending = [:]
            pendingOrder = []
        }
        func save(_ id: String, _ record: [String: JSONValue]) throws(RESTError) {
            guard !id.isEmpty else { throw RESTError(.badRequest, "an objectID must not be empty") }
            if !flattens, record["_geoloc"] != nil || record.values.contains(where: Self.flattened) { flattens = true }
            let item: JSONValue
            do throws(RESTError) { item = try AlgoliaRecord.item(record, objectID: id, names: names) } catch {
                throw RESTError(error.code, "record '\(id)' is refused, and nothing of the batch was stored: \(error.message)")
            }
            do throws(ItemError) { try decoder.check(item) } catch {
                let field = error.field.map { " (\($0))" } ?? ""
                throw RESTError(.badRequest, "record '\(id)' is refused, and nothing of the batch was stored: \(error.message)\(field)")
            }
            if pending[id] == nil { pendingOrder.append(id) }
            pending[id] = item
            if tracking {
                var r = record
                r["objectID"] = .string(id)
                current[id] = r
            }
        }
        for op in ops {
            switch op {
            case .save(let id, let record): try save(id, record)
            case .partial(let id, let changes, let create):
                guard let before = current[id] ?? (create ? [:] : nil) else { continue }
                let after: [String: JSONValue]
                do throws(RESTError) { after = try Self.applyPartial(changes, to: before) } catch {
                    throw RESTError(error.code, "record '\(id)' is refused, and nothing of the batch was stored: \(error.message)")
                }
                try save(id, after)
            case .delete(let id):
                close()
                current[id] = nil
                if case .deleteIDs(let ids)? = steps.last {
                    steps[steps.count - 1] = .deleteIDs(ids + [AlgoliaIndex.uid(index, id)])
                } else {
                    steps.append(.deleteIDs([AlgoliaIndex.uid(index, id)]))
                }
            case .clear:
                close()
                current = [:]
                steps.append(.clear)
            case .deleteIndex:
                close()
                current = [:]
                flattens = false
                steps.append(.deleteIndex)
            }
        }
        close()
        return PreparedWrite(index: index, steps: steps)
    }

    /// Stores a prepared write, step by step.
    func apply(_ c: Call, _ w: PreparedWrite) async throws(RESTError) {
        let index = w.index
        var meta = try await ensureMeta(c, index)
        for step in w.steps {
            switch step {
            case .publish(let items, let flattens):
                // Marked before the records are stored, so no search answers them unrebuilt.
                if flattens, !meta.flattened {
                    meta.flattened = true
                    try await saveMeta(c, meta)
                }
                if items.contains(where: { $0["attributes"]?[AlgoliaRecord.objectsAttribute] != nil }) { try await declareObjects(c) }
                try await publish(items, key: c.key)
            case .deleteIDs(let ids): try await delete(ids: ids, key: c.key)
            case .clear: try await delete(domains: [AlgoliaIndex.recordsDomain(index)], key: c.key)
            case .deleteIndex:
                try await delete(domains: [AlgoliaIndex.domain(index)], key: c.key)
                state.setMeta(c.app, index, nil)
                // What the batch writes after the delete goes to a new, empty index.
                meta = try await ensureMeta(c, index)
            }
        }
    }

    /// Whether a field's value is stored otherwise than as given: an object
    /// (as dotted attributes) or a list of objects.
    static func flattened(_ v: JSONValue) -> Bool {
        v.objectValue != nil || v.arrayValue?.contains { $0.objectValue != nil } == true
    }

    /// Declares ``AlgoliaRecord/objectsAttribute`` not searchable, once per
    /// process, before the first record holding it is stored (declaring it
    /// again is accepted, so a restarted coordinator just declares it anew).
    func declareObjects(_ c: Call) async throws(RESTError) {
        guard !state.objectsDeclared.load(ordering: .relaxed) else { return }
        let spec = AttributeSpec(name: AlgoliaRecord.objectsAttribute, type: .text, searchable: false, searchableByDefault: false)
        _ = try await call(.declare(Body.Declare(attributes: [AttributeDeclaration(spec)])), key: c.key)
        state.objectsDeclared.store(true, ordering: .relaxed)
    }

    /// A partial update: plain values replace the attribute, Algolia's
    /// built-in operations (`{"_operation": …, "value": …}`) change it.
    static func applyPartial(_ changes: [String: JSONValue], to record: [String: JSONValue]) throws(RESTError) -> [String: JSONValue] {
        var r = record
        for (name, change) in changes where name != "objectID" {
            guard let op = change["_operation"]?.stringValue else {
                r[name] = change
                continue
            }
            let value = change["value"] ?? .null
            let old = r[name]
            switch op {
            case "Increment", "Decrement":
                guard let n = value.doubleValue else { throw RESTError(.badRequest, "\(op) of '\(name)' needs a numeric value") }
                r[name] = .number((old?.doubleValue ?? 0) + (op == "Increment" ? n : -n))
            case "IncrementSet":
                guard let n = value.doubleValue else { throw RESTError(.badRequest, "\(op) of '\(name)' needs a numeric value") }
                r[name] = .number(old?.doubleValue.map { $0 + n } ?? n)
            case "IncrementFrom":
                guard let n = value.doubleValue else { throw RESTError(.badRequest, "\(op) of '\(name)' needs a numeric value") }
                if old?.doubleValue == n || old == nil { r[name] = .number(n + (old == nil ? 0 : 1)) }
            case "Add", "AddUnique":
                var list = old?.arrayValue ?? (old.map { [$0] } ?? [])
                let adding = value.arrayValue ?? [value]
                for v in adding where op == "Add" || !list.contains(v) { list.append(v) }
                r[name] = .array(list)
            case "Remove":
                let removing = value.arrayValue ?? [value]
                if let list = old?.arrayValue { r[name] = .array(list.filter { !removing.contains($0) }) }
            default:
                throw RESTError(
                    .badRequest, "'\(op)' of '\(name)' is not one of Increment, Decrement, IncrementSet, IncrementFrom, Add, Remove, AddUnique")
            }
        }
        return r
    }

    // MARK: Whole indices

    func clear(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        try await write(c, index, [.clear])
        return .object(["taskID": task(), "updatedAt": .string(Self.now())])
    }

    func deleteIndex(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        try await delete(domains: [AlgoliaIndex.domain(index)], key: c.key)
        state.setMeta(c.app, index, nil)
        return .object(["taskID": task(), "deletedAt": .string(Self.now())])
    }

    /// `deleteByQuery`: the records the filters select (`filters`,
    /// `facetFilters`, `numericFilters`, `tagFilters`, the geo parameters),
    /// found as a search finds them and deleted by objectID.
    func deleteByQuery(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        var params = AlgoliaParams.from(c.body.objectValue ?? [:])
        if let q = params["query"]?.stringValue, !q.isEmpty {
            throw RESTError(.badRequest, "deleteByQuery takes filters, not a query: use filters, facetFilters, numericFilters or tagFilters")
        }
        params["query"] = nil
        let filter: QueryPlan.Predicate
        do throws(SearchParametersError) { filter = try SearchRequest(params: .object(params)).plan.filter } catch {
            throw RESTError(.badRequest, error.parameter.isEmpty ? error.message : "\(error.message) (\(error.parameter))")
        }
        let found = try await items(.and([AlgoliaIndex.records(index), filter]), key: c.key)
        let ids = found.compactMap { $0["uniqueIdentifier"]?.stringValue }
        try await delete(ids: ids, key: c.key)
        return .object(["taskID": task(), "updatedAt": .string(Self.now())])
    }

    /// `operation`: `copy` or `move` to `destination`, which is replaced.
    /// `scope` (settings, synonyms, rules) copies only those, not the records.
    func operation(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        guard let op = c.body["operation"]?.stringValue, op == "copy" || op == "move" else {
            throw RESTError(.badRequest, "operation must be copy or move")
        }
        guard let destination = c.body["destination"]?.stringValue, !destination.isEmpty, destination != index else {
            throw RESTError(.badRequest, "destination must name another index")
        }
        let scope = c.body["scope"]?.arrayValue?.compactMap(\.stringValue)
        if op == "move" && scope != nil { throw RESTError(.badRequest, "scope is for copy only") }
        let app = c.app
        let source = try await loadMeta(c, index)
        let copySettings = scope?.contains("settings") ?? true
        let copySynonyms = scope?.contains("synonyms") ?? true
        let copyRecords = scope == nil
        var items: [JSONValue] = []
        if copyRecords {
            for item in try await self.items(AlgoliaIndex.records(index), key: c.key) {
                guard let r = AlgoliaRecord.record(item: item, index: index), let id = r["objectID"]?.stringValue else { continue }
                items.append(try AlgoliaRecord.item(r, objectID: id, index: destination))
            }
        }
        if copySynonyms {
            for s in try await synonyms(c, index) {
                guard let id = s["objectID"]?.stringValue else { continue }
                items.append(Self.synonymItem(destination, id, s))
            }
        }
        var meta = AlgoliaIndexMeta(name: destination)
        if copySettings, let source { meta.settings = source.settings }
        meta.settings.json["primary"] = nil
        if !copySettings, let existing = try await loadMeta(c, destination) { meta.settings = existing.settings }
        items.append(meta.item)
        // The destination is replaced: what it held goes first.
        try await delete(domains: [copyRecords ? AlgoliaIndex.domain(destination) : AlgoliaIndex.metaDomain(destination)], key: c.key)
        try await publish(items, key: c.key)
        state.setMeta(app, destination, meta)
        if op == "move" {
            try await delete(domains: [AlgoliaIndex.domain(index)], key: c.key)
            state.setMeta(app, index, nil)
        }
        return .object(["taskID": task(), "updatedAt": .string(Self.now())])
    }

    // MARK: Tasks

    func task() -> JSONValue { .number(Double(state.nextTask())) }

    func task(_ text: String) throws(RESTError) -> JSONValue {
        guard let id = Int(text) else { throw RESTError(.badRequest, "'\(text)' is not a task id") }
        guard state.issued(id) else { throw RESTError(.notFound, "no task \(id)") }
        return .object(["status": .string("published"), "pendingTask": .bool(false)])
    }

    static func object(_ v: JSONValue, _ message: String) throws(RESTError) -> [String: JSONValue] {
        guard let o = v.objectValue else { throw RESTError(.badRequest, message) }
        return o
    }
}
