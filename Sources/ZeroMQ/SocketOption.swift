import CZeroMQ

/// The ZeroMQ socket patterns. Limelight's own protocol uses DEALER/ROUTER
/// (never REQ/REP: one lost reply wedges a REQ socket forever), PUB/SUB for
/// broadcasts and STREAM for the raw-TCP HTTP stats endpoint.
public enum SocketType: Sendable, Hashable, CaseIterable {
    case pair, pub, sub, req, rep, dealer, router, pull, push, stream

    var rawValue: Int32 {
        switch self {
        case .pair: ZMQ_PAIR
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .pull: ZMQ_PULL
        case .push: ZMQ_PUSH
        case .stream: ZMQ_STREAM
        }
    }

    /// ROUTER and STREAM address each message by its first frame, so one
    /// blocked peer must not hold up messages to the others.
    var routesByFirstFrame: Bool { self == .router || self == .stream }
}

/// A socket option together with its value.
///
/// Options that shape connections — high-water marks, routing id, heartbeats,
/// `immediate`, `maxMessageSize` — only apply to connections made *after* they
/// are set, so set them before `bind`/`connect` (``AsyncSocket``'s `configure`
/// closure is the place).
public enum SocketOption: Sendable, Hashable {
    /// Messages queued per peer before the sender blocks (or, for PUB, drops).
    /// 0 means unbounded, which Limelight never wants.
    case sendHighWaterMark(Int32)
    /// Messages queued per peer on the receiving side before ZeroMQ stops
    /// reading that peer's connection, pushing back to it.
    case receiveHighWaterMark(Int32)
    /// How long `close` lets unsent messages drain. -1 waits forever (and makes
    /// context termination hang on a dead peer); this module's default is 0.
    case linger(milliseconds: Int32)
    /// ROUTER: fail a send to an unknown routing id with
    /// ``ZMQError/Code/hostUnreachable`` instead of silently dropping it, and
    /// report a full peer as `EAGAIN` instead of dropping.
    case routerMandatory(Bool)
    /// The identity this socket presents to a ROUTER peer (1–255 bytes, not
    /// starting with a zero byte, which ZeroMQ reserves for generated ids).
    case routingID([UInt8])
    /// SUB: receive messages whose first frame starts with this prefix; an
    /// empty prefix subscribes to everything.
    case subscribe([UInt8])
    /// SUB: undo one matching `subscribe`.
    case unsubscribe([UInt8])
    /// The largest inbound message accepted; a peer that sends a larger one is
    /// disconnected (the message is never delivered). -1 means no limit.
    case maxMessageSize(Int64)
    /// Send a ZMTP PING after this much silence on a connection.
    case heartbeatInterval(milliseconds: Int32)
    /// Drop the connection when no traffic arrives this long after a PING.
    case heartbeatTimeout(milliseconds: Int32)
    /// Ask the peer to drop the connection after this much silence from us
    /// (rounded to deciseconds on the wire).
    case heartbeatTTL(milliseconds: Int32)
    /// Blocking `receive` returns `nil` after this long; -1 blocks forever.
    case receiveTimeout(milliseconds: Int32)
    /// Blocking `send` returns `false` after this long; -1 blocks forever.
    case sendTimeout(milliseconds: Int32)
    /// Queue messages only to completed connections, so that a peer that is
    /// not there yet does not swallow messages into a pipe it may never drain.
    /// Without it a connecting socket accepts up to its high-water mark of
    /// messages for a server that may never appear; with it, sends wait (and
    /// ``AsyncSocket/send(_:)-([Data])`` suspends) until a connection is up.
    case immediate(Bool)
    /// First delay before reconnecting a dropped connection.
    case reconnectInterval(milliseconds: Int32)
    /// Upper bound of the exponential reconnect back-off (0: no back-off).
    case reconnectIntervalMax(milliseconds: Int32)
    /// TCP keep-alive on the underlying connections (true) or the OS default (false).
    case tcpKeepalive(Bool)
    /// ROUTER: a new connection presenting an id already in use takes it over,
    /// so that a restarted worker with a fixed id is reachable at once.
    case routerHandover(Bool)
    /// DEALER/ROUTER: send an empty message on connect, so that a ROUTER learns
    /// a peer's routing id before the peer says anything.
    ///
    /// Observed with libzmq 4.3.4: no probe is sent by a socket that also has
    /// ``immediate(_:)`` set, so do not combine the two.
    case probeRouter(Bool)
    /// STREAM: deliver an empty frame when a TCP peer connects or disconnects
    /// (ZeroMQ's default is on).
    case streamNotify(Bool)
    /// Be the CURVE server of every connection: encrypt, and authenticate
    /// peers' keys through the context's ZAP handler (``ZAPHandler``).
    case curveServer(Bool)
    /// This socket's long-term CURVE public key (a client's, or a server's).
    case curvePublicKey(CurveKey)
    /// This socket's long-term CURVE secret key.
    case curveSecretKey(CurveKey)
    /// A CURVE client: the public key of the server it connects to; setting it
    /// makes the socket a CURVE client.
    case curveServerKey(CurveKey)
    /// The ZAP domain the socket's connections are authenticated in, so one
    /// handler can tell, say, a client socket from a worker socket.
    case zapDomain(String)

