import Foundation
import Items
import Logging
import QueryPlan
import SQLite

/// One attribute value as stored in `attrs`.
struct ValueRow {
    var name: Int64
    var pos: Int64
    var kind: ValueKind
    var text: String?
    var num: Double?
}

extension ShardStore {
    /// Stores items, replacing any with the same `uniqueIdentifier`, in one
    /// transaction, and returns one outcome per input, in order.
    ///
    /// Each item is decoded on its own with the shard's schema, so one bad
    /// item is rejected with its reason while the good ones of the same batch
    /// are stored. `evicting` names items to delete in the same transaction:
    /// items that moved to a domain another shard owns must vanish from here
    /// exactly when they appear there.
    ///
    /// Throws only when the transaction as a whole fails; then nothing of the
    /// batch is stored.
    ///
    /// `vectors` are the items' embeddings by unique identifier (see
    /// ``semanticTexts(_:)``), stored beside them; an item without one loses
    /// any vector it had, since its text may have changed.
    package func write(_ items: [JSONValue], evicting: [String] = [], vectors: [String: [Float]] = [:]) throws -> [WriteOutcome] {
        try requireWritable("write items")
        let decoder = ItemDecoder(schema: schema)
        var outcomes: [WriteOutcome] = []
        outcomes.reserveCapacity(items.count)
        var stored = 0, evicted = 0
        do {
            try db.transaction(.immediate) {
                // Under the write lock, so no other writer can commit between
                // the check and the write (the identifier filter must know).
                try reloadIfChanged()
                let vectorSeq = vectors.isEmpty ? 0 : try nextVectorSeq()
                for uid in evicting where try removeItem(uid: uid) { evicted += 1 }
                try storingItems {
                    for json in items {
                        let item: Item
                        do throws(ItemError) { item = try decoder.decode(json) } catch {
                            outcomes.append(.rejected(uniqueIdentifier: json["uniqueIdentifier"]?.stringValue, error))
                            continue
                        }
                        let id = try upsert(item)
                        try storeVector(vectors[item.uniqueIdentifier], item: id, seq: vectorSeq)
                        outcomes.append(.stored(uniqueIdentifier: item.uniqueIdentifier))
                        stored += 1
                    }
                }
            }
        } catch {
            dataVersion = -1  // names added inside the rolled-back transaction are gone
            logger.error("write failed; nothing of the batch was stored", metadata: ["store.batch": "\(items.count)", "error": "\(error)"])
            throw StoreError.wrap(error, "cannot write \(items.count) items")
        }
        let rejected = items.count - stored
        logger.debug("wrote items", metadata: ["store.stored": "\(stored)", "store.rejected": "\(rejected)", "store.evicted": "\(evicted)"])
        if rejected > 0, case .rejected(let uid, let error)? = outcomes.first(where: { !$0.isStored }) {
            logger.info(
                "rejected items of a batch",
                metadata: [
                    "store.rejected": "\(rejected)", "item.id": "\(uid ?? "?")", "item.error": "\(error)",
                ])
        }
        return outcomes
    }

    /// Stores already-decoded items. They are checked against the shard's
    /// schema (a declared type wins over what the producer's decoder assumed).
    package func write(items: [Item], evicting: [String] = []) throws -> [WriteOutcome] {
        try write(items.map(\.json), evicting: evicting)
    }

    /// Deletes items by unique identifier; returns how many existed.
    package func delete(ids: [String]) throws -> Int {
        try requireWritable("delete items")
        do {
            return try db.transaction(.immediate) {
                try reloadIfChanged()  // the identifier filter must know of other writers' commits
                var n = 0
                for uid in ids where try removeItem(uid: uid) { n += 1 }
                logger.debug("deleted items by identifier", metadata: ["store.deleted": "\(n)"])
                return n
            }
        } catch {
            throw StoreError.wrap(error, "cannot delete items")
        }
    }

