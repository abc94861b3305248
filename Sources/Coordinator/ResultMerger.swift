import Items
import QueryPlan
import WireProtocol

/// A k-way merge of sorted per-shard streams.
///
/// A hit can be released once every shard still running has offered a hit
/// that sorts no earlier, so the client's first batch goes out as soon as each
/// shard has sent its first batch, not when the slowest shard has finished.
package struct ResultMerger: Sendable {
    let order: SortOrder
    var buffers: [Int: [Hit]] = [:]
    var heads: [Int: Int] = [:]
    var running: Set<Int>

    package init(order: SortOrder, shards: [Int]) {
        self.order = order
        self.running = Set(shards)
        for s in shards { buffers[s] = []; heads[s] = 0 }
    }

    package mutating func add(shard: Int, hits: [Hit]) {
        buffers[shard, default: []].append(contentsOf: hits)
    }

    /// The shard will send nothing more (done, failed or cancelled).
    package mutating func finish(shard: Int) {
        running.remove(shard)
    }

    /// Drops a shard's unreleased hits (it is being retried elsewhere).
    package mutating func reset(shard: Int) {
        buffers[shard] = []
        heads[shard] = 0
        running.insert(shard)
    }

    /// Releases every hit that is now certain of its place.
    package mutating func drain(max: Int = .max) -> [(shard: Int, hit: Hit)] {
        var out: [(shard: Int, hit: Hit)] = []
        while out.count < max {
            var best: Int?
            var blocked = false
            for (shard, buffer) in buffers {
                let h = heads[shard] ?? 0
                if h >= buffer.count {
                    // An empty running shard may still send something earlier.
                    if running.contains(shard) { blocked = true; break }
                    continue
                }
                if let b = best {
                    let bh = buffers[b]![heads[b]!]
                    if order.precedes(buffer[h].sort ?? [], bh.sort ?? []) { best = shard }
                } else {
                    best = shard
                }
            }
            guard !blocked, let shard = best else { break }
            let h = heads[shard]!
            out.append((shard, buffers[shard]![h]))
            heads[shard] = h + 1
            if h + 1 > 256 {
                // Compact now and then, so long streams don't hold every hit.
                buffers[shard]!.removeFirst(h + 1)
                heads[shard] = 0
            }
        }
        return out
    }
}
