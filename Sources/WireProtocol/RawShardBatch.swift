import Foundation
import Items

/// One JSON value as the bytes it arrived in, passed on without being read.
///
/// Why: an unsorted query's hits go from a query worker to the client
/// unchanged, and decoding each item into a ``JSONValue`` tree in the
/// coordinator only to write it out again would be about a fifth of the
/// coordinator's CPU per query (`limelight-bench path`). Both ends write
/// with ``JSONWriter`` (sorted keys, the same number forms), so the bytes
/// are the ones the coordinator would have written.
public struct RawJSON: Sendable, Hashable {
    /// Exactly one JSON value, no surrounding space.
    public let bytes: ArraySlice<UInt8>

    /// `bytes` must hold one well-formed JSON value; ``RawShardBatch/read(_:)``
    /// checks that before it makes one.
    public init(trusted bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    /// Encodes a value (for tests and for callers that hold a tree).
    public init(_ value: JSONValue) { bytes = ArraySlice(JSONWriter.bytes(value)) }

    /// The value, parsed.
    public func decoded() throws -> JSONValue { try JSONValue.parse(Data(bytes)) }
}

/// A query worker's `shard_batch`, read without decoding its items.
///
/// ``read(_:)`` walks the frame once: the envelope fields and each hit's
/// `sort` and `score` are decoded; each `item` is checked to be well-formed
/// JSON and kept as its bytes (``RawJSON``). Anything that is not a
/// well-formed `shard_batch` of this protocol version gives nil, and the
/// caller decodes the frame the ordinary way (``Envelope/decode(_:maxBytes:)``),
/// which words the error.
///
/// Not checked here: that the bytes are valid UTF-8. Only authenticated query
/// workers send `shard_batch`, and they write it from Swift strings.
public struct RawShardBatch: Sendable, Hashable {
    public struct RawHit: Sendable, Hashable {
        public var item: RawJSON
        public var sort: [JSONValue]?
        public var score: Double?
        public init(item: RawJSON, sort: [JSONValue]? = nil, score: Double? = nil) {
            self.item = item; self.sort = sort; self.score = score
        }
    }

    public var id: String
    public var shard: Int
    public var seq: Int
    public var hits: [RawHit]
    public var doneCount: Int?

    public init(id: String, shard: Int, seq: Int, hits: [RawHit], doneCount: Int? = nil) {
        self.id = id; self.shard = shard; self.seq = seq; self.hits = hits; self.doneCount = doneCount
    }

    /// The batch as ``Envelope/decode(_:maxBytes:)`` would give it.
    public func decoded() throws -> Body.ShardBatch {
        Body.ShardBatch(
            shard: shard, seq: seq, hits: try hits.map { Hit(item: try $0.item.decoded(), sort: $0.sort, score: $0.score) },
            doneCount: doneCount)
    }

    /// Nil unless `data` is a well-formed `shard_batch` (see the type's notes).
    public static func read(_ data: Data, maxBytes: Int = Envelope.defaultMaxFrameBytes) -> RawShardBatch? {
        guard data.count <= maxBytes, Envelope.written(data, as: .shardBatch) else { return nil }
        let frame = [UInt8](data)
        return frame.withUnsafeBufferPointer { buffer -> RawShardBatch? in
            var skim = Skimmer(reader: StrictJSONReader(bytes: buffer))
            return skim.shardBatch(frame)
        }
    }
}

/// Walks JSON bytes, decoding only what a `shard_batch`'s routing needs.
struct Skimmer {
    var reader: StrictJSONReader
    var i: Int {
        get { reader.i }
        set { reader.i = newValue }
    }
    var bytes: UnsafeBufferPointer<UInt8> { reader.bytes }

    mutating func expect(_ b: UInt8) -> Bool {
        reader.skipSpace()
        guard i < bytes.count, bytes[i] == b else { return false }
        i += 1
        return true
    }