    /// Deletes every item of the domains and of all their subdomains:
    /// `org.debian` takes `org.debian.games` but not `org.debianx`.
    package func delete(domains: [String]) throws -> Int {
        try requireWritable("delete domains")
        do {
            return try db.transaction(.immediate) {
                var ids: [Int64] = []
                for domain in domains {
                    ids += try itemIDs(inDomain: domain)
                }
                for id in Set(ids) { try removeItem(id: id) }
                logger.info("deleted domains", metadata: ["store.domains": "\(domains.joined(separator: ","))", "store.deleted": "\(ids.count)"])
                return Set(ids).count
            }
        } catch {
            throw StoreError.wrap(error, "cannot delete domains")
        }
    }

    /// Ids of the items of `domain` and its subdomains, by index range:
    /// subdomains sort between `domain + "."` and `domain + "/"`.
    func itemIDs(inDomain domain: String) throws -> [Int64] {
        let s = try db.prepare("SELECT id FROM items WHERE domain = ?1 OR (domain >= ?1 || '.' AND domain < ?1 || '/')")
        try s.bind(domain, at: 0)
        return try s.map { $0.int64(at: 0) }
    }

    /// Deletes every item; returns how many there were.
    package func deleteAll() throws -> Int {
        try requireWritable("delete all items")
        do {
            return try db.transaction(.immediate) {
                let n = Int(try db.prepare("SELECT count(*) FROM items").scalar()?.int64 ?? 0)
                try db.execute(
                    """
                    DELETE FROM attrs; DELETE FROM items; DELETE FROM vectors;
                    INSERT INTO words(words) VALUES('delete-all');
                    """)
                logger.info("deleted all items", metadata: ["store.deleted": "\(n)"])
                return n
            }
        } catch {
            throw StoreError.wrap(error, "cannot delete all items")
        }
    }

    /// Deletes items whose expiration date is at or before `now`. Queries
    /// never return them even before this runs; purging reclaims the space.
    package func purgeExpired(now: Date = Date()) throws -> Int {
        try requireWritable("purge expired items")
        do {
            return try db.transaction(.immediate) {
                let s = try db.prepare("SELECT id FROM items WHERE expires <= ?")
                try s.bind(now.timeIntervalSinceReferenceDate, at: 0)
                let ids = try s.map { $0.int64(at: 0) }
                for id in ids { try removeItem(id: id) }
                if !ids.isEmpty { logger.info("purged expired items", metadata: ["store.purged": "\(ids.count)"]) }
                return ids.count
            }
        } catch {
            throw StoreError.wrap(error, "cannot purge expired items")
        }
    }

    // MARK: Internals

    func nameID(_ name: String) throws -> Int64 {
        if let id = nameIDs[name] { return id }
        let insert = try db.prepare("INSERT INTO names(name) VALUES (?)")
        try insert.run([.text(name)])
        let id = db.lastInsertRowID
        guard id <= Layout.maxNames else {
            throw StoreError(.tooManyAttributes, "the shard holds more than \(Layout.maxNames) attribute names")
        }
        nameIDs[name] = id
        defaultTextIDs = nil
        names[id] = name
        return id
    }

    @discardableResult
    func removeItem(uid: String) throws -> Bool {
        guard try mayHold(uid: uid) else { return false }
        let find = try db.prepare("SELECT id FROM items WHERE uid = ?")
        try find.bind(uid, at: 0)
        guard let id = try find.scalar()?.int64 else { return false }
        try removeItem(id: id)
        return true
    }

    func removeItem(id: Int64) throws {
        try removeIndexes(of: id)
        try storeVector(nil, item: id, seq: 0)
        let s = try db.prepare("DELETE FROM items WHERE id = ?")
        try s.bind(id, at: 0)
        try s.run()
    }

    /// Removes an item's value rows and their FTS entries. Contentless FTS5
    /// tables can only forget a row when told its exact text, which is
    /// re-derived here from the `attrs` rows exactly as ``insertIndexes`` built it.
    func removeIndexes(of id: Int64) throws {
        let select = try db.prepare("SELECT name, pos, kind, coalesce(text, key) FROM attrs WHERE item = ? AND kind IN (0, 5) ORDER BY name, pos")
        try select.bind(id, at: 0)
        var rows: [ValueRow] = []
        try select.forEachRow { r in
            guard let kind = ValueKind(rawValue: r.int64(at: 2)) else { return }
            rows.append(ValueRow(name: r.int64(at: 0), pos: r.int64(at: 1), kind: kind, text: r.string(at: 3), num: nil))
        }
        if !rows.isEmpty {
            let (columns, _) = ftsTexts(rows)
            let deleteWords = try db.prepare(Self.deleteWordsSQL)
            try deleteWords.bind(id, at: 0)
            for (i, c) in columns.enumerated() { try deleteWords.bind(c, at: i + 1) }
            try deleteWords.run()
        }
        let delete = try db.prepare("DELETE FROM attrs WHERE item = ?")
        try delete.bind(id, at: 0)
        try delete.run()
    }

