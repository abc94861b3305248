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
            if case .shardSearchResult(let r) = body {
                o.set("hits", bytes: Self.rankedHitsBytes(r.hits))
                if let groups = r.groups { o.set("groups", bytes: Self.groupsBytes(groups)) }
            }
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

    /// Reads a frame. Every failure names what was wrong, so the peer can be told.
    public static func decode(_ data: Data, maxBytes: Int = defaultMaxFrameBytes) throws(ProtocolError) -> Envelope {
        guard data.count <= maxBytes else {
            throw ProtocolError(
                .tooLarge, "message of \(data.count) bytes exceeds the limit of \(maxBytes) bytes",
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

}
