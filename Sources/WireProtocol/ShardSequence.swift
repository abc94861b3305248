/// How far a replica of a shard has applied the shard's writes.
///
/// The coordinator numbers each change of a shard (a write, a delete, an
/// entity operation) 1, 2, 3, … and sends the number with it; an indexer
/// stores the last number it applied in the shard file, in the transaction
/// of the change, and applies them only in order. A replica that reports
/// `sequence` N has applied exactly changes 1…N, so it can be sent N+1… when
/// it comes back, and it is stale while N is below what another replica has
/// committed.
public struct ShardSequence: Sendable, Hashable, Codable {
    public var shard: Int
    public var sequence: Int
    public init(shard: Int, sequence: Int) { self.shard = shard; self.sequence = sequence }
}
