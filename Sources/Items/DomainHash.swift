/// The hash that places a domain's items: FNV-1a over the UTF-8 bytes of the
/// whole domain identifier, stable across processes, hosts and Swift versions
/// (unlike `Hasher`, which is seeded per process).
///
/// One function for every placement: the coordinator's routing
/// (`Sharding.hash`, a domain's slot in the shard map) and a shard's reads
/// while a split's purge is under way, which must agree on every domain.
public enum DomainHash {
    @inlinable public static func fnv1a<C: Collection<UInt8>>(utf8 bytes: C) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h &*= 0x0000_0100_0000_01b3
        }
        return h
    }
}