    static let insertWordsSQL = wordsSQL(delete: false)
    static let deleteWordsSQL = wordsSQL(delete: true)

    static func wordsSQL(delete: Bool) -> String {
        let columns = (0..<Layout.wordColumnCount).map { "c\($0)" }.joined(separator: ", ")
        let marks = Array(repeating: "?", count: Layout.wordColumnCount).joined(separator: ", ")
        return delete
            ? "INSERT INTO words(words, rowid, \(columns)) VALUES('delete', ?, \(marks))"
            : "INSERT INTO words(rowid, \(columns)) VALUES (?, \(marks))"
    }

    /// The FTS texts of one item: the word-index columns and the item's `wordcheck`.
    /// `rows` are the item's text rows sorted by (name, pos): the order fixes
    /// the text, which a later delete must reproduce byte for byte.
    func ftsTexts(_ rows: [ValueRow]) -> (columns: [String], wordCheck: String?) {
        var columns = Array(repeating: "", count: Layout.wordColumnCount)
        var wordCheck = WordCheck.Builder()
        for row in rows {
            let text = row.text ?? ""
            let column = Layout.wordColumn(names[row.name] ?? "")
            let indexText = Words.indexText(text)
            let indexed = Fold.isASCII(indexText) ? indexText : Fold.fold(indexText)
            if !columns[column].isEmpty { columns[column] += "\n" }
            columns[column] += indexed
            wordCheck.add(text, indexed: indexed)
        }
        return (columns, wordCheck.value)
    }

