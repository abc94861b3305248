import Foundation
import Items
import QueryPlan
import SearchParameters

/// Index settings, the list of indices, synonyms.
extension AlgoliaREST {
    // MARK: Meta

    /// The index's settings and dates: from this process's cache, else from
    /// the store; nil for an index never written.
    func loadMeta(_ c: Call, _ index: String) async throws(RESTError) -> AlgoliaIndexMeta? {
        let app = c.app
        if let m = state.meta(app, index) { return m }
        let found = try await items(.identifier([AlgoliaIndex.metaUID(index)]), key: c.key)
        guard let m = found.lazy.compactMap(AlgoliaIndexMeta.init(item:)).first else { return nil }
        state.setMeta(app, index, m)
        return m
    }

    /// The index's meta, made (and stored) the first time the index is written.
    func ensureMeta(_ c: Call, _ index: String) async throws(RESTError) -> AlgoliaIndexMeta {
        if let m = try await loadMeta(c, index) { return m }
        let m = AlgoliaIndexMeta(name: index)
        try await saveMeta(c, m)
        return m
    }

    func saveMeta(_ c: Call, _ m: AlgoliaIndexMeta) async throws(RESTError) {
        try await publish([m.item], key: c.key)
        state.setMeta(c.app, m.name, m)
    }

    // MARK: Settings

    func getSettings(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        guard let m = try await loadMeta(c, index) else { throw RESTError(.notFound, "index '\(index)' does not exist") }
        var s = m.settings.json
        if s["hitsPerPage"] == nil { s["hitsPerPage"] = .number(20) }
        if s["paginationLimitedTo"] == nil { s["paginationLimitedTo"] = .number(1000) }
        if s["ranking"] == nil {
            s["ranking"] = .array(AlgoliaSettings.defaultRanking.map { .string($0) })
        }
        return .object(s)
    }

    /// `PUT settings`: the given settings replace those of the same names
    /// (null resets one). Replicas named become indices whose settings say
    /// `primary`, showing this index's records; `forwardToReplicas` sends
    /// the same settings (but `replicas`) to them.
    func setSettings(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        let given = try Self.object(c.body, "the body must be the settings, a JSON object")
        try AlgoliaSettings.check(given)
        var m = try await loadMeta(c, index) ?? AlgoliaIndexMeta(name: index)
        let before = Set(m.settings.replicas)
        for (k, v) in given {
            m.settings.json[k] = v == .null ? nil : v
        }
        m.updatedAt = Date()
        try await saveMeta(c, m)
        let forward = c.query["forwardToReplicas"] == "true"
        for replica in m.settings.replicas {
            var r = try await loadMeta(c, replica) ?? AlgoliaIndexMeta(name: replica)
            r.settings.json["primary"] = .string(index)
            if forward {
                for (k, v) in given where k != "replicas" { r.settings.json[k] = v == .null ? nil : v }
            }
            r.updatedAt = Date()
            try await saveMeta(c, r)
        }
        // Replicas no longer named stand alone again (empty, as Algolia leaves them).
        for gone in before.subtracting(m.settings.replicas) {
            guard var r = try await loadMeta(c, gone) else { continue }
            r.settings.json["primary"] = nil
            try await saveMeta(c, r)
        }
        return .object(["taskID": task(), "updatedAt": .string(Self.now())])
    }

    // MARK: Indices

    /// `GET /1/indexes`: every index of the app, with its record count.
    func listIndices(_ c: Call) async throws(RESTError) -> JSONValue {
        let metas = try await items(.and([.domain([AlgoliaIndex.root]), .exists(.named(AlgoliaIndex.metaAttribute))]), key: c.key)
            .compactMap(AlgoliaIndexMeta.init(item:)).sorted { $0.name < $1.name }
        var out: [JSONValue] = []
        for m in metas {
            let records = m.settings.primary ?? m.name
            let response = try await search(["hitsPerPage": .number(0)], within: AlgoliaIndex.records(records), key: c.key)
            let entries = response["nbHits"]?.intValue ?? 0
            // A replica holds no records of its own.
            let size = m.settings.primary == nil ? try await dataSize(c, records, entries: entries) : 0
            var o: [String: JSONValue] = [
                "name": .string(m.name), "createdAt": .string(ISODate.format(m.createdAt)),
                "updatedAt": .string(ISODate.format(m.updatedAt)), "entries": .number(Double(entries)),
                "dataSize": .number(Double(size)), "fileSize": .number(Double(size)), "lastBuildTimeS": .number(0),
                "numberOfPendingTasks": .number(0), "pendingTask": .bool(false),
            ]
            if let p = m.settings.primary { o["primary"] = .string(p) }
            let replicas = m.settings.json["replicas"]?.arrayValue ?? []
            if !replicas.isEmpty { o["replicas"] = .array(replicas) }
            out.append(.object(o))
        }
        return .object(["items": .array(out), "nbPages": .number(1)])
    }

