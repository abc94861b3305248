import Foundation
import Items
import QueryPlan

/// A query worker's `shard_search_result`, read with each hit's item kept as
/// the bytes it arrived in (``Body/RankedHit/rawItem``).
///
/// Why: a shard sends its best `offset + length` hits, and the coordinator
/// keeps one page of all the shards' hits; reading every item into a tree
/// there (1,760 of them for page 10 over 8 shards, to write 20) would be most of
/// a deep page's time. The envelope's other members (counts, facets,
/// suggestions) are read as trees and checked as ``Envelope/decode(_:maxBytes:)``
/// checks them; each hit's `id` and `rank` are decoded, its `item` checked to
/// be well-formed JSON and kept as its bytes. Anything that does not read so
/// gives nil, and the caller decodes the frame the ordinary way, which
/// words the error.
public enum RawShardSearchResult {
    /// The frame's id and result; nil unless `data` is a well-formed
    /// `shard_search_result` of this protocol version as ``JSONWriter`` writes it.
    public static func read(_ data: Data, maxBytes: Int = Envelope.defaultMaxFrameBytes) -> (id: String, result: Body.ShardSearchResult)? {
        guard data.count <= maxBytes, Envelope.written(data, as: .shardSearchResult) else { return nil }
        let frame = [UInt8](data)
        return frame.withUnsafeBufferPointer { buffer -> (id: String, result: Body.ShardSearchResult)? in
            var skim = Skimmer(reader: StrictJSONReader(bytes: buffer))
            var members: [String: JSONValue] = [:]
            var hits: [Body.RankedHit]?
            var groups: [Body.ShardGroup]?
            let ok = skim.object { s, key in
                switch key {
                case "hits":
                    hits = s.rankedHits(frame)
                    return hits != nil
                case "groups":
                    if s.i < s.bytes.count, s.bytes[s.i] == UInt8(ascii: "n") { return s.reader.literal("null", .null) != nil }
                    groups = s.groups(frame)
                    return groups != nil
                default:
                    guard let v = s.reader.value() else { return false }
                    members[key] = v
                    return true
                }
            }
            skim.reader.skipSpace()
            guard ok, skim.i == buffer.count, members["v"]?.intValue == protocolVersion,
                members["type"]?.stringValue == MessageType.shardSearchResult.rawValue,
                let id = members["id"]?.stringValue, let hits
            else { return nil }
            members["hits"] = .array([])
            members["groups"] = nil
            guard case .shardSearchResult(var result)? = try? Envelope.fastBody(.shardSearchResult, members, typeName: "shard_search_result", id: id)
            else { return nil }
            result.hits = hits
            result.groups = groups
            return (id, result)
        }
    }
}

extension Envelope {
    /// Whether `data` ends as ``JSONWriter`` ends a frame of `type` (sorted
    /// keys: `"type"`, then `"v"`, last): a cheap test before a skim that
    /// would otherwise walk a whole frame of another type for nothing.
    static func written(_ data: Data, as type: MessageType) -> Bool {
        let tail = Array("\"type\":\"\(type.rawValue)\",\"v\":\(protocolVersion)}".utf8)
        return data.count >= tail.count && data.suffix(tail.count).elementsEqual(tail)
    }
}

extension Skimmer {
    /// A list of `{id, item, rank}`, each item kept as its bytes in `frame`.
    mutating func rankedHits(_ frame: [UInt8]) -> [Body.RankedHit]? {
        list { s in
            var id: String?, item: Range<Int>?, rank: SearchRank?
            let ok = s.object { s, key in
                switch key {
                case "id": id = s.reader.string(); return id != nil
                case "item": item = s.skip(); return item != nil
                case "rank":
                    guard let v = s.reader.value(), let r = try? SearchRank(json: v) else { return false }
                    rank = r
                    return true
                default: return s.skip() != nil
                }
            }
            guard ok, let id, let item, let rank else { return nil }
            return Body.RankedHit(id: id, item: .null, rank: rank, rawItem: RawJSON(trusted: frame[item]))
        }
    }

    /// A list of `{domainIdentifier, total, hits}`.
    mutating func groups(_ frame: [UInt8]) -> [Body.ShardGroup]? {
        list { s in
            var domain: String?, total: Int?, hits: [Body.RankedHit]?
            let ok = s.object { s, key in
                switch key {
                case "domainIdentifier": domain = s.reader.string(); return domain != nil
                case "total": total = s.int(); return total != nil
                case "hits": hits = s.rankedHits(frame); return hits != nil
                default: return s.skip() != nil
                }
            }
            guard ok, let domain, let total, let hits else { return nil }
            return Body.ShardGroup(domainIdentifier: domain, total: total, hits: hits)
        }
    }
}