    /// The members of an object, one at a time: calls `member` with each key,
    /// positioned at its value, which `member` must consume (false: malformed).
    mutating func object(_ member: (inout Skimmer, String) -> Bool) -> Bool {
        guard expect(UInt8(ascii: "{")) else { return false }
        reader.skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return true }
        while true {
            reader.skipSpace()
            guard let key = reader.string(), expect(UInt8(ascii: ":")) else { return false }
            reader.skipSpace()
            guard member(&self, key) else { return false }
            reader.skipSpace()
            guard i < bytes.count else { return false }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return true }
            return false
        }
    }

    /// Passes over one well-formed value without building it; nil when malformed.
    mutating func skip(depth: Int = 0) -> Range<Int>? {
        reader.skipSpace()
        guard i < bytes.count, depth <= 512 else { return nil }
        let start = i
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            reader.skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return start..<i }
            while true {
                reader.skipSpace()
                guard skipString(), expect(UInt8(ascii: ":")), skip(depth: depth + 1) != nil else { return nil }
                reader.skipSpace()
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return start..<i }
                return nil
            }
        case UInt8(ascii: "["):
            i += 1
            reader.skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return start..<i }
            while true {
                guard skip(depth: depth + 1) != nil else { return nil }
                reader.skipSpace()
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return start..<i }
                return nil
            }
        case UInt8(ascii: "\""):
            return skipString() ? start..<i : nil
        case UInt8(ascii: "t"): return reader.literal("true", .null) != nil ? start..<i : nil
        case UInt8(ascii: "f"): return reader.literal("false", .null) != nil ? start..<i : nil
        case UInt8(ascii: "n"): return reader.literal("null", .null) != nil ? start..<i : nil
        default: return reader.number() != nil ? start..<i : nil
        }
    }

    /// A string's bytes with their escapes checked, not unescaped.
    mutating func skipString() -> Bool {
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return false }
        i += 1
        while i < bytes.count {
            let b = bytes[i]
            if b < 32 { return false }
            if b == UInt8(ascii: "\"") { i += 1; return true }
            if b != UInt8(ascii: "\\") { i += 1; continue }
            i += 1
            guard i < bytes.count else { return false }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "n"), UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                continue
            case UInt8(ascii: "u"):
                guard reader.hex4() != nil else { return false }
            default: return false
            }
        }
        return false
    }

    mutating func int() -> Int? { reader.skipSpace(); return reader.number()?.intValue }

    mutating func shardBatch(_ frame: [UInt8]) -> RawShardBatch? {
        var version: Int?, type: String?, id: String?, shard: Int?, seq: Int?, doneCount: Int?
        var hits: [RawShardBatch.RawHit]?
        let ok = object { s, key in
            switch key {
            case "v": version = s.int(); return version != nil
            case "type": type = s.reader.string(); return type != nil
            case "id": id = s.reader.string(); return id != nil
            case "shard": shard = s.int(); return shard != nil
            case "seq": seq = s.int(); return seq != nil
            case "doneCount":
                if s.i < s.bytes.count, s.bytes[s.i] == UInt8(ascii: "n") { return s.reader.literal("null", .null) != nil }
                doneCount = s.int(); return doneCount != nil
            case "hits": hits = s.hits(frame); return hits != nil
            default: return s.skip() != nil
            }
        }
        reader.skipSpace()
        guard ok, i == bytes.count, version == protocolVersion, type == MessageType.shardBatch.rawValue,
            let id, let shard, let seq, let hits
        else { return nil }
        return RawShardBatch(id: id, shard: shard, seq: seq, hits: hits, doneCount: doneCount)
    }

    /// A list, each element read by `element` (nil: malformed, and so is the list).
    mutating func list<T>(_ element: (inout Skimmer) -> T?) -> [T]? {
        guard expect(UInt8(ascii: "[")) else { return nil }
        var out: [T] = []
        reader.skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return out }
        while true {
            guard let e = element(&self) else { return nil }
            out.append(e)
            reader.skipSpace()
            guard i < bytes.count else { return nil }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return out }
            return nil
        }
    }

    mutating func hits(_ frame: [UInt8]) -> [RawShardBatch.RawHit]? {
        list { s in
            var item: Range<Int>?, sort: [JSONValue]?, score: Double?
            let ok = s.object { s, key in
                switch key {
                case "item": item = s.skip(); return item != nil
                case "sort":
                    guard let v = s.reader.value() else { return false }
                    sort = v.arrayValue
                    return sort != nil || v == .null
                case "score":
                    guard let v = s.reader.value() else { return false }
                    score = v.doubleValue
                    return score != nil || v == .null
                default: return s.skip() != nil
                }
            }
            guard ok, let item else { return nil }
            return RawShardBatch.RawHit(item: RawJSON(trusted: frame[item]), sort: sort, score: score)
        }
    }
}