    /// Records read to measure an index's size; beyond, the size is scaled from them.
    static let sizeSample = 1000

    /// The bytes of an index's records, each as its JSON (the record a `GET`
    /// answers, written compactly): summed over every record up to
    /// ``sizeSample`` of them, and for a larger index the mean of that many
    /// times `entries`. A shard holds many indices in one file, so no file
    /// size is the index's own: `fileSize` is the same measure.
    func dataSize(_ c: Call, _ index: String, entries: Int) async throws(RESTError) -> Int {
        guard entries > 0 else { return 0 }
        let sample = try await items(AlgoliaIndex.records(index), key: c.key, limit: Self.sizeSample)
        let bytes = sample.reduce(0) { sum, item in
            sum + (AlgoliaRecord.record(item: item, index: index).map { JSONWriter.bytes(.object($0)).count } ?? 0)
        }
        guard !sample.isEmpty else { return 0 }
        return sample.count >= entries ? bytes : Int((Double(bytes) / Double(sample.count) * Double(entries)).rounded())
    }

    // MARK: Synonyms

    /// Stored as items of the index's meta domain, one per synonym; kept and
    /// answered as Algolia does. Regular and one-way synonyms change matching
    /// (``matchingSynonyms(_:_:)``, ``QueryExpansion``).
    static func synonymItem(_ index: String, _ id: String, _ synonym: [String: JSONValue]) -> JSONValue {
        var s = synonym
        s["objectID"] = .string(id)
        return .object([
            "uniqueIdentifier": .string(AlgoliaIndex.synonymPrefix(index) + id),
            "domainIdentifier": .string(AlgoliaIndex.metaDomain(index)),
            "attributes": .object(["algoliaSynonym": .string(JSONWriter.string(.object(s)))]),
        ])
    }

    func synonyms(_ c: Call, _ index: String) async throws(RESTError) -> [[String: JSONValue]] {
        let found = try await items(
            .and([.domain([AlgoliaIndex.metaDomain(index)]), .exists(.named("algoliaSynonym"))]), key: c.key)
        return found.compactMap { $0["attributes"]?["algoliaSynonym"]?.stringValue.flatMap { try? JSONValue.parse($0) }?.objectValue }
            .sorted { ($0["objectID"]?.stringValue ?? "") < ($1["objectID"]?.stringValue ?? "") }
    }

    /// The index's synonyms as searches apply them: kept by ``AlgoliaState``
    /// after the first search reads them, so a search of an index costs no
    /// read for them; dropped when they are written here.
    func matchingSynonyms(_ c: Call, _ index: String) async throws(RESTError) -> [QuerySynonym] {
        if let known = state.synonyms(c.app, index) { return known }
        let list = try await synonyms(c, index).compactMap(QuerySynonym.init(json:))
        state.setSynonyms(c.app, index, list)
        return list
    }

    static let synonymTypes: Set<String> = ["synonym", "onewaysynonym", "altcorrection1", "altcorrection2", "placeholder"]

    func checkedSynonym(_ v: JSONValue, id: String?, at: String) throws(RESTError) -> (String, [String: JSONValue]) {
        let s = try Self.object(v, "\(at) must be a synonym object")
        guard let objectID = id ?? s["objectID"]?.stringValue, !objectID.isEmpty else { throw RESTError(.badRequest, "\(at) needs an objectID") }
        guard let type = s["type"]?.stringValue, Self.synonymTypes.contains(type) else {
            throw RESTError(.badRequest, "\(at): type must be one of synonym, onewaysynonym, altcorrection1, altcorrection2, placeholder")
        }
        return (objectID, s)
    }

