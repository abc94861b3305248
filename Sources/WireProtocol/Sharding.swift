import Foundation
import Items

/// Which shard holds a domain's items.
///
/// The shard count is fixed when a cluster is created; the hash must never
/// change, or items would be looked for on the wrong shard. FNV-1a over the
/// UTF-8 bytes of the whole domain identifier: stable across processes, hosts
/// and Swift versions (unlike `Hasher`, which is seeded per process).
/// Subdomains hash on their own, so `org.debian.games` and `org.debian` may
/// live on different shards; deleting a domain therefore goes to every shard.
public enum Sharding {
    public static func shard(forDomain domain: String, shardCount: Int) -> Int {
        precondition(shardCount > 0, "a cluster has at least one shard")
        return Int(hash(domain) % UInt64(shardCount))
    }

    /// FNV-1a of the domain's UTF-8 bytes: the one hash every placement uses.
    /// A domain's slot is `hash mod S` (`ShardMap`); as S is a multiple of
    /// the shard count, `slot mod N` is `hash mod N`, this function's answer.
    public static func hash(_ domain: String) -> UInt64 { DomainHash.fnv1a(utf8: domain.utf8) }

    /// Parses a shard list flag: `0,1,2`, ranges `0-3`, or `all`.
    public static func parseList(_ text: String, shardCount: Int? = nil) -> [Int]? {
        if text == "all", let shardCount { return Array(0..<shardCount) }
        var out: [Int] = []
        for part in text.split(separator: ",") {
            let p = part.trimmingCharacters(in: .whitespaces)
            if let dash = p.firstIndex(of: "-"), let a = Int(p[..<dash]), let b = Int(p[p.index(after: dash)...]), a <= b {
                out += Array(a...b)
            } else if let n = Int(p), n >= 0 {
                out.append(n)
            } else {
                return nil
            }
        }
        return out.isEmpty ? nil : Array(Set(out)).sorted()
    }
}
