import Foundation
import Testing

@testable import Tenancy

@Suite struct SharedKeysTests {
    let seal = [UInt8](repeating: 7, count: 32)

    func temporaryStore() throws -> (KeyStore, String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-shared-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return (try KeyStore(path: dir + "/keys.sqlite"), dir)
    }

    @Test func theControlPlanesFormKeepsEveryFieldAndSealsTheSecrets() throws {
        let made = try KeyStore.make(app: "shop", role: .search, rateLimit: 2.5, maxItemsPerPublish: 10, description: "front end")
        var k = made.shared
        k.record.revoked = Date(timeIntervalSince1970: 1_900_000_000)
        let data = try k.encoded(sealKey: seal)
        // Neither the key nor the secret its secured keys are signed with is in the clear.
        #expect(data.range(of: Data(made.key.utf8)) == nil)
        #expect(data.range(of: Data(try #require(k.record.signingSecret).utf8)) == nil)
        #expect(try SharedKey(decoding: data, sealKey: seal) == k)
        // Another cluster secret's seal does not open it: the record is refused, not taken without its secrets.
        #expect(throws: TenancyError.self) { try SharedKey(decoding: data, sealKey: [UInt8](repeating: 8, count: 32)) }
        #expect(throws: TenancyError.self) { try SharedKey(decoding: Data("{\"id\": 3}".utf8), sealKey: seal) }
    }

    @Test func anAdminKeyHasNoSecretsToSeal() throws {
        let made = try KeyStore.make(app: "shop", role: .admin)
        let data = try made.shared.encoded(sealKey: seal)
        #expect(String(decoding: data, as: UTF8.self).contains("sealed") == false)
        #expect(try SharedKey(decoding: data, sealKey: seal) == made.shared)
    }

    @Test func theMergeIsTheUnionAndARevocationWinsAtItsEarlierDate() throws {
        let a = try KeyStore.make(app: "shop", role: .admin).shared
        let b = try KeyStore.make(app: "shop", role: .search).shared
        let c = try KeyStore.make(app: nil, role: .master).shared
        var bRevoked = b
        bRevoked.record.revoked = Date(timeIntervalSince1970: 2_000)
        var cLater = c
        cLater.record.revoked = Date(timeIntervalSince1970: 3_000)
        var cEarlier = c
        cEarlier.record.revoked = Date(timeIntervalSince1970: 1_000)
        // a only here: published; b revoked in the control plane: adopted; c revoked in both: the earlier date, both ways.
        let (adopt, publish) = KeyMerge.merge(local: [a, b, cLater], shared: [bRevoked, cEarlier])
        #expect(Set(adopt.map(\.record.id)) == [b.record.id, c.record.id])
        #expect(adopt.first { $0.record.id == b.record.id }?.record.revoked == bRevoked.record.revoked)
        #expect(adopt.first { $0.record.id == c.record.id }?.record.revoked == cEarlier.record.revoked)
        #expect(publish.map(\.record.id) == [a.record.id])
        // A revocation made here and not yet there is published.
        let (adopt2, publish2) = KeyMerge.merge(local: [bRevoked], shared: [b])
        #expect(adopt2.isEmpty)
        #expect(publish2 == [bRevoked])
        // In agreement: nothing either way.
        let (adopt3, publish3) = KeyMerge.merge(local: [a, bRevoked], shared: [bRevoked, a])
        #expect(adopt3.isEmpty && publish3.isEmpty)
    }

    @Test func anAdoptedKeyAdmitsItsHolderAndItsSecuredKeys() throws {
        let (made, madeDir) = try temporaryStore()
        defer { try? FileManager.default.removeItem(atPath: madeDir) }
        let (other, otherDir) = try temporaryStore()
        defer { try? FileManager.default.removeItem(atPath: otherDir) }
        let search = try made.create(app: "shop", role: .search)
        // Through the control plane's form, sealed with the cluster's seal, not either store's own.
        let data = try #require(made.shared.first).encoded(sealKey: seal)
        try other.adopt(try SharedKey(decoding: data, sealKey: seal))
        let access = try Access.resolve(key: search.key, store: other, requireKeys: true)
        #expect(access.role == .search && access.scope.app == "shop")
        let secured = AlgoliaSecuredKeyTests.algoliaKey(parent: search.key, params: "filters=a%3Ab")
        let parsed = try #require(try AlgoliaSecuredKey.parse(secured))
        #expect(other.algoliaParent(of: parsed)?.id == search.record.id)
        // A revocation adopted refuses it from then on, and survives reopening.
        let revoked = try made.revocation(of: search.record.id)
        #expect(made.record(id: search.record.id)?.revoked == nil, "a revocation is not stored until adopted")
        try other.adopt(revoked)
        #expect(throws: TenancyError.self) { try Access.resolve(key: search.key, store: other, requireKeys: true) }
        let reopened = try KeyStore(path: otherDir + "/keys.sqlite")
        #expect(reopened.record(id: search.record.id)?.revoked != nil)
    }
}