    /// The index whose synonyms a write changes, and its replicas when the
    /// request says `forwardToReplicas=true` (as Algolia: a replica searches
    /// with its own synonyms, so a sort replica needs them forwarded).
    func synonymTargets(_ c: Call, _ index: String) async throws(RESTError) -> [String] {
        guard c.query["forwardToReplicas"] == "true", let m = try await loadMeta(c, index) else { return [index] }
        return [index] + m.settings.replicas
    }

    func saveSynonyms(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        guard let list = c.body.arrayValue else { throw RESTError(.badRequest, "the body must be a list of synonyms") }
        var checked: [(String, [String: JSONValue])] = []
        for (i, v) in list.enumerated() { checked.append(try checkedSynonym(v, id: nil, at: "synonyms[\(i)]")) }
        var items: [JSONValue] = []
        let targets = try await synonymTargets(c, index)
        for target in targets {
            _ = try await ensureMeta(c, target)
            if c.query["replaceExistingSynonyms"] == "true" || c.query["clearExistingSynonyms"] == "true" {
                try await deleteSynonyms(c, target)
            }
            items += checked.map { Self.synonymItem(target, $0.0, $0.1) }
        }
        try await publish(items, key: c.key)
        for target in targets { state.setSynonyms(c.app, target, nil) }
        return .object(["taskID": task(), "updatedAt": .string(Self.now())])
    }

    func saveSynonym(_ c: Call, _ index: String, _ id: String) async throws(RESTError) -> JSONValue {
        let (_, s) = try checkedSynonym(c.body, id: id, at: "the synonym")
        let targets = try await synonymTargets(c, index)
        for target in targets { _ = try await ensureMeta(c, target) }
        try await publish(targets.map { Self.synonymItem($0, id, s) }, key: c.key)
        for target in targets { state.setSynonyms(c.app, target, nil) }
        return .object(["taskID": task(), "updatedAt": .string(Self.now()), "id": .string(id)])
    }

    func getSynonym(_ c: Call, _ index: String, _ id: String) async throws(RESTError) -> JSONValue {
        guard let s = try await synonyms(c, index).first(where: { $0["objectID"]?.stringValue == id }) else {
            throw RESTError(.notFound, "index '\(index)' has no synonym '\(id)'")
        }
        return .object(s)
    }

    func deleteSynonym(_ c: Call, _ index: String, _ id: String) async throws(RESTError) -> JSONValue {
        let targets = try await synonymTargets(c, index)
        try await delete(ids: targets.map { AlgoliaIndex.synonymPrefix($0) + id }, key: c.key)
        for target in targets { state.setSynonyms(c.app, target, nil) }
        return .object(["taskID": task(), "deletedAt": .string(Self.now())])
    }

    func deleteSynonyms(_ c: Call, _ index: String) async throws(RESTError) {
        let ids = try await synonyms(c, index).compactMap { $0["objectID"]?.stringValue }.map { AlgoliaIndex.synonymPrefix(index) + $0 }
        if !ids.isEmpty { try await delete(ids: ids, key: c.key) }
        state.setSynonyms(c.app, index, nil)
    }

    func clearSynonyms(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        for target in try await synonymTargets(c, index) { try await deleteSynonyms(c, target) }
        return .object(["taskID": task(), "updatedAt": .string(Self.now())])
    }

    /// `synonyms/search`: by `query` (words in any of the synonym's texts), `type`, paged.
    func searchSynonyms(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        let query = (c.body["query"]?.stringValue ?? "").lowercased()
        let type = c.body["type"]?.stringValue
        let page = c.body["page"]?.intValue ?? 0
        let per = max(1, c.body["hitsPerPage"]?.intValue ?? 100)
        let all = try await synonyms(c, index).filter { s in
            if let type, s["type"]?.stringValue != type { return false }
            if query.isEmpty { return true }
            return JSONWriter.string(.object(s)).lowercased().contains(query)
        }
        let hits = all.dropFirst(page * per).prefix(per).map { JSONValue.object($0) }
        return .object(["hits": .array(Array(hits)), "nbHits": .number(Double(all.count))])
    }
}
