// Every message's Codable form: what a message without a hand-written path
// (EnvelopeFastPaths.swift) is read and written with, and the reference the
// hand-written paths are tested against.
import Foundation
import Items
import QueryPlan

extension Envelope {
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
