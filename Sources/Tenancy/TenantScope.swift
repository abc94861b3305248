import Foundation
import Items
import QueryPlan
import SearchParameters

/// Confines one request to its app's items: the single place where an app's
/// searches are restricted and its writes named.
///
/// Where the app lives on an item: in its domain. An app's items are stored
/// under the reserved domain `@APP` — a client's `org.debian.games` is stored
/// as `@acme.org.debian.games`, an item without a domain as `@acme` — and
/// their unique identifiers carry the tag `@APP/` (`@acme/deb:0ad`; an app
/// entity's `entity:TYPE:ID` becomes `entity:@acme/TYPE:ID`, so that deleting
/// an entity type stays a range of one app's identifiers). So:
/// - the shard store needs no new column, and domain sharding still works:
///   every item of one domain of one app lives on one shard;
/// - two apps may use the same identifiers and domains without meeting;
/// - one predicate, `domain(["@APP"])` (the app's domain and all below it),
///   selects exactly an app's items, served by the store's domain index.
///
/// ``restrict(_:)`` ANDs that predicate, and a secured key's
/// restrictions, into the shared query plan that every query language is
/// parsed into (Spotlight query strings, CloudKit and NSPredicate formats,
/// raw plans, Algolia parameters, typed queries, Spotlight groups and their
/// continuations); the coordinator calls it on every plan it sends to a
/// shard, so no language, parameter or token can widen it. Domain and
/// identifier tests the client wrote are qualified first, so they keep their
/// meaning inside the app.
///
/// The names are rewritten back (``unqualify(item:)``) on every item the
/// coordinator returns, so clients never see the reserved forms. Clients that
/// send no key to a cluster running without `--require-keys` are unscoped:
/// they see and write the whole store, every app's items unrewritten.
package struct TenantScope: Sendable, Hashable {
    /// Nil: unscoped, no rewriting and no restriction.
    package let app: String?
    /// A secured key's restrictions, over the app's own names (not yet qualified).
    package let restriction: QueryPlan.Predicate

    package static let unscoped = TenantScope(app: nil)

    package init(app: String?, restriction: QueryPlan.Predicate = .all) {
        self.app = app
        self.restriction = restriction
    }

    /// A domain label no client may start a domain with while scoped: it
    /// begins every app's reserved domain.
    package static let reservedMark = "@"

    /// The app's reserved domain, `@APP`.
    package var root: String? { app.map { Self.reservedMark + $0 } }

    // MARK: Names

    package func qualify(domain: String) -> String {
        guard let root else { return domain }
        return domain.isEmpty ? root : root + "." + domain
    }

    package func unqualify(domain: String) -> String {
        guard let root else { return domain }
        if domain == root { return "" }
        if domain.hasPrefix(root + ".") { return String(domain.dropFirst(root.count + 1)) }
        return domain
    }

    package func qualify(uid: String) -> String {
        guard let app else { return uid }
        let tag = Self.reservedMark + app + "/"
        if uid.hasPrefix(AppEntity.identifierPrefix) { return AppEntity.identifierPrefix + tag + uid.dropFirst(AppEntity.identifierPrefix.count) }
        return tag + uid
    }

    package func unqualify(uid: String) -> String {
        guard let app else { return uid }
        let tag = Self.reservedMark + app + "/"
        if uid.hasPrefix(AppEntity.identifierPrefix + tag) {
            return AppEntity.identifierPrefix + uid.dropFirst(AppEntity.identifierPrefix.count + tag.count)
        }
        if uid.hasPrefix(tag) { return String(uid.dropFirst(tag.count)) }
        return uid
    }

    /// An entity type as the store must see it, so that `entity:TYPE:` — the
    /// range an entity delete removes — is the app's own.
    package func qualify(entityType: String) -> String {
        guard let app else { return entityType }
        return Self.reservedMark + app + "/" + entityType
    }

    /// An item about to be published: its identifier and domain in the app's reserved forms.
    package func qualify(item: JSONValue) -> JSONValue {
        guard app != nil, case .object(var o) = item else { return item }
        if let uid = o["uniqueIdentifier"]?.stringValue { o["uniqueIdentifier"] = .string(qualify(uid: uid)) }
        switch o["domainIdentifier"] {
        case nil, .null?: o["domainIdentifier"] = .string(qualify(domain: ""))
        case .string(let d)?: o["domainIdentifier"] = .string(qualify(domain: d))
        default: break  // not text: the publish rejects it, naming the field
        }
        return .object(o)
    }

    /// An item on its way back to the client: the names it was published with.
    package func unqualify(item: JSONValue) -> JSONValue {
        guard app != nil, case .object(var o) = item else { return item }
        if let uid = o["uniqueIdentifier"]?.stringValue { o["uniqueIdentifier"] = .string(unqualify(uid: uid)) }
        if let d = o["domainIdentifier"]?.stringValue { o["domainIdentifier"] = .string(unqualify(domain: d)) }
        return .object(o)
    }

    // MARK: Plans

    /// The client's domain and identifier tests, in the app's reserved forms.
    /// `domain("")` — items without a domain — becomes the app's exact root.
    package func qualify(_ p: QueryPlan.Predicate) -> QueryPlan.Predicate {
        guard app != nil else { return p }
        switch p {
        case .all, .none, .exists, .text, .range, .textRange, .geo, .regex: return p
        case .and(let ps): return .and(ps.map(qualify))
        case .or(let ps): return .or(ps.map(qualify))
        case .not(let q): return .not(qualify(q))
        case .every(let q): return .every(qualify(q))
        case .identifier(let ids): return .identifier(ids.map { qualify(uid: $0) })
        case .exactDomain(let ds): return .exactDomain(ds.map { qualify(domain: $0) })
        case .domain(let ds):
            let named = ds.filter { !$0.isEmpty }.map { qualify(domain: $0) }
            let bare: QueryPlan.Predicate = ds.contains("") ? .exactDomain([qualify(domain: "")]) : .none
            return named.isEmpty ? bare : .or([.domain(named), bare])
        }
    }

    /// The plan a shard runs for this scope: the app's items only, within the
    /// secured key's restrictions, and among those what the client asked for.
    package func restrict(_ p: QueryPlan.Predicate) -> QueryPlan.Predicate {
        guard let root else { return p }
        return QueryPlan.Predicate.and([.domain([root]), qualify(restriction), qualify(p)]).simplified()
    }

    package func restrict(_ q: Query) -> Query {
        var q = q
        q.predicate = restrict(q.predicate)
        return q
    }

    /// A search plan's filter and every disjunctive facet's filter (facet
    /// counts are computed with those, so each must be confined too).
    package func restrict(_ plan: SearchPlan) -> SearchPlan {
        guard app != nil else { return plan }
        var plan = plan
        plan.filter = restrict(plan.filter)
        plan.disjunctiveFilters = plan.disjunctiveFilters.mapValues { restrict($0) }
        return plan
    }

    /// A secured key's restrictions as one predicate over the app's names.
    package static func predicate(of r: KeyRestrictions) throws(TenancyError) -> QueryPlan.Predicate {
        var parts: [QueryPlan.Predicate] = []
        if let f = r.filters {
            var parser = FilterExpressionParser(f)
            do throws(SearchParametersError) { parts += try parser.parse().map(\.predicate) } catch {
                throw TenancyError(.invalidKey, "the secured key's filters do not parse: \(error.message)")
            }
        }
        if let d = r.restrictDomains { parts.append(.domain(d)) }
        return QueryPlan.Predicate.and(parts).simplified()
    }
}
