import Foundation
import Items
import QueryPlan

/// Why a frame could not be read as a message.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let malformedJSON = Code("malformed_json")
        public static let unsupportedVersion = Code("unsupported_version")
        public static let unknownType = Code("unknown_type")
        public static let invalidMessage = Code("invalid_message")
        public static let tooLarge = Code("too_large")
    }

    public var code: Code
    public var message: String
    /// The request id, when the frame was readable far enough to find it, so the error reply can carry it.
    public var id: String?

    public init(_ code: Code, _ message: String, id: String? = nil) {
        self.code = code
        self.message = message
        self.id = id
    }

    public var description: String { "\(code): \(message)" }

    public var wire: WireError { WireError(code: code.rawValue, message: message) }
}

/// A message: protocol version, type, request id, body.
///
/// On the wire it is one JSON object in one ZeroMQ frame (ROUTER sockets add
/// their routing frames in front): `{"v": 1, "type": "query", "id": "q1", ...}`.
/// The `id` ties replies to requests: a query's batches and completion carry the query's id.
public struct Envelope: Sendable, Hashable {
    public var version: Int
    public var id: String
    public var body: Body
    /// The API key a client request is made with (docs/security.md): it
    /// names the app, never the message. Absent on every other message.
    public var key: String?

    public var type: MessageType { body.type }

    public init(id: String, body: Body, version: Int = protocolVersion, key: String? = nil) {
        self.version = version
        self.id = id
        self.body = body
        self.key = key
    }

    /// The largest frame accepted by default; larger frames get a `too_large` error reply.
    public static let defaultMaxFrameBytes = 32 * 1024 * 1024

    enum Keys: String, CodingKey { case v, type, id, key }

    public func encoded() -> Data {
        if case .resultBatch(let b) = body, let raw = b.rawItems { return Data(rawResultBatch(raw, seq: b.seq, completion: b.completion)) }
        if case .shardBatch(let b) = body, let raw = b.rawHits { return Data(rawShardBatch(b, raw)) }
        if case .search(let b) = body { return Data(rawSearch(b)) }
        if case .searchResult(let r) = body, let written = r.written { return Data(rawSearchResult(r.failedShards, written)) }
        if let fast = fastJSON() {
            var o = JSONObjectWriter()
            for (k, v) in fast { o.set(k, v) }
            // A response written already is spliced in as it is (a written
            // search result takes ``rawSearchResult(_:_:)``, above).
            if case .suggestResult(let r) = body, let written = r.written { o.set("response", bytes: written.bytes) }
            o.set("v", .number(Double(version)))
            o.set("type", .string(type.rawValue))
            o.set("id", .string(id))
            if let key { o.set("key", .string(key)) }
            var out: [UInt8] = []
            out.reserveCapacity(512)
            o.write(into: &out)
            return Data(out)
        }
        // The body's Codable form as a tree, written by the one writer.
        do { return Data(JSONWriter.bytes(try JSONValueEncoder().encode(EncodableEnvelope(envelope: self)))) } catch {
            // Every body is plain data; encoding cannot fail short of a bug.
            preconditionFailure("encoding \(type) failed: \(error)")
        }
    }

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

