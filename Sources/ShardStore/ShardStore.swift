import Foundation
import Items
import Logging
import QueryPlan
import SQLite

/// One shard: the items of some domains, in one SQLite file, and the query
/// evaluator over them.
///
/// A store is one SQLite connection and, like it, is used by one thread at a
/// time; it is deliberately not `Sendable`. Open one store per thread: the
/// indexer owns the read-write one, each query worker opens its own
/// `.readOnly` store on the same file, and WAL lets those readers run beside
/// the writer and see each commit as soon as it is made.
///
/// The file layout is described in ``Layout``.
///
/// Semantics and trade-offs, chosen so that results are always exactly what
/// `TextMatcher` and the `Predicate` definitions say:
/// - Indexes only propose candidates; each text comparison is decided by
///   `TextMatcher` on the stored value, so tokenizer quirks of FTS5 can only
///   cost time, never change an answer. Ranges, `exists` and domains are
///   answered by their indexes exactly.
/// - `not(p)` is the shard's items minus the exact matches of `p`; `p` is
///   checked item by item when its indexes can only over-approximate.
/// - Expired items (expirationDate ≤ now) are removed from every result,
///   before any purge.
/// - Attributes declared `unique` are word-indexed like any other text:
///   `w`/`t` comparisons apply to them too, and leaving them out would mean
///   scanning them for every word query.
/// - Substring patterns (`"*acti*"`) are served by the word index through the
///   vocabulary's trigrams (``TermGrams``), short and long values alike.
/// - Relevance is FTS5 BM25 over the query's word comparisons (titles weigh
///   4×, display names and keywords 2×) plus a hundredth of the entity
///   priority. It is shard-local.
/// - Sorting uses an attribute's first value; missing values sort last;
///   numbers (dates as seconds since 2001) before text; text by its folded
///   form, then exactly. Attributes declared not searchable cannot be sorted on.
package final class ShardStore {
    package enum Mode: Sendable, Hashable {
        case readWrite
        case readOnly
    }

    let db: Database
    package let path: String
    package let mode: Mode
    var logger: Logger

    /// Custom attribute declarations persisted in the shard.
    package private(set) var schema = AttributeSchema() { didSet { defaultTextIDs = nil } }
    /// Attribute name → id, as in the `names` table.
    var nameIDs: [String: Int64] = [:]
    var names: [Int64: String] = [:]
    /// `PRAGMA data_version` when the caches above were loaded; another
    /// connection's commit changes it.
    var dataVersion: Int64 = -1
    /// Whether `items` has its `wordcheck` column (a read-only connection may
    /// open a shard that no writer has upgraded yet).
    var hasWordCheck = false
    /// Whether the shard has its removal log (see ``RemovalLog``; a
    /// read-only connection may open a shard no writer has upgraded yet).
    var hasRemovalLog = false
    /// The ids of the attributes `*` covers, worked out once per change of
    /// the names or the schema rather than at every query.
    var defaultTextIDs: [Int64]?
    /// Parameter search's vocabulary and facet columns (see ``SearchCache``).
    let searchCache = SearchCache()
    /// Substring patterns' trigrams of the vocabulary (see ``TermGrams``).
    let substringCache = SubstringCache()
    /// Every item's id while the data is unchanged (see ``universe(_:)``).
    let universeCache = UniverseCache()
    /// The next item id while a write transaction stores items: `items.nextid`
    /// is read at its first item and written back once, at its end (see
    /// ``storingItems(_:)``).
    var pendingItemID: Int64?
    /// While a `run(_:rawItems:…)` that asked for its items as JSON runs:
    /// results carry ``StoredResult/rawItem`` instead of a tree.
    var rawResults = false
    /// The identifiers this writer's shard may hold (see ``UIDFilter``); nil
    /// until needed, and again after another connection's change.
    var uidFilter: UIDFilter?
    /// Identifier lookups the filter answered alone (for tests and figures).
    var uidLookupsSkipped = 0
    /// Times this connection read its ``DomainIndex`` whole rather than
    /// patching it (for tests and figures).
    var domainIndexReads = 0
    /// The slots this shard keeps under the map the request being read was
    /// routed by, set by the query worker for that request alone: during a
    /// split's switch a shard is queried by the new map before it has
    /// marked the rows that map gives another shard, so the reads leave
    /// those out themselves, as a mark would (``slotFilters()``).
    package var routedSlots: SlotFilter?

    /// Opens a shard file, creating it (and its tables) in `.readWrite` mode.
    /// `durability` sets when a `.readWrite` store's commits reach the disk.
    package init(path: String, mode: Mode = .readWrite, durability: Durability = .process, logger: Logger) throws {
        self.path = path
        self.mode = mode
        self.logger = logger
        self.logger[metadataKey: "store.path"] = "\(path)"
        if self.logger[metadataKey: "shard"] == nil {
            self.logger[metadataKey: "shard"] = "\(URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent)"
        }
        var configuration = Database.Configuration()
        configuration.cacheSizeKiB = 64 * 1024
        configuration.synchronous = durability.synchronous
        if mode == .readOnly {
            // Queries read pages straight from the map instead of copying each
            // miss out of the OS cache: ~6 % off a word query's p50 and a third
            // of its p99. The writer keeps plain reads (no gain measured
            // there). A query worker sizes both from its budget (``ReaderMemory``).
            let memory = Self.readerMemory
            configuration.cacheSizeKiB = memory.cacheKiB
            configuration.mmapSizeBytes = memory.mmapBytes
        }
        do {
            db = try Database(
                path: path, mode: mode == .readWrite ? .readWrite(create: true) : .readOnly,
                configuration: configuration)
            if mode == .readWrite {
                // Checkpoint every ~40 MB of log rather than SQLite's 4 MB: an
                // indexing batch rewrites the same FTS and index pages many
                // times over, and each checkpoint copies them to the file again.
                try db.execute("PRAGMA wal_autocheckpoint=10000")
                try db.transaction(.immediate) {
                    for sql in Layout.statements { try db.execute(sql) }
                    for added in Layout.addedColumns where try !hasColumn(added.table, added.column) {
                        try db.execute(added.sql)
                    }
                    let format = try db.prepare("SELECT value FROM meta WHERE key = 'format'").scalar()?.string
                    if let format, !Layout.readableFormats.contains(format) {
                        throw StoreError(
                            .incompatibleFormat,
                            "\(path) has store format \(format); this build reads formats \(Layout.readableFormats.sorted().joined(separator: ", "))")
                    }
                    if let format, format != String(Layout.format) {
                        for sql in Layout.migrations[format] ?? [] { try db.execute(sql) }
                        try db.prepare("UPDATE meta SET value = ? WHERE key = 'format'").run([.text(String(Layout.format))])
                        self.logger.info("upgraded the shard's format", metadata: ["store.from": "\(format)", "store.to": "\(Layout.format)"])
                    }
                    if format == nil {
                        try db.prepare("INSERT INTO meta(key, value) VALUES ('format', ?)").run([.text(String(Layout.format))])
                        for sql in Layout.creationStatements { try db.execute(sql) }
                    }
                }
            }
            try reloadIfChanged()
        } catch {
            throw StoreError.wrap(error, "cannot open the shard at \(path)")
        }
        self.logger.debug("opened shard", metadata: ["store.mode": "\(mode)", "store.items": "\((try? count()) ?? -1)"])
    }

    /// Reloads the name and declaration caches when another connection has
    /// committed since they were read. Cheap when nothing changed.
    func reloadIfChanged() throws {
        let version = try db.prepare("PRAGMA data_version").scalar()?.int64 ?? 0
        // Our own commits don't change data_version, but they keep the caches current themselves.
        guard version != dataVersion else { return }
        dataVersion = version
        uidFilter = nil
        var ids: [String: Int64] = [:]
        var byID: [Int64: String] = [:]
        try db.prepare("SELECT id, name FROM names").forEachRow { row in
            let id = row.int64(at: 0), name = row.string(at: 1) ?? ""
            ids[name] = id
            byID[id] = name
        }
        nameIDs = ids
        names = byID
        hasWordCheck = try hasColumn("items", "wordcheck")
        hasRemovalLog =
            try db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'items_removed'").scalar()?.int64 ?? 0 > 0
        var schema = AttributeSchema()
        let decoder = JSONDecoder()
        try db.prepare("SELECT spec FROM declared").forEachRow { row in
            if let text = row.string(at: 0), let spec = try? decoder.decode(AttributeSpec.self, from: Data(text.utf8)) {
                try? schema.declare(spec)
            }
        }
        if let text = try db.prepare("SELECT value FROM meta WHERE key = 'semantic'").scalar()?.string,
            let names = try? decoder.decode([String].self, from: Data(text.utf8))
        {
            for name in names { try? schema.setSemantic(name, true) }
        }
        self.schema = schema
    }

    func hasColumn(_ table: String, _ column: String) throws -> Bool {
        let s = try db.prepare("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?")
        try s.bind(table, at: 0)
        try s.bind(column, at: 1)
        return try s.scalar()?.int64 ?? 0 > 0
    }

    func requireWritable(_ what: String) throws {
        if mode == .readOnly { throw StoreError(.readOnly, "cannot \(what): the shard at \(path) is open read-only") }
    }

    // MARK: Declarations

    /// Declares custom attributes (`CSCustomAttributeKey`) and persists them
    /// in the shard, so that the shard decodes items the same way after a
    /// restart and every reader of the file agrees on their types.
    /// `semantic` marks attributes (standard or custom) embedded, or no longer
    /// embedded, for semantic search (see ``SemanticText``); their order is
    /// kept in `meta` under `semantic`.
    ///
    /// Declare before writing items that use them: values already stored keep
    /// the form they were stored in (and vectors already stored keep the text
    /// they were made from). A declaration that conflicts with what the shard
    /// holds is refused (``checkDeclaration(_:exampleTag:)``), so no stored value is
    /// left of a type that its attribute no longer has.
    package func declare(_ specs: [AttributeSpec], semantic: [(name: String, on: Bool)] = []) throws {
        try requireWritable("declare attributes")
        try reloadIfChanged()
        try checkDeclaration(specs)
        var updated = schema
        for spec in specs {
            do { try updated.declare(spec) } catch {
                throw StoreError(.invalidDeclaration, error.description)
            }
        }
        for (name, on) in semantic {
            do { try updated.setSemantic(name, on) } catch {
                throw StoreError(.invalidDeclaration, error.description)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            try db.transaction(.immediate) {
                let insert = try db.prepare("INSERT OR REPLACE INTO declared(name, spec) VALUES (?, ?)")
                for spec in specs {
                    let json = String(decoding: try encoder.encode(spec), as: UTF8.self)
                    try insert.run([.text(spec.name), .text(json)])
                }
                if !semantic.isEmpty {
                    let names = String(decoding: try encoder.encode(updated.semantic), as: UTF8.self)
                    try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('semantic', ?)").run([.text(names)])
                }
            }
        } catch {
            throw StoreError.wrap(error, "cannot save attribute declarations")
        }
        schema = updated
        logger.info(
            "declared attributes",
            metadata: [
                "store.attributes": "\(specs.map(\.name).joined(separator: ","))",
                "store.semantic": "\(updated.semantic.joined(separator: ","))",
            ])
    }

    // MARK: Counting

    /// Items stored, expired ones included until they are purged.
    package func count() throws -> Int {
        do {
            // While a split's purge is under way, the items it will delete count nowhere.
            if let keep = try movedSlots() {
                var n = 0
                try db.prepare("SELECT domain, count(*) FROM items GROUP BY domain").forEachRow { row in
                    if keep.keeps(domain: row.string(at: 0) ?? "") { n += Int(row.int64(at: 1)) }
                }
                return n
            }
            return Int(try db.prepare("SELECT count(*) FROM items").scalar()?.int64 ?? 0)
        } catch {
            throw StoreError.wrap(error, "cannot count items")
        }
    }

    package func stats() throws -> ShardStats {
        do {
            return try db.transaction {
                func scalar(_ sql: String, _ values: [SQLValue] = []) throws -> Int {
                    let s = try db.prepare(sql)
                    try s.bind(values)
                    return Int(try s.scalar()?.int64 ?? 0)
                }
                let now = Date().timeIntervalSinceReferenceDate
                try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_vocab USING fts5vocab(main, words, row)")
                let fm = FileManager.default
                func size(_ p: String) -> Int64 {
                    ((try? fm.attributesOfItem(atPath: p))?[.size] as? NSNumber)?.int64Value ?? 0
                }
                return ShardStats(
                    itemCount: try scalar("SELECT count(*) FROM items"),
                    expiredCount: try scalar("SELECT count(*) FROM items WHERE expires <= ?", [.real(now)]),
                    valueCount: try scalar("SELECT count(*) FROM attrs"),
                    attributeNameCount: try scalar("SELECT count(*) FROM names"),
                    wordCount: try scalar("SELECT count(*) FROM temp.words_vocab"),
                    declaredAttributeCount: try scalar("SELECT count(*) FROM declared"),
                    fileBytes: size(path), walBytes: size(path + "-wal"))
            }
        } catch {
            throw StoreError.wrap(error, "cannot read shard statistics")
        }
    }
}
