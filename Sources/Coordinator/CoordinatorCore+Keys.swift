import Foundation
import Items
import QueryPlan
import Tenancy
import WireProtocol

/// API keys at the front door: every client request is checked here before
/// it is handled, and key management (`keys`) is answered here.
///
/// The key decides the app (``TenantScope``), never the message. What each
/// role may send:
///
/// | request | open (no key, keys not required) | master | admin | search / secured |
/// | --- | --- | --- | --- | --- |
/// | `ping` | yes | yes | yes | yes (no key needed, even with `--require-keys`) |
/// | publish, delete, declare, entity writes | yes | no | yes | no |
/// | query, search, suggest, spotlight, continue, cancel | yes | no | yes | yes |
/// | `stats` | yes | yes | yes | no |
/// | `keys` | yes | every app | its own app | no |
///
/// A master key belongs to no app, so it cannot read or write items: that
/// keeps "which app?" from ever having a default. Limits (``KeyRecord/rateLimit``,
/// ``KeyRecord/maxItemsPerPublish``) are checked after the rights, so a refused
/// request is never counted against a limit it could not use.
extension CoordinatorCore {
    /// The access the request's key gives, or nil once the client has been
    /// told why it is refused.
    func authorize(_ envelope: Envelope, route: [Data]) -> Access? {
        if case .ping = envelope.body { return .open }
        let access: Access
        do throws(TenancyError) {
            access = try Access.resolve(key: envelope.key, store: keyStore, requireKeys: configuration.requireKeys)
        } catch {
            count(.keysRefused)
            sendError(.client(route), envelope.id, WireError(error))
            return nil
        }
        if let why = forbidden(envelope.body, access) {
            count(.keysForbidden)
            sendError(.client(route), envelope.id, WireError(code: TenancyError.Code.forbidden.rawValue, message: why))
            return nil
        }
        if let limit = access.record?.rateLimit, let bucket = access.rateBucket, !rateLimiter.allow(bucket, perSecond: limit) {
            count(.keysRateLimited)
            sendError(
                .client(route), envelope.id,
                WireError(
                    code: TenancyError.Code.rateLimited.rawValue,
                    message: "API key \(access.record!.id) allows \(Self.number(limit)) requests per second; this one came too soon: wait and retry"))
            return nil
        }
        if let max = access.record?.maxItemsPerPublish {
            let n: Int? =
                switch envelope.body {
                case .publish(let p): p.items.count
                case .entityDonate(let d): d.entities.count
                default: nil
                }
            if let n, n > max {
                count(.keysTooManyItems)
                sendError(
                    .client(route), envelope.id,
                    WireError(
                        code: TenancyError.Code.tooManyItems.rawValue,
                        message: "API key \(access.record!.id) allows at most \(max) items per publish; this batch has \(n): split it", field: "items"
                    ))
                return nil
            }
        }
        return access
    }

    /// Why the access may not make this request; nil when it may.
    func forbidden(_ body: Body, _ access: Access) -> String? {
        guard let role = access.role else { return nil }
        let app = access.scope.app.map { "app '\($0)'" } ?? "no app"
        let kind = access.secured ? "a secured key" : "\(role == .admin ? "an" : "a") \(role.rawValue) key"
        switch body {
        case .publish, .delete, .declare, .entityDonate, .entityDelete, .entityAssociate:
            if role == .admin { return nil }
            if role == .master { return "a master key manages keys and belongs to no app, so it cannot write items: use an admin key of the app" }
            return "\(kind) (\(app)) can only search: '\(body.type.rawValue)' needs an admin key of the app"
        case .query, .search, .suggest, .spotlight, .continueSearch, .cancel:
            return role == .master ? "a master key belongs to no app, so it cannot search items: use a search or admin key of the app" : nil
        case .stats:
            return role == .search ? "\(kind) cannot read the cluster's stats: they need an admin or master key" : nil
        case .keys:
            return role == .search ? "\(kind) cannot manage keys: that needs an admin key of the app, or a master key" : nil
        default:
            return nil
        }
    }

    // MARK: keys

