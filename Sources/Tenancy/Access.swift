import Foundation
import QueryPlan

/// Who a request comes from, as its key says: the scope its searches and
/// writes are confined to, what it may do, and the limits it runs under.
package struct Access: Sendable {
    /// Nil for a keyless request to a cluster that does not require keys.
    package var role: KeyRole?
    package var scope: TenantScope
    /// The key (the parent, for a secured key): its id names it in errors and its limits apply.
    package var record: KeyRecord?
    /// Whether it came through a secured key.
    package var secured: Bool
    /// Requests are counted per bucket: the key's id, and the user token of a secured key.
    package var rateBucket: String?
    /// A secured key's `restrictDomains` (Algolia's `restrictIndices`): the
    /// REST API refuses an index outside them rather than answer it empty.
    package var restrictDomains: [String]? = nil

    package static let open = Access(role: nil, scope: .unscoped, record: nil, secured: false, rateBucket: nil)

    package var canWrite: Bool { role == nil || role == .admin }
    package var canSearch: Bool { role == nil || role == .admin || role == .search }
    /// Key management and cluster stats.
    package var isOperator: Bool { role == nil || role == .master }

    /// Checks the key of a request.
    ///
    /// - No key: ``open`` when keys are not required, else `key_required`.
    /// - A plain key: found by its hash; refused when unknown or revoked.
    /// - A secured key: its parent found by the id it carries, its signature
    ///   checked with the parent's signing secret, then its `validUntil`;
    ///   refused when the parent is revoked. Its restrictions become the
    ///   scope's restriction.
    package static func resolve(key: String?, store: KeyStore?, requireKeys: Bool, now: Date = Date()) throws(TenancyError) -> Access {
        guard let key, !key.isEmpty else {
            if requireKeys {
                throw TenancyError(
                    .keyRequired, "this cluster requires an API key: pass --key KEY (or set LIMELIGHT_KEY), or the 'key' field of the request")
            }
            return .open
        }
        guard let store else {
            throw TenancyError(.keysDisabled, "this cluster has no key store (start the coordinator with --keys FILE); send requests without a key")
        }
        if APIKey.isPlain(key) {
            guard let rec = store.record(hash: APIKey.hash(key)) else {
                throw TenancyError(.invalidKey, "unknown API key (id \(APIKey.id(of: key))): no key of this cluster has this value")
            }
            if let at = rec.revoked {
                throw TenancyError(.keyRevoked, "API key \(rec.id) was revoked at \(ISO8601DateFormatter().string(from: at))")
            }
            return Access(role: rec.role, scope: TenantScope(app: rec.app), record: rec, secured: false, rateBucket: rec.id)
        }
        let parsed: SecuredKey.Parsed
        do throws(TenancyError) { parsed = try SecuredKey.parse(key) } catch {
            // Not Limelight's form: perhaps Algolia's, made by its own clients.
            guard let algolia = try AlgoliaSecuredKey.parse(key) else { throw error }
            guard let parent = store.algoliaParent(of: algolia) else {
                throw TenancyError(.invalidKey, "invalid secured key: its signature does not match any search key of this cluster")
            }
            return try securedAccess(parent: parent, algolia.restrictions, now: now)
        }
        guard let parent = store.record(id: parsed.parent), let secret = parent.signingSecret, SecuredKey.verify(parsed, secret: secret) else {
            throw TenancyError(.invalidKey, "invalid secured key: its signature does not match any search key of this cluster")
        }
        return try securedAccess(parent: parent, parsed.restrictions, now: now)
    }

    /// A secured key's access, once its parent is found and its signature checked.
    static func securedAccess(parent: KeyRecord, _ restrictions: KeyRestrictions, now: Date) throws(TenancyError) -> Access {
        if let at = parent.revoked {
            throw TenancyError(
                .keyRevoked, "the parent key \(parent.id) of this secured key was revoked at \(ISO8601DateFormatter().string(from: at))")
        }
        if let until = restrictions.validUntil, until <= now {
            throw TenancyError(.keyExpired, "this secured key expired at \(ISO8601DateFormatter().string(from: until)) (its validUntil)")
        }
        let restriction = try TenantScope.predicate(of: restrictions)
        let bucket = parent.id + (restrictions.userToken.map { "/" + $0 } ?? "")
        return Access(
            role: .search, scope: TenantScope(app: parent.app, restriction: restriction), record: parent,
            secured: true, rateBucket: bucket, restrictDomains: restrictions.restrictDomains)
    }
}

/// Requests per second per key: a token bucket per bucket name, holding at
/// most one second of requests (a key limited to 5 may make 5 at once, then
/// one every 200 ms).
package struct RateLimiter: Sendable {
    struct Bucket: Sendable { var tokens: Double; var at: Double }
    var buckets: [String: Bucket] = [:]

    package init() {}

    /// Takes one request from the bucket; false when it is empty.
    package mutating func allow(_ name: String, perSecond rate: Double, now: Double = ProcessInfo.processInfo.systemUptime) -> Bool {
        var b = buckets[name] ?? Bucket(tokens: max(1, rate), at: now)
        b.tokens = min(max(1, rate), b.tokens + (now - b.at) * rate)
        b.at = now
        let ok = b.tokens >= 1
        if ok { b.tokens -= 1 }
        buckets[name] = b
        if buckets.count > 100_000 { buckets = buckets.filter { now - $0.value.at < 10 } }
        return ok
    }
}