    /// The zmq option number and its value as the bytes `zmq_setsockopt` takes.
    var encoded: (name: Int32, label: String, value: [UInt8]) {
        switch self {
        case .sendHighWaterMark(let v): (ZMQ_SNDHWM, "sendHighWaterMark", Self.bytes(v))
        case .receiveHighWaterMark(let v): (ZMQ_RCVHWM, "receiveHighWaterMark", Self.bytes(v))
        case .linger(let v): (ZMQ_LINGER, "linger", Self.bytes(v))
        case .routerMandatory(let v): (ZMQ_ROUTER_MANDATORY, "routerMandatory", Self.bytes(v))
        case .routingID(let v): (ZMQ_ROUTING_ID, "routingID", v)
        case .subscribe(let v): (ZMQ_SUBSCRIBE, "subscribe", v)
        case .unsubscribe(let v): (ZMQ_UNSUBSCRIBE, "unsubscribe", v)
        case .maxMessageSize(let v): (ZMQ_MAXMSGSIZE, "maxMessageSize", Self.bytes(v))
        case .heartbeatInterval(let v): (ZMQ_HEARTBEAT_IVL, "heartbeatInterval", Self.bytes(v))
        case .heartbeatTimeout(let v): (ZMQ_HEARTBEAT_TIMEOUT, "heartbeatTimeout", Self.bytes(v))
        case .heartbeatTTL(let v): (ZMQ_HEARTBEAT_TTL, "heartbeatTTL", Self.bytes(v))
        case .receiveTimeout(let v): (ZMQ_RCVTIMEO, "receiveTimeout", Self.bytes(v))
        case .sendTimeout(let v): (ZMQ_SNDTIMEO, "sendTimeout", Self.bytes(v))
        case .immediate(let v): (ZMQ_IMMEDIATE, "immediate", Self.bytes(v))
        case .reconnectInterval(let v): (ZMQ_RECONNECT_IVL, "reconnectInterval", Self.bytes(v))
        case .reconnectIntervalMax(let v): (ZMQ_RECONNECT_IVL_MAX, "reconnectIntervalMax", Self.bytes(v))
        // ZMQ_TCP_KEEPALIVE is tri-state; -1 is "leave the OS default".
        case .tcpKeepalive(let v): (ZMQ_TCP_KEEPALIVE, "tcpKeepalive", Self.bytes(v ? Int32(1) : Int32(-1)))
        case .routerHandover(let v): (ZMQ_ROUTER_HANDOVER, "routerHandover", Self.bytes(v))
        case .probeRouter(let v): (ZMQ_PROBE_ROUTER, "probeRouter", Self.bytes(v))
        case .streamNotify(let v): (ZMQ_STREAM_NOTIFY, "streamNotify", Self.bytes(v))
        case .curveServer(let v): (ZMQ_CURVE_SERVER, "curveServer", Self.bytes(v))
        case .curvePublicKey(let k): (ZMQ_CURVE_PUBLICKEY, "curvePublicKey", k.bytes)
        case .curveSecretKey(let k): (ZMQ_CURVE_SECRETKEY, "curveSecretKey", k.bytes)
        case .curveServerKey(let k): (ZMQ_CURVE_SERVERKEY, "curveServerKey", k.bytes)
        case .zapDomain(let d): (ZMQ_ZAP_DOMAIN, "zapDomain", Array(d.utf8))
        }
    }

    private static func bytes(_ flag: Bool) -> [UInt8] { bytes(Int32(flag ? 1 : 0)) }
    private static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }
}
