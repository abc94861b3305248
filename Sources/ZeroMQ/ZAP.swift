import Foundation
import LimelightConcurrency

/// One authentication request of the ZeroMQ Authentication Protocol (ZAP,
/// ZeroMQ RFC 27): a peer is handshaking with a socket of this context.
public struct ZAPRequest: Sendable {
    /// The socket's ``SocketOption/zapDomain(_:)``.
    public var domain: String
    /// The peer's IP address.
    public var address: String
    /// The routing id the peer presents (empty if none).
    public var routingID: [UInt8]
    /// `NULL`, `PLAIN` or `CURVE`.
    public var mechanism: String
    /// For CURVE, the peer's long-term public key.
    public var curveKey: CurveKey?
}

/// What the handler answers: let the peer in, or refuse its connection.
public enum ZAPDecision: Sendable {
    /// `userID` is attached to the peer's messages as ZAP's User-Id.
    case allow(userID: String)
    case deny(reason: String)
}

/// A ZAP handler: the one place a context's sockets ask whether a peer may connect.
///
/// libzmq asks `inproc://zeromq.zap.01` in the socket's own context during
/// every CURVE (or PLAIN, or domain-tagged NULL) handshake, and refuses the
/// connection unless the answer is 200. So this handler must be bound before
/// the sockets it guards accept connections: ``init(context:decide:)`` returns
/// only once it is bound. It runs on a thread of its own (a blocking REP
/// socket, as ZAP expects), and ends when the context is shut down.
public final class ZAPHandler: Sendable {
    /// The endpoint RFC 27 fixes.
    public static let endpoint = "inproc://zeromq.zap.01"

    /// Binds the handler in `context`; `decide` answers each request, on the
    /// handler's thread, so it must not block for long (every handshake waits).
    public init(context: Context, decide: @escaping @Sendable (ZAPRequest) -> ZAPDecision) throws {
        let bound = BindResult()
        let thread = Thread {
            let socket: Socket
            do {
                socket = try Socket(context: context, type: .rep)
                try socket.bind(Self.endpoint)
            } catch {
                bound.set(.failure(error))
                return
            }
            bound.set(.success(()))
            Self.serve(socket, decide: decide)
            socket.close()
        }
        thread.name = "zap-handler"
        thread.start()
        try bound.wait().get()
    }

    static func serve(_ socket: Socket, decide: (ZAPRequest) -> ZAPDecision) {
        while true {
            let frames: [Data]
            do {
                guard let f = try socket.receive() else { continue }
                frames = f
            } catch let e as ZMQError where e.code == .interrupted {
                continue
            } catch {
                return  // terminated: the context is shutting down
            }
            // version, request id, domain, address, identity, mechanism, credentials…
            guard frames.count >= 6 else {
                // Not ZAP: answer anyway, or the REP socket's lockstep breaks.
                _ = try? socket.send([Data("1.0".utf8), Data(), Data("500".utf8), Data("malformed ZAP request".utf8), Data(), Data()])
                continue
            }
            let text = { (d: Data) in String(decoding: d, as: UTF8.self) }
            let mechanism = text(frames[5])
            let request = ZAPRequest(
                domain: text(frames[2]), address: text(frames[3]), routingID: Array(frames[4]),
                mechanism: mechanism,
                curveKey: mechanism == "CURVE" && frames.count > 6 ? CurveKey(bytes: Array(frames[6])) : nil)
            let reply: [Data]
            if text(frames[0]) != "1.0" {
                reply = [Data("1.0".utf8), frames[1], Data("500".utf8), Data("unsupported ZAP version".utf8), Data(), Data()]
            } else {
                switch decide(request) {
                case .allow(let user):
                    reply = [frames[0], frames[1], Data("200".utf8), Data("OK".utf8), Data(user.utf8), Data()]
                case .deny(let reason):
                    reply = [frames[0], frames[1], Data("400".utf8), Data(reason.utf8), Data(), Data()]
                }
            }
            do { try socket.send(reply) } catch { return }
        }
    }
}

/// Hands the bind's outcome from the handler's thread to `init`, which
/// waits for it.
private final class BindResult: Sendable {
    private let result = ConditionLock<Result<Void, any Error>?>(nil)

    func set(_ r: Result<Void, any Error>) {
        result.withLock { l in
            l.state = r
            l.broadcast()
        }
    }

    func wait() -> Result<Void, any Error> {
        result.withLock { l in
            while true {
                if let r = l.state { return r }
                l.wait()
            }
        }
    }
}
