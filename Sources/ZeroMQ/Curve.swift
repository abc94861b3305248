import CZeroMQ
import Foundation

/// A CURVE key (Curve25519, 32 bytes), public or secret.
///
/// Written as Z85 text (40 characters), as ZeroMQ's tools and certificate
/// files spell it. Its `description` never shows the bytes, so a secret key
/// cannot leak into a log line by accident.
public struct CurveKey: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// A key from its 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// A key from its Z85 text: exactly 40 characters of ZeroMQ's Z85 alphabet.
    public init?(z85 text: String) {
        guard text.utf8.count == 40 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        let ok = out.withUnsafeMutableBufferPointer { buffer in
            text.withCString { zmq_z85_decode(buffer.baseAddress, $0) != nil }
        }
        guard ok else { return nil }
        bytes = out
    }

    /// The key as Z85 text.
    public var z85: String {
        var out = [CChar](repeating: 0, count: 41)
        _ = bytes.withUnsafeBufferPointer { zmq_z85_encode(&out, $0.baseAddress, 32) }
        return String(decoding: out.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { "CurveKey(32 bytes)" }
}

/// A CURVE key pair: what a peer presents (public) and proves it holds (secret).
public struct CurveKeyPair: Sendable, Hashable {
    public let publicKey: CurveKey
    public let secretKey: CurveKey

    /// A new random key pair (libzmq's `zmq_curve_keypair`).
    public static func generate() throws -> CurveKeyPair {
        guard Context.has("curve") else { throw ZMQError(errno: ENOTSUP, operation: "zmq_curve_keypair (this libzmq was built without CURVE)") }
        var pub = [CChar](repeating: 0, count: 41), sec = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&pub, &sec) == 0 else { throw ZMQError.last("zmq_curve_keypair") }
        let text = { (c: [CChar]) in String(decoding: c.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        guard let p = CurveKey(z85: text(pub)), let s = CurveKey(z85: text(sec)) else {
            throw ZMQError(errno: EINVAL, operation: "zmq_curve_keypair returned a key that is not Z85")
        }
        return CurveKeyPair(publicKey: p, secretKey: s)
    }

    /// The pair of a secret key, its public half derived (`zmq_curve_public`).
    public init(secretKey: CurveKey) throws {
        var pub = [CChar](repeating: 0, count: 41)
        let ok = secretKey.z85.withCString { zmq_curve_public(&pub, $0) == 0 }
        guard ok, let p = CurveKey(z85: String(decoding: pub.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)) else {
            throw ZMQError.last("zmq_curve_public")
        }
        self.publicKey = p
        self.secretKey = secretKey
    }

    public init(publicKey: CurveKey, secretKey: CurveKey) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }
}

/// What a CURVE client socket needs: the server's public key and a key pair of its own.
public struct CurveClientKeys: Sendable, Hashable {
    public var serverKey: CurveKey
    public var keyPair: CurveKeyPair

    public init(serverKey: CurveKey, keyPair: CurveKeyPair) {
        self.serverKey = serverKey
        self.keyPair = keyPair
    }

    /// The options that make a socket this CURVE client; set them before `connect`.
    public var socketOptions: [SocketOption] {
        [.curveServerKey(serverKey), .curvePublicKey(keyPair.publicKey), .curveSecretKey(keyPair.secretKey)]
    }
}
