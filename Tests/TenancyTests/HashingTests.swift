import Testing

@testable import Hashing

/// Known answers from the standards, so that the libcrypto binding is held to
/// the algorithms and not only to itself.
@Suite struct HashingTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func sha256OfAbcAndOfNothingAreFIPS180sExamples() {
        #expect(Self.hex(SHA256.hash("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Self.hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    /// RFC 4231, test cases 2 (a short key) and 6 (a key longer than a block).
    @Test func hmacSHA256MatchesRFC4231() {
        #expect(
            Self.hex(HMACSHA256.authenticationCode(for: "what do ya want for nothing?".utf8, key: "Jefe".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let longKey = [UInt8](repeating: 0xaa, count: 131)
        #expect(
            Self.hex(HMACSHA256.authenticationCode(for: "Test Using Larger Than Block-Size Key - Hash Key First".utf8, key: longKey))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func aCodeIsValidOnlyWhenEveryByteMatches() {
        let code = HMACSHA256.authenticationCode(for: "message".utf8, key: "key".utf8)
        #expect(HMACSHA256.isValid(code, for: "message".utf8, key: "key".utf8))
        var wrong = code
        wrong[31] ^= 1
        #expect(!HMACSHA256.isValid(wrong, for: "message".utf8, key: "key".utf8))
        #expect(!HMACSHA256.isValid(code.dropLast(), for: "message".utf8, key: "key".utf8))
        #expect(!HMACSHA256.isValid(code, for: "message".utf8, key: "other".utf8))
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    /// The GCM specification's test case 15 (AES-256, 96-bit IV, no AAD):
    /// nonce, ciphertext and tag, laid out as CryptoKit's `combined`.
    @Test func aesGCMSealsTheSpecificationsTestCase15() throws {
        let key = Self.bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = Self.bytes("cafebabefacedbaddecaf888")
        let plaintext = Self.bytes(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255")
        let expected =
            "cafebabefacedbaddecaf888"
            + "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"
            + "b094dac5d93471bdec1a502270e3cc6c"
        let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce)
        #expect(Self.hex(sealed) == expected)
        #expect(try AESGCM.open(sealed, key: key) == plaintext)
    }

    @Test func aSealedBoxOpensOnlyWithItsKeyAndUnchanged() throws {
        let key = try #require(SecureRandom.bytes(AESGCM.keyByteCount))
        let box = try AESGCM.seal(Array("llk_search".utf8), key: key)
        #expect(try AESGCM.open(box, key: key) == Array("llk_search".utf8))
        #expect(try AESGCM.seal(Array("llk_search".utf8), key: key) != box, "each box draws its own nonce")
        var changed = box
        changed[AESGCM.nonceByteCount] ^= 1
        #expect(throws: AESGCM.Failure.self) { try AESGCM.open(changed, key: key) }
        var other = key
        other[0] ^= 1
        #expect(throws: AESGCM.Failure.self) { try AESGCM.open(box, key: other) }
        #expect(throws: AESGCM.Failure.self) { try AESGCM.open(Array(box.prefix(20)), key: key) }
    }
}
