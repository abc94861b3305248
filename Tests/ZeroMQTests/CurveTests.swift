import Foundation
import Testing

@testable import ZeroMQ

/// CURVE sockets and the ZAP handler: libzmq asks the handler about every
/// handshake, and only the keys it allows get a message through.
@Suite("CURVE and ZAP")
struct CurveTests {
    @Test func keysRoundTripThroughZ85() throws {
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey != pair.secretKey)
        #expect(CurveKey(z85: pair.publicKey.z85) == pair.publicKey)
        #expect(try CurveKeyPair(secretKey: pair.secretKey).publicKey == pair.publicKey)
        #expect(!"\(pair.secretKey)".contains(pair.secretKey.z85))
        // Z85's digit "0" is the value 0: forty of them are 32 zero bytes.
        #expect(CurveKey(z85: String(repeating: "0", count: 40))?.bytes == [UInt8](repeating: 0, count: 32))
        #expect(CurveKey(z85: "HelloWorld") == nil)  // valid Z85, but 8 bytes, not 32
    }

    @Test func theHandlerLetsKnownKeysInAndKeepsOthersOut() throws {
        let context = try Context()
        let server = try CurveKeyPair.generate(), known = try CurveKeyPair.generate(), stranger = try CurveKeyPair.generate()
        let seen = Seen()
        let zap = try ZAPHandler(context: context) { request in
            seen.add((request.domain, request.mechanism, request.curveKey?.z85))
            return request.curveKey == known.publicKey ? .allow(userID: "known") : .deny(reason: "unknown key")
        }
        _ = zap
        let (router, endpoint) = try bound(
            context, .router,
            options: [
                .zapDomain("test"), .curveServer(true), .curveSecretKey(server.secretKey),
            ])
        let ok = try connected(
            context, .dealer, to: endpoint,
            options:
                CurveClientKeys(serverKey: server.publicKey, keyPair: known).socketOptions + [.routingID(bytes("known"))])
        #expect(try ok.send([bytes("hello")]))
        #expect(texts(try router.receive()) == ["known", "hello"])

        let refused = try connected(
            context, .dealer, to: endpoint,
            options:
                CurveClientKeys(serverKey: server.publicKey, keyPair: stranger).socketOptions + [.routingID(bytes("stranger"))])
        _ = try refused.send([bytes("let me in")], dontWait: true)
        try router.set(.receiveTimeout(milliseconds: 700))
        #expect(try router.receive() == nil)

        let entries = seen.all
        #expect(entries.contains { $0 == ("test", "CURVE", known.publicKey.z85) })
        #expect(entries.contains { $0 == ("test", "CURVE", stranger.publicKey.z85) })
        for s in [ok, refused, router] { s.close() }
        context.shutdown()
    }
}

/// What the handler was asked, kept across its thread and the test's.
final class Seen: @unchecked Sendable {
    // `entries` is guarded by `lock`.
    private let lock = NSLock()
    private var entries: [(String, String, String?)] = []
    func add(_ e: (String, String, String?)) { lock.withLock { entries.append(e) } }
    var all: [(String, String, String?)] { lock.withLock { entries } }
}