    /// Reads a frame. Every failure names what was wrong, so the peer can be told.
    public static func decode(_ data: Data, maxBytes: Int = defaultMaxFrameBytes) throws(ProtocolError) -> Envelope {
        guard data.count <= maxBytes else {
            throw ProtocolError(.tooLarge, "message of \(data.count) bytes exceeds the limit of \(maxBytes) bytes",
                                id: sniffID(data))
        }
        let head: JSONValue
        do { head = try JSONValue.parse(data) } catch {
            throw ProtocolError(.malformedJSON, "frame is not valid JSON (\(data.count) bytes)", id: sniffID(data))
        }
        guard case .object(let o) = head else {
            throw ProtocolError(.invalidMessage, "a message must be a JSON object, found \(head.kindName)")
        }
        if let raw = o["id"], raw.stringValue == nil {
            throw ProtocolError(.invalidMessage, "request 'id' must be text, found \(raw.kindName)")
        }
        let id = o["id"]?.stringValue
        guard let rawVersion = o["v"] else {
            throw ProtocolError(.invalidMessage, "missing protocol version 'v'", id: id)
        }
        guard let v = rawVersion.intValue else {
            throw ProtocolError(.invalidMessage, "protocol version 'v' must be a whole number, found \(rawVersion.kindName)", id: id)
        }
        guard v == protocolVersion else {
            throw ProtocolError(.unsupportedVersion, "protocol version \(v) is not supported; this peer speaks \(protocolVersion)", id: id)
        }
        guard let rawType = o["type"] else {
            throw ProtocolError(.invalidMessage, "missing message 'type'", id: id)
        }
        guard let typeName = rawType.stringValue else {
            throw ProtocolError(.invalidMessage, "message 'type' must be text, found \(rawType.kindName)", id: id)
        }
        guard let type = MessageType(rawValue: typeName) else {
            throw ProtocolError(.unknownType, "unknown message type '\(typeName)'", id: id)
        }
        guard let id else {
            throw ProtocolError(.invalidMessage, "missing request 'id'")
        }
        var key: String?
        if let k = o["key"], k != .null {
            guard let s = k.stringValue else {
                throw ProtocolError(.invalidMessage, "'key' must be text (an API key), found \(k.kindName)", id: id)
            }
            key = s
        }
        if let fast = try fastBody(type, o, typeName: typeName, id: id) {
            return Envelope(id: id, body: fast, version: v, key: key)
        }
        // The tree is parsed already: decode the body from it, not from the bytes again.
        do {
            let body = try decodeBody(type, head)
            return Envelope(id: id, body: body, version: v, key: key)
        } catch let e as DecodingError {
            throw ProtocolError(.invalidMessage, "\(typeName): \(Self.describe(e))", id: id)
        } catch {
            throw ProtocolError(.invalidMessage, "\(typeName): \(error)", id: id)
        }
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
            return o
        case .shardSearchResult(let b):
            func hits(_ hs: [Body.RankedHit]) -> JSONValue { .array(hs.map { .object(["id": .string($0.id), "item": $0.item, "rank": $0.rank.json]) }) }
            var o: [String: JSONValue] = [
                "shard": .number(Double(b.shard)), "nbHits": .number(Double(b.nbHits)),
                "exhaustiveFacetsCount": .bool(b.exhaustiveFacetsCount),
                "hits": hits(b.hits),
                "facets": .object(b.facets.mapValues { .object($0.mapValues { .number(Double($0)) }) }),
                "facetStats": .object(b.facetStats.mapValues { .array($0.map { .number($0) }) }),
            ]
            if let s = b.suggestions {
                o["suggestions"] = .array(s.map { .object(["suggestion": .string($0.suggestion), "count": .number(Double($0.count))]) })
            }
            if let g = b.groups {
                o["groups"] = .array(g.map { .object(["domainIdentifier": .string($0.domainIdentifier), "total": .number(Double($0.total)),
                                                      "hits": hits($0.hits)]) })
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
            return .shardSearch(Body.ShardSearch(shard: try int("shard"), plan: plan, deadlineMs: try optionalInt("deadlineMs"),
                                                 suggest: try optionalInt("suggest"), perDomain: try optionalInt("perDomain")))
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
            return .shardSearchResult(Body.ShardSearchResult(shard: try int("shard"), hits: hits, nbHits: try int("nbHits"),
                                                             facets: facets, facetStats: stats,
                                                             exhaustiveFacetsCount: o["exhaustiveFacetsCount"]?.boolValue ?? true,
                                                             suggestions: suggestions, groups: groups))
        default:
            return nil
        }
    }

