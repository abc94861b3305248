import Foundation
import Items
import QueryPlan
import Testing

@testable import Tenancy

@Suite struct SecuredKeyTests {
    let parent = "llk_" + String(repeating: "0123456789abcdef", count: 4)

    @Test func aSecuredKeyIsBase64OfTheHMACAndTheParameters() throws {
        let r = KeyRestrictions(
            filters: "category:fruit AND price < 5", validUntil: Date(timeIntervalSince1970: 1_900_000_000),
            restrictDomains: ["com.shop", "org.example"], userToken: "user 42")
        let key = try SecuredKey.generate(parentKey: parent, r)
        let text = String(decoding: Data(base64Encoded: key)!, as: UTF8.self)
        let params = String(text.dropFirst(64))
        // Algolia's layout: 64 hex digits of HMAC-SHA256, then the query string (keys sorted).
        #expect(
            params == "filters=category%3Afruit%20AND%20price%20%3C%205&parent=\(APIKey.id(of: parent))"
                + "&restrictDomains=com.shop,org.example&userToken=user%2042&validUntil=1900000000")
        let parsed = try SecuredKey.parse(key)
        #expect(parsed.restrictions == r)
        #expect(parsed.parent == APIKey.id(of: parent))
        #expect(SecuredKey.verify(parsed, secret: SecuredKey.signingSecret(parentKey: parent)))
        // Another parent's secret does not verify it.
        let other = "llk_" + String(repeating: "f", count: 64)
        #expect(!SecuredKey.verify(parsed, secret: SecuredKey.signingSecret(parentKey: other)))
    }

    @Test func changingAnyRestrictionBreaksTheSignature() throws {
        let key = try SecuredKey.generate(parentKey: parent, KeyRestrictions(filters: "category:fruit"))
        var text = String(decoding: Data(base64Encoded: key)!, as: UTF8.self)
        text = text.replacingOccurrences(of: "fruit", with: "meat!")
        let forged = try SecuredKey.parse(Data(text.utf8).base64EncodedString())
        #expect(forged.restrictions.filters == "category:meat!")
        #expect(!SecuredKey.verify(forged, secret: SecuredKey.signingSecret(parentKey: parent)))
    }

    @Test func badRestrictionsAreRefusedWhenTheKeyIsMade() {
        #expect(throws: TenancyError.self) { try SecuredKey.generate(parentKey: parent, KeyRestrictions(filters: "category:")) }
        #expect(throws: TenancyError.self) { try SecuredKey.generate(parentKey: parent, KeyRestrictions(restrictDomains: ["a b"])) }
        #expect(throws: TenancyError.self) { try SecuredKey.generate(parentKey: "not-a-key", KeyRestrictions()) }
    }
}

@Suite struct KeyStoreTests {
    func tempStore() throws -> (KeyStore, String) {
        let path = NSTemporaryDirectory() + "keys-\(UUID().uuidString).sqlite"
        return (try KeyStore(path: path), path)
    }

    @Test func keysAreStoredOnlyAsHashesInAFileOnlyItsOwnerReads() throws {
        let (store, path) = try tempStore()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (key, rec) = try store.create(app: "acme", role: .admin, rateLimit: 5, maxItemsPerPublish: 10)
        #expect(APIKey.isPlain(key))
        #expect(rec.hash == APIKey.hash(key) && rec.id == String(rec.hash.prefix(16)))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.range(of: Data(key.utf8)) == nil)
        #expect(bytes.range(of: Data(key.dropFirst(4).utf8)) == nil)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Read back by a new store, as a restarted coordinator would.
        let again = try KeyStore(path: path)
        #expect(again.record(hash: APIKey.hash(key)) == rec)
    }