    /// Stores an item; returns its row id.
    @discardableResult
    func upsert(_ item: Item) throws -> Int64 {
        let find = try db.prepare("SELECT id FROM items WHERE uid = ?")
        try find.bind(item.uniqueIdentifier, at: 0)
        let json = JSONWriter.string(item.json)
        let expires = item.expirationDate?.timeIntervalSinceReferenceDate
        let rows = try valueRows(of: item)
        let fts = ftsTexts(rows.filter(\.kind.isText))
        // A replaced item is removed and stored under a new id, so an id
        // above a reader's watermark always means "written since" (see
        // ``nextItemID()``).
        if try mayHold(uid: item.uniqueIdentifier), let existing = try find.scalar()?.int64 { try removeItem(id: existing) }
        let id = try nextItemID()
        let statement = try db.prepare("INSERT INTO items(id, uid, domain, expires, priority, json, wordcheck) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
        try statement.bind(id, at: 0)
        try statement.bind(item.uniqueIdentifier, at: 1)
        try statement.bind(item.domainIdentifier, at: 2)
        if let expires { try statement.bind(expires, at: 3) } else { try statement.bindNull(at: 3) }
        try statement.bind(item.entity?.priority ?? 0, at: 4)
        try statement.bind(json, at: 5)
        if let wordCheck = fts.wordCheck { try statement.bind(wordCheck, at: 6) } else { try statement.bindNull(at: 6) }
        try statement.run()
        filterStored(uid: item.uniqueIdentifier)
        try insertIndexes(of: id, rows: rows, fts: fts)
        return id
    }

    /// The id of the next item stored, from the `meta` counter `items.nextid`
    /// (advanced in the writing transaction). Ids are never reused: SQLite
    /// alone would give the largest id again once its item is deleted, and a
    /// substring query answering through a vocabulary read at watermark `W`
    /// takes every item with an id above `W` as possibly holding new words
    /// (see ``TermGrams``). A shard written before the counter existed
    /// starts it past its largest id.
    ///
    /// Inside ``storingItems(_:)`` the counter is kept in memory and written
    /// once; elsewhere each id is written back at once.
    func nextItemID() throws -> Int64 {
        if let pending = pendingItemID {
            pendingItemID = pending + 1
            return pending
        }
        let stored = try db.prepare("SELECT value FROM meta WHERE key = 'items.nextid'").scalar()?.string.flatMap { Int64($0) }
        let next = try stored ?? ((db.prepare("SELECT max(id) FROM items").scalar()?.int64 ?? 0) + 1)
        try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('items.nextid', ?)").run([.text(String(next + 1))])
        return next
    }

    /// Runs `body` (inside a write transaction) with the item id counter held
    /// in memory, and writes it back to `meta` before returning, in the same
    /// transaction, rather than a `meta` row read and written per item.
    func storingItems<T>(_ body: () throws -> T) throws -> T {
        let stored = try db.prepare("SELECT value FROM meta WHERE key = 'items.nextid'").scalar()?.string.flatMap { Int64($0) }
        let start = try stored ?? ((db.prepare("SELECT max(id) FROM items").scalar()?.int64 ?? 0) + 1)
        pendingItemID = start
        defer { pendingItemID = nil }
        let result = try body()
        if let next = pendingItemID, next != start || stored == nil {
            try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('items.nextid', ?)").run([.text(String(next))])
        }
        return result
    }

    func valueRows(of item: Item) throws -> [ValueRow] {
        var rows: [ValueRow] = []
        for (name, value) in item.attributes {
            if let spec = schema.spec(for: name), !spec.searchable { continue }
            let nameID = try nameID(name)
            for (pos, element) in value.elements.enumerated() {
                var row = ValueRow(name: nameID, pos: Int64(pos), kind: .text, text: nil, num: nil)
                switch element {
                case .text(let s):
                    row.kind = s.utf8.count <= Layout.longTextBytes ? .text : .longText
                    row.text = s
                case .number(let d): row.kind = .number; row.num = d
                case .date(let d): row.kind = .date; row.num = d.timeIntervalSinceReferenceDate
                case .boolean(let b): row.kind = .boolean; row.num = b ? 1 : 0
                case .location(let l):
                    row.kind = .location
                    row.num = l.latitude
                    row.text = String(l.longitude)
                case .list: continue  // lists of lists are rejected by the decoder
                }
                rows.append(row)
            }
        }
        rows.sort { ($0.name, $0.pos) < ($1.name, $1.pos) }
        return rows
    }

    /// Value rows and the FTS rows made by ``ftsTexts(_:)`` for them.
    func insertIndexes(of id: Int64, rows: [ValueRow], fts: (columns: [String], wordCheck: String?)) throws {
        let insert = try db.prepare("INSERT INTO attrs(item, name, pos, kind, text, num, key) VALUES (?, ?, ?, ?, ?, ?, ?)")
        try insert.bind(id, at: 0)
        for row in rows {
            try insert.bind(row.name, at: 1)
            try insert.bind(row.pos, at: 2)
            try insert.bind(row.kind.rawValue, at: 3)
            if let text = row.text {
                if row.kind.isText {
                    // A text equal to its key, byte for byte (short and
                    // already folded: most names, versions, identifiers),
                    // is kept once, in `key`; readers take `coalesce(text, key)`.
                    let key = Fold.key(text)
                    if key.utf8.elementsEqual(text.utf8) { try insert.bindNull(at: 4) } else { try insert.bind(text, at: 4) }
                    try insert.bind(key, at: 6)
                } else {
                    try insert.bind(text, at: 4)
                    try insert.bindNull(at: 6)
                }
            } else {
                try insert.bindNull(at: 4)
                try insert.bindNull(at: 6)
            }
            if let num = row.num { try insert.bind(num, at: 5) } else { try insert.bindNull(at: 5) }
            try insert.run()
        }
        guard rows.contains(where: \.kind.isText) else { return }
        let words = try db.prepare(Self.insertWordsSQL)
        try words.bind(id, at: 0)
        for (i, c) in fts.columns.enumerated() { try words.bind(c, at: i + 1) }
        try words.run()
    }
}