    /// Finds `"id": "…"` near the start of a frame that cannot be parsed whole
    /// (too large, or broken further on), so the error reply can still name
    /// the request. Our encoders write `v`, `type` and `id` first.
    static func sniffID(_ data: Data) -> String? {
        let head = String(decoding: data.prefix(4096), as: UTF8.self)
        guard let key = head.range(of: "\"id\"") else { return nil }
        var rest = head[key.upperBound...].drop(while: { $0 == " " || $0 == ":" || $0 == "\t" })
        guard rest.first == "\"" else { return nil }
        rest = rest.dropFirst()
        guard let end = rest.firstIndex(where: { $0 == "\"" || $0 == "\\" }), rest[end] == "\"" else { return nil }
        let id = String(rest[..<end])
        return id.count <= 256 ? id : nil
    }

    static func decodeBody(_ type: MessageType, _ tree: JSONValue) throws -> Body {
        let d = JSONValueDecoder()
        func dec<T: Decodable>(_ t: T.Type) throws -> T { try d.decode(T.self, from: tree) }
        switch type {
        case .publish: return .publish(try dec(Body.Publish.self))
        case .publishAck: return .publishAck(try dec(Body.PublishAck.self))
        case .declare: return .declare(try dec(Body.Declare.self))
        case .declareAck: return .declareAck(Body.Empty())
        case .delete: return .delete(try dec(Body.Delete.self))
        case .deleteAck: return .deleteAck(try dec(Body.DeleteAck.self))
        case .query: return .query(try dec(Body.QueryRequest.self))
        case .resultBatch: return .resultBatch(try dec(Body.ResultBatch.self))
        case .completion: return .completion(try dec(Body.Completion.self))
        case .cancel: return .cancel(try dec(Body.Cancel.self))
        case .stats: return .stats(Body.Empty())
        case .statsReply: return .statsReply(try dec(Body.Stats.self))
        case .ping: return .ping(Body.Empty())
        case .pong: return .pong(try dec(Body.Pong.self))
        case .error: return .error(try dec(WireError.self))
        case .register: return .register(try dec(Body.Register.self))
        case .registered: return .registered(try dec(Body.Registered.self))
        case .challenge: return .challenge(try dec(Body.Challenge.self))
        case .heartbeat: return .heartbeat(try dec(Body.Heartbeat.self))
        case .write: return .write(try dec(Body.Write.self))
        case .writeAck: return .writeAck(try dec(Body.WriteAck.self))
        case .shardQuery: return .shardQuery(try dec(Body.ShardQuery.self))
        case .shardBatch: return .shardBatch(try dec(Body.ShardBatch.self))
        case .shardDone: return .shardDone(try dec(Body.ShardDone.self))
        case .search: return .search(try dec(Body.Search.self))
        case .searchResult: return .searchResult(try dec(Body.SearchResult.self))
        case .shardSearch: return .shardSearch(try dec(Body.ShardSearch.self))
        case .shardSearchResult: return .shardSearchResult(try dec(Body.ShardSearchResult.self))
        case .entityDonate: return .entityDonate(try dec(Body.EntityDonate.self))
        case .entityDelete: return .entityDelete(try dec(Body.EntityDelete.self))
        case .entityAssociate: return .entityAssociate(try dec(Body.EntityAssociate.self))
        case .entityAck: return .entityAck(try dec(Body.EntityAck.self))
        case .suggest: return .suggest(try dec(Body.Suggest.self))
        case .suggestResult: return .suggestResult(try dec(Body.SuggestResult.self))
        case .spotlight: return .spotlight(try dec(Body.Spotlight.self))
        case .spotlightResult: return .spotlightResult(try dec(Body.SpotlightResult.self))
        case .continueSearch: return .continueSearch(try dec(Body.Continue.self))
        case .keys: return .keys(try dec(Body.Keys.self))
        case .keysReply: return .keysReply(try dec(Body.KeysReply.self))
        case .copyRequest: return .copyRequest(try dec(Body.CopyRequest.self))
        case .copyChunk: return .copyChunk(try dec(Body.CopyChunk.self))
        case .copyAck: return .copyAck(try dec(Body.CopyAck.self))
        }
    }