    @Test func revokedAndUnknownKeysAreRefusedWithTheirReason() throws {
        let (store, path) = try tempStore()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (key, rec) = try store.create(app: "acme", role: .search)
        let a = try Access.resolve(key: key, store: store, requireKeys: true)
        #expect(a.scope.app == "acme" && a.role == .search && !a.canWrite)
        _ = try store.revoke(rec.id)
        #expect(
            throws: TenancyError(
                .keyRevoked, "API key \(rec.id) was revoked at \(ISO8601DateFormatter().string(from: store.record(id: rec.id)!.revoked!))")
        ) {
            try Access.resolve(key: key, store: store, requireKeys: true)
        }
        do { _ = try Access.resolve(key: APIKey.generate(), store: store, requireKeys: true); Issue.record("unknown key accepted") } catch {
            #expect(error.code == .invalidKey)
        }
        do { _ = try Access.resolve(key: nil, store: store, requireKeys: true); Issue.record("no key accepted") } catch {
            #expect(error.code == .keyRequired)
        }
        #expect(try Access.resolve(key: nil, store: store, requireKeys: false).scope == .unscoped)
    }

    @Test func securedKeysExpireAndDieWithTheirParent() throws {
        let (store, path) = try tempStore()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (key, rec) = try store.create(app: "acme", role: .search)
        let now = Date()
        let live = try SecuredKey.generate(parentKey: key, KeyRestrictions(filters: "category:fruit", validUntil: now.addingTimeInterval(60)))
        let a = try Access.resolve(key: live, store: store, requireKeys: true, now: now)
        #expect(a.secured && a.role == .search && a.scope.app == "acme")
        #expect(a.scope.restriction != .all)
        do {
            _ = try Access.resolve(key: live, store: store, requireKeys: true, now: now.addingTimeInterval(61)); Issue.record("expired key accepted")
        } catch {
            #expect(error.code == .keyExpired)
        }
        // An admin key has no signing secret: it cannot be a parent.
        let (admin, _) = try store.create(app: "acme", role: .admin)
        let fromAdmin = try SecuredKey.generate(parentKey: admin, KeyRestrictions())
        do { _ = try Access.resolve(key: fromAdmin, store: store, requireKeys: true); Issue.record("admin-derived key accepted") } catch {
            #expect(error.code == .invalidKey)
        }
        _ = try store.revoke(key)
        #expect(store.record(id: rec.id)?.revoked != nil)
        do { _ = try Access.resolve(key: live, store: store, requireKeys: true, now: now); Issue.record("revoked parent accepted") } catch {
            #expect(error.code == .keyRevoked)
        }
    }

    @Test func appNamesAreOneLabelOfLettersDigitsAndDashes() throws {
        let (store, path) = try tempStore()
        defer { try? FileManager.default.removeItem(atPath: path) }
        for bad in ["", "a.b", "Acme", "a b", "@x", String(repeating: "a", count: 65)] {
            #expect(throws: TenancyError.self) { try store.create(app: bad, role: .admin) }
        }
        #expect(throws: TenancyError.self) { try store.create(app: nil, role: .admin) }
        #expect(throws: TenancyError.self) { try store.create(app: "acme", role: .master) }
        _ = try store.create(app: "acme-2_b", role: .admin)
    }
}

@Suite struct TenantScopeTests {
    let acme = TenantScope(app: "acme")

    @Test func namesRoundTripAndStayApart() {
        #expect(acme.qualify(domain: "org.debian") == "@acme.org.debian")
        #expect(acme.qualify(domain: "") == "@acme")
        #expect(acme.unqualify(domain: "@acme.org.debian") == "org.debian")
        #expect(acme.unqualify(domain: "@acme") == "")
        #expect(acme.qualify(uid: "deb:0ad") == "@acme/deb:0ad")
        #expect(acme.qualify(uid: "entity:Landmark:42") == "entity:@acme/Landmark:42")
        #expect(acme.qualify(uid: "entity:Landmark:42") == AppEntity.uniqueIdentifier(type: acme.qualify(entityType: "Landmark"), id: "42"))
        for uid in ["x", "entity:T:1", "@acme/x", "entity:"] { #expect(acme.unqualify(uid: acme.qualify(uid: uid)) == uid) }
        // Another app's names are never another app's: no prefix of one is the other's.
        #expect(!DomainIdentifier.domain("@acme2.x", isWithin: acme.root!))
        let item: JSONValue = .object(["uniqueIdentifier": .string("a"), "attributes": .object([:])])
        let stored = acme.qualify(item: item)
        #expect(stored["domainIdentifier"] == .string("@acme") && stored["uniqueIdentifier"] == .string("@acme/a"))
        #expect(acme.unqualify(item: stored)["uniqueIdentifier"] == .string("a"))
        #expect(TenantScope.unscoped.qualify(item: item) == item)
    }

    @Test func everyPlanIsConfinedToTheAppAndItsRestrictions() {
        let p: QueryPlan.Predicate = .or([.domain(["org.x"]), .not(.identifier(["a"])), .domain([""])])
        let r = TenantScope(app: "acme", restriction: .domain(["com.shop"])).restrict(p)
        #expect(
            r
                == .and([
                    .domain(["@acme"]), .domain(["@acme.com.shop"]),
                    .or([.domain(["@acme.org.x"]), .not(.identifier(["@acme/a"])), .exactDomain(["@acme"])]),
                ]))
        #expect(acme.restrict(QueryPlan.Predicate.all) == .domain(["@acme"]))
        #expect(TenantScope.unscoped.restrict(p) == p)
        var plan = SearchPlan(filter: .all, disjunctiveFilters: ["category": .all])
        plan = acme.restrict(plan)
        #expect(plan.filter == .domain(["@acme"]) && plan.disjunctiveFilters["category"] == .domain(["@acme"]))
    }
}

@Suite struct RateLimiterTests {
    @Test func aKeyGetsItsRatePerSecondAndNoMore() {
        var limiter = RateLimiter()
        let allowed = (0..<10).filter { _ in limiter.allow("k", perSecond: 3, now: 100) }.count
        #expect(allowed == 3)
        let early = limiter.allow("k", perSecond: 3, now: 100.2)
        let later = limiter.allow("k", perSecond: 3, now: 100.34)  // one more a third of a second later
        let other = limiter.allow("other", perSecond: 3, now: 100)  // buckets are apart
        #expect(!early && later && other)
    }
}
