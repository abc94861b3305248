import Foundation
import Items
import QueryPlan
import SQLite

/// App entities in a shard: deletes by type, association with an existing
/// item, and the exact-domain test behind Spotlight's groups.
extension ShardStore {
    /// Deletes donated entities of one type: those `ids`, or every one of the
    /// type when `ids` is nil. Entities are the items whose identifier is
    /// `entity:TYPE:…` (see ``AppEntity``), so a type is one range of the
    /// unique index: the delete is exact, and leaves every other item —
    /// including items merely associated with an entity of the type — alone.
    package func deleteEntities(type: String, ids: [String]? = nil) throws -> Int {
        try requireWritable("delete entities")
        do {
            return try db.transaction(.immediate) {
                try reloadIfChanged()  // the identifier filter must know of other writers' commits
                if let ids {
                    var n = 0
                    for id in ids where try removeItem(uid: AppEntity.uniqueIdentifier(type: type, id: id)) { n += 1 }
                    return n
                }
                let prefix = AppEntity.uniqueIdentifier(type: type, id: "")
                // Every identifier that starts with the prefix sorts in [prefix, prefix with its last byte + 1).
                let end = AppEntity.identifierPrefix + type + ";"
                let s = try db.prepare("SELECT id FROM items WHERE uid >= ?1 AND uid < ?2")
                try s.bind(prefix, at: 0)
                try s.bind(end, at: 1)
                let found = try s.map { $0.int64(at: 0) }
                for id in found { try removeItem(id: id) }
                logger.info("deleted entities of a type", metadata: ["entity.type": "\(type)", "store.deleted": "\(found.count)"])
                return found.count
            }
        } catch {
            throw StoreError.wrap(error, "cannot delete entities of type \(type)")
        }
    }

    /// Associates an existing item with an app entity
    /// (`CSSearchableItem.associateAppEntity(_:priority:)`): the item is
    /// rewritten with `entity` set, so its results carry it and its priority
    /// ranks it. Returns false when the shard does not hold the item.
    package func associate(uniqueIdentifier uid: String, with entity: EntityAssociation) throws -> Bool {
        try requireWritable("associate an entity")
        do {
            return try db.transaction(.immediate) {
                try reloadIfChanged()
                let find = try db.prepare("SELECT json FROM items WHERE uid = ?")
                try find.bind(uid, at: 0)
                guard let text = try find.scalar()?.string else { return false }
                var item = try ItemDecoder(schema: schema).decode(try JSONValue.parse(text))
                item.entity = entity
                try upsert(item)
                return true
            }
        } catch {
            throw StoreError.wrap(error, "cannot associate an entity with \(uid)")
        }
    }

    /// `exactDomain`: the items of these domains, without those of their
    /// subdomains. The subdomains are the ones this shard holds now, read in
    /// the query's own transaction, so the answer is exact.
    func exactDomainNode(_ domains: [String]) throws -> Node {
        let s = try db.prepare("SELECT DISTINCT domain FROM items WHERE domain >= ?1 || '.' AND domain < ?1 || '/'")
        var clauses: [Node] = []
        for d in Set(domains).sorted() {
            var below: [String] = []
            try s.bind(d, at: 0)
            while try s.step() { if let sub = s.string(at: 0) { below.append(sub) } }
            try s.reset()
            // `domain` is hierarchical: each domain's own clause leaves out
            // everything below it; a listed subdomain comes back through its own clause.
            clauses.append(below.isEmpty ? .domain([d]) : .and([.domain([d]), .not(.domain(below))]))
        }
        return clauses.count == 1 ? clauses[0] : .or(clauses)
    }

    /// The distinct domains the shard holds, each with its item count (not
    /// those a split's purge under way is deleting, nor those the map the
    /// request was routed by gives another shard).
    package func domains() throws -> [String: Int] {
        var out: [String: Int] = [:]
        let keep = try slotFilters()
        try db.prepare("SELECT domain, count(*) FROM items GROUP BY domain").forEachRow { r in
            let domain = r.string(at: 0) ?? ""
            if keep.allSatisfy({ $0.keeps(domain: domain) }) { out[domain] = Int(r.int64(at: 1)) }
        }
        return out
    }
}
