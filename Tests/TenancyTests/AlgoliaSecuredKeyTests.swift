import Foundation
import Hashing
import Items
import QueryPlan
import Testing

@testable import Tenancy

/// Secured keys in Algolia's own form, and the sealed search keys that let
/// the server check them.
@Suite struct AlgoliaSecuredKeyTests {
    /// What Algolia's clients compute: base64(hex(hmac_sha256(parent, params)) + params).
    static func algoliaKey(parent: String, params: String) -> String {
        let mac = HMACSHA256.authenticationCode(for: Array(params.utf8), key: Array(parent.utf8))
        return Data((APIKey.hex(mac) + params).utf8).base64EncodedString()
    }

    @Test func theParametersBecomeRestrictionsAndOnlyTheParentVerifies() throws {
        let parent = "llk_" + String(repeating: "0123456789abcdef", count: 4)
        let key = Self.algoliaKey(
            parent: parent,
            params: "filters=section%3Aadmin%20AND%20price%20%3C%205&restrictIndices=products%2Ca.b&userToken=u1&validUntil=1900000000")
        let parsed = try #require(try AlgoliaSecuredKey.parse(key))
        #expect(parsed.restrictions.filters == "section:admin AND price < 5")
        #expect(parsed.restrictions.restrictDomains == ["algolia.products", "algolia.a%2Eb"])
        #expect(parsed.restrictions.userToken == "u1")
        #expect(parsed.restrictions.validUntil == Date(timeIntervalSince1970: 1_900_000_000))
        #expect(AlgoliaSecuredKey.verify(parsed, parentKey: parent))
        #expect(!AlgoliaSecuredKey.verify(parsed, parentKey: "llk_" + String(repeating: "f", count: 64)))
    }

    @Test func aParameterThatWouldNotBeImposedIsRefused() throws {
        let key = Self.algoliaKey(parent: "llk_x", params: "hitsPerPage=5")
        #expect(throws: TenancyError.self) { _ = try AlgoliaSecuredKey.parse(key) }
        #expect(try AlgoliaSecuredKey.parse("not base64 at all") == nil)
    }

    @Test func searchKeysAreSealedAndFoundAgainAfterReopening() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-seal-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let made: (key: String, record: KeyRecord)
        do {
            let store = try KeyStore(path: dir + "/keys.sqlite")
            made = try store.create(app: "shop", role: .search)
            _ = try store.create(app: "shop", role: .admin)
        }
        // The store holds no key in the clear: only the hash and the sealed box.
        let raw = try #require(FileManager.default.contents(atPath: dir + "/keys.sqlite"))
        #expect(raw.range(of: Data(made.key.utf8)) == nil)
        let reopened = try KeyStore(path: dir + "/keys.sqlite")
        let parsed = try #require(try AlgoliaSecuredKey.parse(Self.algoliaKey(parent: made.key, params: "filters=a%3Ab")))
        #expect(reopened.algoliaParent(of: parsed)?.id == made.record.id)
        let access = try Access.resolve(key: Self.algoliaKey(parent: made.key, params: "filters=a%3Ab"), store: reopened, requireKeys: true)
        #expect(access.secured && access.role == .search && access.scope.app == "shop")
        // Without its seal key, the store cannot open the sealed keys: no parent is found.
        try FileManager.default.removeItem(atPath: dir + "/keys.sqlite.seal")
        let unsealed = try KeyStore(path: dir + "/keys.sqlite")
        #expect(unsealed.algoliaParent(of: parsed) == nil)
    }
}
