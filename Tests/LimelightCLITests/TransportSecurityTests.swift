import ClusterAuth
import Foundation
import Testing
import ZeroMQ

@testable import LimelightCLI

/// The pieces of docs/security-transport.md that need no cluster: the worker
/// endpoint `up` picks, key files and the cluster secret's file and proofs.
@Suite struct TransportSecurityTests {
    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-sec-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func upKeepsItsWorkersOnLoopbackWhateverListenSays() {
        #expect(UpCommand.defaultWorkerEndpoint("tcp://0.0.0.0:7700") == "tcp://127.0.0.1:7701")
        #expect(UpCommand.defaultWorkerEndpoint("tcp://10.1.2.3:9000") == "tcp://127.0.0.1:9001")
        #expect(UpCommand.defaultWorkerEndpoint("tcp://0.0.0.0:0") == "tcp://127.0.0.1:0")
        #expect(UpCommand.defaultWorkerEndpoint("tcp://127.0.0.1:7700") == "tcp://127.0.0.1:7701")
    }

    @Test func theSecretFileIsMadeOncePrivatelyAndThenReadBack() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/nested/cluster.secret"
        let first = try ClusterSecret.readOrCreate(path: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.count == 65 && text.hasSuffix("\n"))
        // A second start reads the same secret: proofs made by one verify with the other.
        let second = try ClusterSecret.readOrCreate(path: path)
        let proof = first.proof(nonce: "n1", worker: "indexer-0", role: "indexer", shards: [0, 2])
        #expect(second.verify(proof: proof, nonce: "n1", worker: "indexer-0", role: "indexer", shards: [0, 2]))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
    }

    @Test func aProofCoversTheNonceAndEverythingClaimed() throws {
        let s = try ClusterSecret(text: "0123456789abcdef0123")
        let p = s.proof(nonce: "n1", worker: "w", role: "indexer", shards: [0, 1])
        #expect(p.count == 64)
        #expect(s.verify(proof: p, nonce: "n1", worker: "w", role: "indexer", shards: [0, 1]))
        #expect(!s.verify(proof: p, nonce: "n2", worker: "w", role: "indexer", shards: [0, 1]))
        #expect(!s.verify(proof: p, nonce: "n1", worker: "x", role: "indexer", shards: [0, 1]))
        #expect(!s.verify(proof: p, nonce: "n1", worker: "w", role: "query", shards: [0, 1]))
        #expect(!s.verify(proof: p, nonce: "n1", worker: "w", role: "indexer", shards: [0, 1, 2]))
        #expect(!s.verify(proof: "zz", nonce: "n1", worker: "w", role: "indexer", shards: [0, 1]))
        let other = try ClusterSecret(text: "another secret, also long")
        #expect(!other.verify(proof: p, nonce: "n1", worker: "w", role: "indexer", shards: [0, 1]))
        // The documented construction (Python's hmac made this value): HMAC-SHA256 over the joined fields.
        #expect(p == "23f0cb21a840cff823587e08e6776ed838d45c6302b454126f2927af10219621")
        #expect(throws: ClusterSecret.FileError.self) { try ClusterSecret(text: "  short  ") }
    }

    @Test func keyFilesRoundTripAndFaultsNameTheFile() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pair = try CurveKeyPair.generate()
        try CurveCertificate.write(pair, base: dir + "/a")
        #expect(try CurveCertificate.readKeyPair(path: dir + "/a.key_secret") == pair)
        #expect(try CurveCertificate.publicKey(textOrPath: dir + "/a.key") == pair.publicKey)
        #expect(try CurveCertificate.publicKey(textOrPath: pair.publicKey.z85) == pair.publicKey)
        #expect(throws: CurveCertificate.FileError.self) { try CurveCertificate.write(pair, base: dir + "/a") }
        #expect(throws: CurveCertificate.FileError.self) { try CurveCertificate.readKeyPair(path: dir + "/a.key") }
        #expect(throws: CurveCertificate.FileError.self) { try CurveCertificate.publicKey(textOrPath: "no-such-key") }
        try Data("public-key = \"too short\"\n".utf8).write(to: URL(fileURLWithPath: dir + "/bad.key"))
        #expect(throws: CurveCertificate.FileError.self) { try CurveCertificate.read(path: dir + "/bad.key") }
        // An allow-list folder: its *.key files; the secret files beside them are not read as keys.
        let b = try CurveKeyPair.generate()
        try CurveCertificate.write(b, base: dir + "/b")
        try FileManager.default.removeItem(atPath: dir + "/bad.key")
        #expect(Set(try CurveCertificate.allowList(path: dir).keys) == [pair.publicKey.z85, b.publicKey.z85])
        // Z85 both ways, against libzmq's own encoder.
        #expect(CurveKey(z85: pair.secretKey.z85) == pair.secretKey)
        #expect(CurveKey(z85: String(repeating: "~", count: 40)) == nil)
        #expect(CurveKey(z85: String(pair.publicKey.z85.dropLast())) == nil)
    }
}
