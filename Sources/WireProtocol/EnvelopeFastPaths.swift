// The hand-written encodings and decodings of the messages on a hot path,
// beside their Codable form (EnvelopeCodable.swift), which every other
// message takes:
//
// - written straight, keys in JSONWriter's order: `search`, a written
//   `search_result` (its response spliced in), `result_batch` with raw items,
//   `shard_batch` with raw hits;
// - built from and to the parsed tree (`fastJSON`, `fastBody`): the messages
//   that carry items (`publish`, `write`, `result_batch`, `shard_batch`,
//   `shard_search_result`, `suggest_result` and the others in `fastJSON`).
//
// Each must give exactly the bytes and values of the Codable form:
// `EnvelopeTests.handWrittenEncodingsEqualTheCodableForm` and
// `RawShardBatchTests` hold them to it.
import Foundation
import Items
import QueryPlan

extension Envelope {
    /// A `search` written straight, keys in JSONWriter's order: every
    /// client search is one, and through the member writer its two small
    /// objects would be a tree built, sorted and written again.
    func rawSearch(_ b: Body.Search) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160)
        out += "{".utf8
        if let d = b.deadlineMs {
            out += "\"deadlineMs\":".utf8
            JSONWriter.write(.number(Double(d)), into: &out)
            out += ",".utf8
        }
        writeIDAndKey(into: &out)
        out += ",\"params\":".utf8
        JSONWriter.write(b.params, into: &out)
        out += ",\"type\":\"search\",\"v\":\(version)}".utf8
        return out
    }

    /// `"id":…`, and `"key":…` when there is one: written together where a
    /// hand-written frame has no member whose key sorts between the two.
    func writeIDAndKey(into out: inout [UInt8]) {
        out += "\"id\":".utf8
        JSONWriter.writeString(id, into: &out)
        if let key {
            out += ",\"key\":".utf8
            JSONWriter.writeString(key, into: &out)
        }
    }

    /// A `search_result` whose response was written already, spliced in.
    func rawSearchResult(_ failed: [ShardFailure], _ response: RawJSON) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(response.bytes.count + 128)
        out += "{\"failedShards\":".utf8
        JSONWriter.write(.array(failed.map(\.json)), into: &out)
        out += ",".utf8
        writeIDAndKey(into: &out)
        out += ",\"response\":".utf8
        out += response.bytes
        out += ",\"type\":\"search_result\",\"v\":\(version)}".utf8
        return out
    }

    /// A `result_batch` whose items are spliced in as they came: the same
    /// bytes ``JSONWriter`` gives for the decoded batch (keys in sorted order).
    func rawResultBatch(_ items: [RawJSON], seq: Int, completion: Body.Completion?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(items.reduce(96 + id.utf8.count) { $0 + $1.bytes.count + 1 } + (completion == nil ? 0 : 128))
        out += "{".utf8
        if let completion {
            out += "\"completion\":".utf8
            JSONWriter.write(completion.json, into: &out)
            out += ",".utf8
        }
        out += "\"id\":".utf8
        JSONWriter.writeString(id, into: &out)
        out += ",\"items\":[".utf8
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += item.bytes
        }
        out += "]".utf8
        if let key {
            out += ",\"key\":".utf8
            JSONWriter.writeString(key, into: &out)
        }
        out += ",\"seq\":\(seq),\"type\":\"\(type.rawValue)\",\"v\":\(version)}".utf8
        return out
    }

    /// A `shard_batch` whose items are spliced in as the store gave them,
    /// in ``JSONWriter``'s form (keys in sorted order), as ``fastJSON()``
    /// would write the decoded batch.
    func rawShardBatch(_ b: Body.ShardBatch, _ hits: [RawShardBatch.RawHit]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(hits.reduce(128 + id.utf8.count) { $0 + $1.item.bytes.count + 16 })
        out.append(UInt8(ascii: "{"))
        if let n = b.doneCount { out += "\"doneCount\":\(n),".utf8 }
        out += "\"hits\":[".utf8
        for (i, h) in hits.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += "{\"item\":".utf8
            out += h.item.bytes
            if let score = h.score {
                out += ",\"score\":".utf8
                JSONWriter.write(.number(score), into: &out)
            }
            if let sort = h.sort {
                out += ",\"sort\":".utf8
                JSONWriter.write(.array(sort), into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out += "],".utf8
        writeIDAndKey(into: &out)
        out += ",\"seq\":\(b.seq),\"shard\":\(b.shard),\"type\":\"\(type.rawValue)\",\"v\":\(version)}".utf8
        return out
    }

    /// A list of ranked hits as ``JSONWriter`` writes its tree, each item
    /// spliced in as the store wrote it when the hit holds it so
    /// (``Body/RankedHit/rawItem``): a search's hits are never built as
    /// trees on the worker, and the coordinator reads them back as bytes
    /// (``RawShardSearchResult``).
    static func rankedHitsBytes(_ hits: [Body.RankedHit]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(hits.reduce(2) { $0 + ($1.rawItem?.bytes.count ?? 256) + $1.id.utf8.count + 64 })
        out.append(UInt8(ascii: "["))
        for (i, h) in hits.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += "{\"id\":".utf8
            JSONWriter.writeString(h.id, into: &out)
            out += ",\"item\":".utf8
            if let raw = h.rawItem { out += raw.bytes } else { JSONWriter.write(h.item, into: &out) }
            out += ",\"rank\":".utf8
            JSONWriter.write(h.rank.json, into: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// A shard's domain groups, their hits as ``rankedHitsBytes(_:)`` writes them.
    static func groupsBytes(_ groups: [Body.ShardGroup]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, g) in groups.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += "{\"domainIdentifier\":".utf8
            JSONWriter.writeString(g.domainIdentifier, into: &out)
            out += ",\"hits\":".utf8
            out += rankedHitsBytes(g.hits)
            out += ",\"total\":\(g.total)}".utf8
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// The messages that carry items, built from and to the parsed tree
    /// directly: `Codable` over `JSONValue` tries each JSON kind in turn for
    /// every value, which would make it the largest cost of a write.
    func fastJSON() -> [String: JSONValue]? {
        switch body {
        case .publish(let b):
            var o: [String: JSONValue] = ["items": .array(b.items)]
            if let batch = b.batch { o["batch"] = .string(batch) }
            return o
        case .write(let b):
            var o: [String: JSONValue] = ["shard": .number(Double(b.shard)), "items": .array(b.items), "evict": .array(b.evict.map { .string($0) })]
            if let n = b.sequence { o["sequence"] = .number(Double(n)) }
            if let n = b.epoch { o["epoch"] = .number(Double(n)) }
            return o
        case .resultBatch(let b):
            var o: [String: JSONValue] = ["items": .array(b.items), "seq": .number(Double(b.seq))]
            if let c = b.completion { o["completion"] = c.json }
            return o
        case .shardBatch(let b):
            let hits: [JSONValue] = b.hits.map { h in
                var o: [String: JSONValue] = ["item": h.item]
                if let sort = h.sort { o["sort"] = .array(sort) }
                if let score = h.score { o["score"] = .number(score) }
                return .object(o)
            }
            var o: [String: JSONValue] = ["shard": .number(Double(b.shard)), "seq": .number(Double(b.seq)), "hits": .array(hits)]
            if let n = b.doneCount { o["doneCount"] = .number(Double(n)) }
            return o
        // The messages of every query's path (`limelight-bench path`): the
        // Codable encoder builds a tree of boxes for each, which showed in the
        // coordinator's profile.
        case .shardQuery(let b):
            var o: [String: JSONValue] = ["shard": .number(Double(b.shard)), "plan": b.plan]
            if let d = b.deadlineMs { o["deadlineMs"] = .number(Double(d)) }
            if let k = b.keepSlots { o["keepSlots"] = k.json }
            return o
        case .shardDone(let b):
            var o: [String: JSONValue] = ["shard": .number(Double(b.shard)), "count": .number(Double(b.count))]
            if let e = b.error { o["error"] = e.json }
            return o
        case .cancel(let b):
            return ["query": .string(b.query)]
        case .completion(let b):
            guard case .object(let o) = b.json else { return nil }
            return o
        case .search(let b):
            var o: [String: JSONValue] = ["params": b.params]
            if let d = b.deadlineMs { o["deadlineMs"] = .number(Double(d)) }
            return o
        case .searchResult(let b):
            return ["response": b.response, "failedShards": .array(b.failedShards.map(\.json))]
        case .suggestResult(let b):
            var o: [String: JSONValue] = [
                "suggestions": .array(b.suggestions.map { .object(["suggestion": .string($0.suggestion), "count": .number(Double($0.count))]) }),
                "failedShards": .array(b.failedShards.map(\.json)),
            ]
            if let r = b.response { o["response"] = r }
            return o
        case .shardSearch(let b):
            var o: [String: JSONValue] = ["shard": .number(Double(b.shard)), "plan": b.plan]
            if let d = b.deadlineMs { o["deadlineMs"] = .number(Double(d)) }
            if let n = b.suggest { o["suggest"] = .number(Double(n)) }
            if let n = b.perDomain { o["perDomain"] = .number(Double(n)) }
            if let k = b.keepSlots { o["keepSlots"] = k.json }
            return o
        case .shardSearchResult(let b):
            // The hits and groups are spliced in by ``encoded()`` (``rankedHitsBytes(_:)``).
            var o: [String: JSONValue] = [
                "shard": .number(Double(b.shard)), "nbHits": .number(Double(b.nbHits)),
                "exhaustiveFacetsCount": .bool(b.exhaustiveFacetsCount),
                "facets": .object(b.facets.mapValues { .object($0.mapValues { .number(Double($0)) }) }),
                "facetStats": .object(b.facetStats.mapValues { .array($0.map { .number($0) }) }),
            ]
            if let s = b.suggestions {
                o["suggestions"] = .array(s.map { .object(["suggestion": .string($0.suggestion), "count": .number(Double($0.count))]) })
            }
            return o
        default:
            return nil
        }
    }

    static func fastBody(_ type: MessageType, _ o: [String: JSONValue], typeName: String, id: String) throws(ProtocolError) -> Body? {
        func fail(_ message: String) -> ProtocolError { ProtocolError(.invalidMessage, "\(typeName): \(message)", id: id) }
        func list(_ key: String) throws(ProtocolError) -> [JSONValue] {
            guard let v = o[key] else { throw fail("missing field '\(key)'") }
            guard let a = v.arrayValue else { throw fail("field '\(key)' should be a list") }
            return a
        }
        func int(_ key: String) throws(ProtocolError) -> Int {
            guard let v = o[key] else { throw fail("missing field '\(key)'") }
            guard let n = v.intValue else { throw fail("field '\(key)' should be a whole number") }
            return n
        }
        func optionalInt(_ key: String) throws(ProtocolError) -> Int? {
            guard let v = o[key], v != .null else { return nil }
            guard let n = v.intValue else { throw fail("field '\(key)' should be a whole number") }
            return n
        }
        func optionalString(_ key: String) throws(ProtocolError) -> String? {
            guard let v = o[key], v != .null else { return nil }
            guard let s = v.stringValue else { throw fail("field '\(key)' should be text") }
            return s
        }
        switch type {
        case .publish:
            return .publish(Body.Publish(items: try list("items"), batch: try optionalString("batch")))
        case .write:
            var evict: [String] = []
            if o["evict"] != nil {
                for (i, e) in try list("evict").enumerated() {
                    guard let s = e.stringValue else { throw fail("field 'evict[\(i)]' should be text") }
                    evict.append(s)
                }
            }
            var write = Body.Write(shard: try int("shard"), items: try list("items"), evict: evict)
            write.sequence = try optionalInt("sequence")
            write.epoch = try optionalInt("epoch")
            return .write(write)
        case .resultBatch:
            var completion: Body.Completion?
            if let c = o["completion"], c != .null {
                do { completion = try JSONValueDecoder().decode(Body.Completion.self, from: c) } catch {
                    throw fail("field 'completion' should be a completion: \(error)")
                }
            }
            return .resultBatch(Body.ResultBatch(items: try list("items"), seq: try int("seq"), completion: completion))
        case .shardBatch:
            var hits: [Hit] = []
            for (i, h) in try list("hits").enumerated() {
                guard case .object(let ho) = h, let item = ho["item"] else { throw fail("field 'hits[\(i)]' should be an object with an 'item'") }
                hits.append(Hit(item: item, sort: ho["sort"]?.arrayValue, score: ho["score"]?.doubleValue))
            }
            return .shardBatch(Body.ShardBatch(shard: try int("shard"), seq: try int("seq"), hits: hits, doneCount: try optionalInt("doneCount")))
        case .search:
            guard let params = o["params"] else { throw fail("missing field 'params'") }
            return .search(Body.Search(params: params, deadlineMs: try optionalInt("deadlineMs")))
        case .searchResult:
            guard let response = o["response"] else { throw fail("missing field 'response'") }
            var failed: [ShardFailure] = []
            for (i, f) in (o["failedShards"]?.arrayValue ?? []).enumerated() {
                guard let shard = f["shard"]?.intValue, let reason = f["reason"]?.stringValue else {
                    throw fail("field 'failedShards[\(i)]' should be {shard, reason}")
                }
                failed.append(ShardFailure(shard: shard, reason: reason))
            }
            return .searchResult(Body.SearchResult(response: response, failedShards: failed))
        case .shardSearch:
            guard let plan = o["plan"] else { throw fail("missing field 'plan'") }
            var keep: Body.KeepSlots?
            if let k = o["keepSlots"], k != .null {
                guard let slots = k["slots"]?.intValue, let shards = k["shards"]?.intValue, let shard = k["shard"]?.intValue else {
                    throw fail("field 'keepSlots' should be {slots, shards, shard}")
                }
                keep = Body.KeepSlots(slots: slots, shards: shards, shard: shard)
            }
            return .shardSearch(
                Body.ShardSearch(
                    shard: try int("shard"), plan: plan, deadlineMs: try optionalInt("deadlineMs"),
                    suggest: try optionalInt("suggest"), perDomain: try optionalInt("perDomain"), keepSlots: keep))
        case .shardSearchResult:
            func rankedHits(_ list: [JSONValue], _ path: String) throws(ProtocolError) -> [Body.RankedHit] {
                var hits: [Body.RankedHit] = []
                for (i, h) in list.enumerated() {
                    guard let id = h["id"]?.stringValue, let item = h["item"], let rank = h["rank"] else {
                        throw fail("field '\(path)[\(i)]' should be {id, item, rank}")
                    }
                    let typed: SearchRank
                    do throws(PlanDecodingError) { typed = try SearchRank(json: rank) } catch {
                        throw fail("field '\(path)[\(i)].rank': \(error.message)")
                    }
                    hits.append(Body.RankedHit(id: id, item: item, rank: typed))
                }
                return hits
            }
            let hits = try rankedHits(try list("hits"), "hits")
            var suggestions: [Body.SuggestionCount]?
            if let s = o["suggestions"], s != .null {
                guard let a = s.arrayValue else { throw fail("field 'suggestions' should be a list") }
                suggestions = []
                for (i, e) in a.enumerated() {
                    guard let text = e["suggestion"]?.stringValue, let n = e["count"]?.intValue else {
                        throw fail("field 'suggestions[\(i)]' should be {suggestion, count}")
                    }
                    suggestions?.append(Body.SuggestionCount(suggestion: text, count: n))
                }
            }
            var groups: [Body.ShardGroup]?
            if let g = o["groups"], g != .null {
                guard let a = g.arrayValue else { throw fail("field 'groups' should be a list") }
                groups = []
                for (i, e) in a.enumerated() {
                    guard let d = e["domainIdentifier"]?.stringValue, let t = e["total"]?.intValue, let hs = e["hits"]?.arrayValue else {
                        throw fail("field 'groups[\(i)]' should be {domainIdentifier, total, hits}")
                    }
                    groups?.append(Body.ShardGroup(domainIdentifier: d, total: t, hits: try rankedHits(hs, "groups[\(i)].hits")))
                }
            }
            var facets: [String: [String: Int]] = [:]
            for (name, values) in o["facets"]?.objectValue ?? [:] {
                guard let vs = values.objectValue else { throw fail("field 'facets.\(name)' should be an object of counts") }
                var counts: [String: Int] = [:]
                for (v, c) in vs {
                    guard let n = c.intValue else { throw fail("field 'facets.\(name)' should hold whole numbers") }
                    counts[v] = n
                }
                facets[name] = counts
            }
            var stats: [String: [Double]] = [:]
            for (name, v) in o["facetStats"]?.objectValue ?? [:] {
                guard let a = v.arrayValue?.compactMap(\.doubleValue), a.count == 4 else {
                    throw fail("field 'facetStats.\(name)' should be [min, max, sum, count]")
                }
                stats[name] = a
            }
            return .shardSearchResult(
                Body.ShardSearchResult(
                    shard: try int("shard"), hits: hits, nbHits: try int("nbHits"),
                    facets: facets, facetStats: stats,
                    exhaustiveFacetsCount: o["exhaustiveFacetsCount"]?.boolValue ?? true,
                    suggestions: suggestions, groups: groups))
        default:
            return nil
        }
    }
}