    static func describe(_ e: DecodingError) -> String {
        func path(_ ctx: DecodingError.Context, _ extra: CodingKey? = nil) -> String {
            var keys = ctx.codingPath
            if let extra { keys.append(extra) }
            let p = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.hasPrefix(".") ? String(p.dropFirst()) : p
        }
        switch e {
        case .keyNotFound(let key, let ctx): return "missing field '\(path(ctx, key))'"
        case .typeMismatch(let t, let ctx): return "field '\(path(ctx))' should be \(Self.kind(t))"
        case .valueNotFound(let t, let ctx): return "field '\(path(ctx))' should be \(Self.kind(t)), found null"
        case .dataCorrupted(let ctx): return "field '\(path(ctx))': \(ctx.debugDescription)"
        @unknown default: return "\(e)"
        }
    }

    static func kind(_ t: Any.Type) -> String {
        switch t {
        case is String.Type: "text"
        case is Int.Type, is Double.Type: "a number"
        case is Bool.Type: "a boolean"
        default: "\(t)".contains("Array") ? "a list" : "an object"
        }
    }
}

/// Writes the envelope fields and the body's fields into one JSON object.
struct EncodableEnvelope: Encodable {
    let envelope: Envelope

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Envelope.Keys.self)
        try c.encode(envelope.version, forKey: .v)
        try c.encode(envelope.type.rawValue, forKey: .type)
        try c.encode(envelope.id, forKey: .id)
        if let key = envelope.key { try c.encode(key, forKey: .key) }
        switch envelope.body {
        case .publish(let b): try b.encode(to: encoder)
        case .publishAck(let b): try b.encode(to: encoder)
        case .declare(let b): try b.encode(to: encoder)
        case .declareAck(let b): try b.encode(to: encoder)
        case .delete(let b): try b.encode(to: encoder)
        case .deleteAck(let b): try b.encode(to: encoder)
        case .query(let b): try b.encode(to: encoder)
        case .resultBatch(let b): try b.encode(to: encoder)
        case .completion(let b): try b.encode(to: encoder)
        case .cancel(let b): try b.encode(to: encoder)
        case .stats(let b): try b.encode(to: encoder)
        case .statsReply(let b): try b.encode(to: encoder)
        case .ping(let b): try b.encode(to: encoder)
        case .pong(let b): try b.encode(to: encoder)
        case .error(let b): try b.encode(to: encoder)
        case .register(let b): try b.encode(to: encoder)
        case .registered(let b): try b.encode(to: encoder)
        case .challenge(let b): try b.encode(to: encoder)
        case .heartbeat(let b): try b.encode(to: encoder)
        case .write(let b): try b.encode(to: encoder)
        case .writeAck(let b): try b.encode(to: encoder)
        case .shardQuery(let b): try b.encode(to: encoder)
        case .shardBatch(let b): try b.encode(to: encoder)
        case .shardDone(let b): try b.encode(to: encoder)
        case .search(let b): try b.encode(to: encoder)
        case .searchResult(let b): try b.encode(to: encoder)
        case .shardSearch(let b): try b.encode(to: encoder)
        case .shardSearchResult(let b): try b.encode(to: encoder)
        case .entityDonate(let b): try b.encode(to: encoder)
        case .entityDelete(let b): try b.encode(to: encoder)
        case .entityAssociate(let b): try b.encode(to: encoder)
        case .entityAck(let b): try b.encode(to: encoder)
        case .suggest(let b): try b.encode(to: encoder)
        case .suggestResult(let b): try b.encode(to: encoder)
        case .spotlight(let b): try b.encode(to: encoder)
        case .spotlightResult(let b): try b.encode(to: encoder)
        case .continueSearch(let b): try b.encode(to: encoder)
        case .keys(let b): try b.encode(to: encoder)
        case .keysReply(let b): try b.encode(to: encoder)
        case .copyRequest(let b): try b.encode(to: encoder)
        case .copyChunk(let b): try b.encode(to: encoder)
        case .copyAck(let b): try b.encode(to: encoder)
        }
    }
}
