import Foundation
import SQLite

extension ShardStore {
    /// Deletes every item whose domain `keeps` refuses — after a split, the
    /// domains whose slot another shard owns (`Body.KeepSlots`); returns how
    /// many went. Only the exact
    /// domain decides, not its parent's: subdomains hash on their own, so
    /// `org.debian.games` may stay where `org.debian` leaves. One
    /// transaction, so a query sees the shard either before or after.
    package func purge(keeping keeps: (String) -> Bool, what: String) throws -> Int {
        try requireWritable("purge moved slots")
        do {
            return try db.transaction(.immediate) {
                let domains = try db.prepare("SELECT DISTINCT domain FROM items").map { $0.string(at: 0) ?? "" }
                let moved = domains.filter { !keeps($0) }
                guard !moved.isEmpty else { return 0 }
                var ids: [Int64] = []
                for domain in moved {
                    let select = try db.prepare("SELECT id FROM items WHERE domain = ?1")
                    try select.bind(domain, at: 0)
                    ids += try select.map { $0.int64(at: 0) }
                }
                for id in ids { try removeItem(id: id) }
                logger.info(
                    "purged the slots another shard owns",
                    metadata: [
                        "store.domains": "\(moved.count)", "store.deleted": "\(ids.count)", "store.kept": "\(what)",
                    ])
                return ids.count
            }
        } catch {
            throw StoreError.wrap(error, "cannot purge moved slots")
        }
    }
}
