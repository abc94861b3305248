import Foundation
import QueryPlan
import SQLite

extension ShardStore {
    /// An unsorted query that is one substring comparison (`title ==
    /// "*acti*"c`): its candidates come from the word index in rowid order
    /// (``substringLookup(_:names:)``) — the order results come in anyway —
    /// so they are checked and fetched as they are stepped, and a query with a
    /// limit stops after its last result. Collecting every candidate first
    /// would read every posting of every term containing the pattern: a
    /// common run ("tool") expands to hundreds of terms, and a title query
    /// would read their description postings too (FTS5 filters columns after
    /// reading), making title wildcards slow at p99.
    ///
    /// Nil when this does not apply (the caller takes the general path, which
    /// gives the same results): other shapes, patterns without a selective
    /// run, and a named attribute that holds numbers (they are checked as
    /// text but are not in the word index).
    func streamSubstringMatches(
        _ node: Node, _ query: Query, _ context: QueryContext, within scope: ItemScope?,
        onBatch: ([StoredResult]) throws -> Void
    ) throws -> Int? {
        guard case .text(let leaf) = node else { return nil }
        let options = leaf.test.options
        guard !options.contains(.wordBased), !options.contains(.tokenized),
            case .anyRun? = leaf.test.pattern.parts.first, !leaf.names.ids.isEmpty
        else { return nil }
        if case .one(let name?) = leaf.names {
            let numbers = try db.prepare("SELECT 1 FROM attrs WHERE name = ? AND num IS NOT NULL AND kind = 1 LIMIT 1")
            try numbers.bind(name, at: 0)
            if try numbers.scalar() != nil { return nil }
        }
        let (lookup, watermark) = try substringLookup(Self.runs(leaf.test.pattern.literals), names: leaf.names)
        guard case .match(let match) = lookup else { return nil }
        // The word index's candidates up to the vocabulary's watermark, then
        // every item written since (see ``substringIndex()``): rowid order
        // throughout.
        let s = try db.prepare("SELECT rowid FROM words WHERE words MATCH ? AND rowid <= ? ORDER BY rowid")
        try s.bind(match, at: 0)
        try s.bind(watermark, at: 1)
        defer { try? s.reset() }
        let written = try db.prepare("SELECT id FROM items WHERE id > ? ORDER BY id")
        try written.bind(watermark, at: 0)
        defer { try? written.reset() }
        var inWritten = false
        func next() throws -> Int64? {
            if !inWritten {
                if try s.step() { return s.int64(at: 0) }
                inWritten = true
            }
            return try written.step() ? written.int64(at: 0) : nil
        }
        let expired = Set(try expiredIDs(now: Date()))
        let fetch = query.fetchAttributes.map(FetchList.init)
        let loadNames = node.names, loadDomain = node.mentionsDomain
        var batcher = ResultBatcher(limit: query.limit, batchSize: query.batchSize)
        let inScope = scope?.bits
        while let id = try next() {
            try context.checkCancelled()
            if expired.contains(id) || inScope?.contains(id) == false { continue }
            guard node.evaluate(try load(id, names: loadNames, domain: loadDomain)) else { continue }
            guard let result = try fetchResult(id, attributes: fetch) else { continue }
            if try batcher.add(result, isCancelled: context.isCancelled, onBatch: onBatch) { break }
        }
        return try batcher.finish(onBatch: onBatch)
    }
}
