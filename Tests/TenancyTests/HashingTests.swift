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
}