    func manageKeys(client: [Data], id: String, _ k: Body.Keys, access: Access) {
        guard let store = keyStore else {
            sendError(
                .client(client), id,
                WireError(
                    TenancyError(
                        .keysDisabled,
                        "this cluster has no key store: start the coordinator with --keys FILE (limelight up does)")))
            return
        }
        // An admin key's reach is its own app: naming another is refused, not ignored.
        let ownApp = access.role == .admin ? access.scope.app : nil
        if let own = ownApp, let asked = k.app, asked != own {
            sendError(
                .client(client), id,
                WireError(
                    code: TenancyError.Code.forbidden.rawValue,
                    message: "an admin key of app '\(own)' manages only that app's keys, not app '\(asked)'", field: "app"))
            return
        }
        do throws(TenancyError) {
            switch k.action {
            case "create":
                guard let roleName = k.role else { throw TenancyError(.invalidParameter, "create needs a role: admin or search", field: "role") }
                guard let role = KeyRole(rawValue: roleName) else {
                    throw TenancyError(
                        .invalidParameter, "unknown role '\(roleName)': use admin or search (or master, with a master key)", field: "role")
                }
                if role == .master && ownApp != nil {
                    throw TenancyError(.forbidden, "only a master key can create master keys", field: "role")
                }
                let app = role == .master ? k.app : (ownApp ?? k.app)
                if sharesKeys {
                    let made = try KeyStore.make(
                        app: app, role: role, rateLimit: k.rateLimit, maxItemsPerPublish: k.maxItemsPerPublish, description: k.description)
                    shareKeyChange(KeySharing.Change(key: made.shared, value: made.key, client: client, requestID: id))
                    return
                }
                let made = try store.create(
                    app: app, role: role, rateLimit: k.rateLimit, maxItemsPerPublish: k.maxItemsPerPublish, description: k.description)
                logger.notice(
                    "created an API key",
                    metadata: [
                        "key.id": "\(made.record.id)", "key.app": "\(made.record.app ?? "-")",
                        "key.role": "\(role.rawValue)",
                    ])
                send(.client(client), id, .keysReply(Body.KeysReply(apiKey: made.key, keys: [made.record.json])))
            case "list":
                send(.client(client), id, .keysReply(Body.KeysReply(keys: store.list(app: ownApp ?? k.app).map(\.json))))
            case "revoke":
                guard let target = k.target, !target.isEmpty else {
                    throw TenancyError(.invalidParameter, "revoke needs the key, or its id, in 'target'", field: "target")
                }
                if let own = ownApp {
                    let rec = store.record(hash: APIKey.hash(target)) ?? store.record(id: target)
                    guard let rec, rec.app == own else {
                        throw TenancyError(.notFound, "app '\(own)' has no key with this value or id", field: "target")
                    }
                }
                if sharesKeys {
                    let revoked = try store.revocation(of: target)
                    if revoked.record != store.record(id: revoked.record.id) {
                        shareKeyChange(KeySharing.Change(key: revoked, value: nil, client: client, requestID: id))
                        return
                    }
                }
                let rec = try store.revoke(target)
                logger.notice("revoked an API key", metadata: ["key.id": "\(rec.id)", "key.app": "\(rec.app ?? "-")"])
                send(.client(client), id, .keysReply(Body.KeysReply(keys: [rec.json])))
            default:
                throw TenancyError(.invalidParameter, "unknown keys action '\(k.action)': use create, list or revoke", field: "action")
            }
        } catch {
            sendError(.client(client), id, WireError(error))
        }
    }

    static func number(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }
}

extension WireError {
    init(_ e: TenancyError) { self.init(code: e.code.rawValue, message: e.message, field: e.field) }
}

extension TenantScope {
    /// A publish with every item's names in the app's reserved forms.
    func qualify(publish p: Body.Publish) -> Body.Publish {
        guard app != nil else { return p }
        return Body.Publish(items: p.items.map { qualify(item: $0) }, batch: p.batch)
    }
}

extension TenantScope {
    /// A delete confined to the app: its identifiers and domains qualified,
    /// and `all` turned into the app's reserved domain (every item of the
    /// app, and nothing else).
    func qualify(delete d: Body.Delete) -> Body.Delete {
        guard let root else { return d }
        if d.all == true { return Body.Delete(domains: [root], shards: d.shards) }
        return Body.Delete(ids: d.ids?.map { qualify(uid: $0) }, domains: d.domains?.map { qualify(domain: $0) }, all: d.all, shards: d.shards)
    }

    /// A shard's search answer with the app's own names: the hits' ids, and
    /// the groups whole. The hits' items keep their stored names and form
    /// (a raw item stays bytes): only the page's are rewritten, as the
    /// response is written (``SearchResponseBuilder/itemTransform``, which
    /// ``itemNames`` gives), rather than every shard's `offset + length`.
    func unqualify(_ r: Body.ShardSearchResult) -> Body.ShardSearchResult {
        guard app != nil else { return r }
        var r = r
        for i in r.hits.indices { r.hits[i].id = unqualify(uid: r.hits[i].id) }
        r.groups = r.groups?.map {
            Body.ShardGroup(
                domainIdentifier: unqualify(domain: $0.domainIdentifier), total: $0.total,
                hits: $0.hits.map { Body.RankedHit(id: unqualify(uid: $0.id), item: unqualify(item: $0.tree), rank: $0.rank) })
        }
        return r
    }

    /// The rewrite of a search hit's item to the app's own names; nil when
    /// the search is not an app's.
    var itemNames: (@Sendable (JSONValue) -> JSONValue)? {
        guard app != nil else { return nil }
        let scope = self
        return { scope.unqualify(item: $0) }
    }
}
