import Items

/// The layout of a shard file.
///
/// ```
/// meta(key, value)                      format version, counters (`items.nextid`, `vectors.seq`), `items.epoch`
/// declared(name, spec)                  custom attribute declarations (JSON AttributeSpec)
/// names(id, name)                       attribute name → small integer id
/// items(id, uid UNIQUE, domain, expires, priority, json, wordcheck)
///     items_domain(domain)              domain deletes and filters, by prefix range
///     items_expires(expires)            purge, and hiding expired items
///     items_priority(priority)          the few items whose entity priority nudges relevance
/// attrs(item, name, pos, kind, text, num, key)  PRIMARY KEY (item, name, pos), WITHOUT ROWID
///     attrs_key(name, key)              exact and prefix text tests, `exists`, sorting by text
///     attrs_num(name, num)              ranges on numbers, dates and booleans
///     attrs_geo(name, num) WHERE kind = 4  locations by latitude (geo tests)
/// words  FTS5 unicode61 remove_diacritics 2, prefix 3, automerge 8, contentless, a column per common attribute
/// vectors(item PRIMARY KEY, seq, vector)  one embedding per item (384 little-endian float32)
///     vectors_seq(seq)                  what changed since a reader last looked
/// removed(seq PRIMARY KEY, item)        the removal log: the ids of the last items deleted, by a trigger on `items`
/// ```
///
/// - `vectors` holds the sentence embedding of an item's semantic text (see
///   `SemanticText`), written in the same transaction as the item and
///   deleted with it. `seq` is the `meta` counter `vectors.seq` at the write
///   that stored it, so a reader holding the vectors in memory loads only
///   rows with a larger `seq` after another connection's commit (see
///   ``VectorIndex``). A new table, created on open, so no new format number:
///   an older shard simply has no vectors.
///
/// - `items.json` is the item as fetched (canonical JSON, sorted keys), so a
///   result costs one row read and no reassembly.
/// - `items.wordcheck` says when a word-index match of a single word needs no
///   `TextMatcher` check (see ``WordCheck``): NULL for an item whose text is
///   all ASCII without camel-case tokens, the folded camel-case tokens when
///   there are some, `*` when some text is not ASCII. Older shards get the
///   column with `*` (always check), so they answer the same.
/// - `attrs` holds one row per value (a list's elements are `pos` 0, 1, …) of
///   every *searchable* attribute. `kind` is ``ValueKind``. `text` is a text
///   value in full, or NULL when it equals its `key` byte for byte (a short
///   value already folded: most names, versions and identifiers; readers
///   take `coalesce(text, key)`, so each such value is stored once); `num` is a number, a date as seconds since the reference date,
///   or a boolean as 0/1, or a location's latitude (its longitude is in
///   `text`, as Swift's round-tripping decimal form, and its `key` is NULL, so
///   no text test sees it; ranges and sorts leave kind 4 out). Older shards
///   may have kind-4 rows with both NULL; their coordinates are read from `items.json`, so they answer geo tests as well.
///   `key` is the folded first 64 characters of a text
///   value (see ``Fold``), which serves exact tests (`title == "0ad"c`) and
///   prefix patterns (`title == "lib*"`) from one index whatever the `c`/`d`
///   options. Clustering by item makes loading one item's values — what the
///   final `TextMatcher` check needs — one range read.
/// - `words` has one row per item (rowid = item id) and a column per common
///   text attribute (``Layout/wordColumns``) plus one for all others; each
///   holds `Words.indexText` of the attribute's elements (tokens plus
///   camel-case parts), folded when not ASCII. One row per item rather than
///   per (item, attribute) halves the cost of word indexing; a named attribute is still found through its column, and
///   the shared last column only over-approximates, which the final
///   `TextMatcher` check absorbs. Positions are kept (`detail=full`) although
///   no phrase queries run: FTS5's BM25 needs term frequencies.
/// - Substring patterns (`title == "*acti*"c`) have no table of their own:
///   a run of ASCII letters and digits in a value lies inside one of its
///   word-index tokens, so the word index, looked up with the vocabulary's
///   terms that contain the pattern's runs, finds every candidate, short
///   and long values alike (see ``TermGrams``, the in-memory trigrams of
///   the vocabulary a query connection builds). Format 1 kept an FTS5
///   `trigram` table (`grams`) of the short values and an index
///   `attrs_long(name) WHERE kind = 5` for the long ones; format 2 drops
///   both, which makes indexing cheaper and moves the cost to reading: a
///   connection reads the vocabulary for its first substring query. After a
///   commit it keeps that vocabulary and checks the items written since as
///   well: `items.id` comes from the `meta` counter `items.nextid` (never
///   reused; a replaced item gets a new id), so those are the ids above the
///   largest one when it read the vocabulary, and it reads the vocabulary
///   again only past ``ShardStore/maxSubstringDelta`` of them, or when the
///   content was replaced from a copy (a new `items.epoch`).
/// - The word index keeps a prefix index for 3-character prefixes only
///   (`"lib*"cdw`); longer prefixes are served by FTS5's term range scan,
///   and 2-character ones (`"li*"`) too, more slowly (they match most of
///   the shard anyway). Shards made with 2-character prefixes as well need
///   no new format: FTS5 records its own options and answers are identical
///   either way. Dropping them cut indexing CPU by about 10 %.
/// - The word index merges segments 8 at a time (`automerge`, default 4),
///   set when a shard is created: half the rewriting of index segments while
///   indexing, for a few more segments per query to merge. An FTS5
///   `optimize` (one segment) would suit idle time; nothing runs it yet.
/// - The word index is contentless: the text already lives in `attrs`, and
///   removing an item re-derives the exact indexed text from its `attrs` rows
///   to issue FTS5 `delete` commands. That derivation is versioned by
///   ``Layout/format``: a change to it needs a new format number.
///
/// Indexing time goes mostly to the value rows (the `(name, key)` index
/// alone, random B-tree inserts, is about a quarter of it) and to the word
/// index. Raw FTS5 costs about what the word index alone costs here, so this
/// layout cannot reach its rate in one thread however each part is tuned:
/// that needs an index that appends rather than inserts at random, and parts
/// of a write running on more than one core. `detail=column` for `words`
/// would be cheaper, but FTS5's `bm25()` then scores every match 0.
enum Layout {
    static let format = 3
    /// Formats this build opens, upgrading them to ``format`` when it opens
    /// one for writing (see ``migrations``).
    static let readableFormats: Set<String> = ["1", "2", "3"]
    /// What turns a shard of an older format into the current one, run in the
    /// transaction that opens it for writing. Format 1 → 2 drops the trigram
    /// table and the long-text index, which substring patterns no longer use
    /// (a reader answers from the word index either way, so an old file not
    /// yet upgraded answers the same). Format 2 → 3 changes nothing stored:
    /// format 3 leaves `attrs.text` NULL where it equals `attrs.key`, and
    /// every reader takes `coalesce(text, key)`, which is `text` in the rows
    /// an older format wrote; the new number keeps an older build, which
    /// would read those NULLs as missing text, from writing to the file.
    static let migrations: [String: [String]] = [
        "1": ["DROP TABLE IF EXISTS grams", "DROP INDEX IF EXISTS attrs_long"],
        "2": [],
    ]
    /// Text values longer than this many UTF-8 bytes are kind 5 (long text).
    static let longTextBytes = 256
    /// Attributes with a word-index column of their own; the rest share the last.
    static let wordColumns = [
        "title", "displayName", "contentDescription", "keywords", "authorNames",
        "alternateNames", "textContent", "contentType",
    ]
    static var wordColumnCount: Int { wordColumns.count + 1 }
    static let wordColumnIndex: [String: Int] = Dictionary(uniqueKeysWithValues: wordColumns.enumerated().map { ($1, $0) })
    static func wordColumn(_ name: String) -> Int { wordColumnIndex[name] ?? wordColumns.count }
    /// BM25 weights per column: a word in a title says more than one in prose.
    static let wordWeights: [Double] = [4, 2, 1, 2, 1, 1, 1, 1, 1]
    /// Upper bound on distinct attribute names (they are small integers in `attrs`).
    static let maxNames: Int64 = 65_535

    static let statements: [String] = [
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS declared(name TEXT PRIMARY KEY, spec TEXT NOT NULL) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
        """
        CREATE TABLE IF NOT EXISTS items(
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            domain TEXT NOT NULL,
            expires REAL,
            priority REAL NOT NULL DEFAULT 0,
            json TEXT NOT NULL,
            wordcheck TEXT DEFAULT '*')
        """,
        "CREATE INDEX IF NOT EXISTS items_domain ON items(domain)",
        "CREATE INDEX IF NOT EXISTS items_expires ON items(expires) WHERE expires IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS items_priority ON items(priority) WHERE priority != 0",
        """
        CREATE TABLE IF NOT EXISTS attrs(
            item INTEGER NOT NULL,
            name INTEGER NOT NULL,
            pos INTEGER NOT NULL,
            kind INTEGER NOT NULL,
            text TEXT,
            num REAL,
            key TEXT,
            PRIMARY KEY (item, name, pos)) WITHOUT ROWID
        """,
        "CREATE INDEX IF NOT EXISTS attrs_key ON attrs(name, key)",
        "CREATE INDEX IF NOT EXISTS attrs_num ON attrs(name, num) WHERE num IS NOT NULL",
        // Location rows (kind 4) by latitude: the geo prefilter, and the quick
        // "does this attribute hold locations" probe that keeps their
        // latitudes out of numeric ranges and sorts.
        "CREATE INDEX IF NOT EXISTS attrs_geo ON attrs(name, num) WHERE kind = 4",
        """
        CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(\((0..<wordColumnCount).map { "c\($0)" }.joined(separator: ", ")), content='',
            tokenize="unicode61 remove_diacritics 2 categories 'L* N* Mn Mc'", prefix='3')
        """,
        "CREATE TABLE IF NOT EXISTS vectors(item INTEGER PRIMARY KEY, seq INTEGER NOT NULL, vector BLOB NOT NULL)",
        "CREATE INDEX IF NOT EXISTS vectors_seq ON vectors(seq)",
        // The removal log (see ``RemovalLog``): every item deleted, whatever
        // the statement, in the order of its deletes.
        "CREATE TABLE IF NOT EXISTS removed(seq INTEGER PRIMARY KEY, item INTEGER NOT NULL)",
        "CREATE TRIGGER IF NOT EXISTS items_removed AFTER DELETE ON items BEGIN INSERT INTO removed(item) VALUES (old.id); END",
        """
        CREATE TRIGGER IF NOT EXISTS removed_pruned AFTER INSERT ON removed WHEN new.seq % \(RemovalLog.kept) = 0 BEGIN
            DELETE FROM removed WHERE seq <= new.seq - \(RemovalLog.kept);
        END
        """,
    ]

    /// Columns added since format 1, with the statement that adds each to an
    /// older shard when it is opened for writing.
    static let addedColumns: [(table: String, column: String, sql: String)] = [
        ("items", "wordcheck", "ALTER TABLE items ADD COLUMN wordcheck TEXT DEFAULT '*'")
    ]

    /// Settings made once, when a shard is created (they live in the FTS5
    /// config tables, so running them at every open would write each time).
    static let creationStatements: [String] = [
        "INSERT INTO words(words, rank) VALUES('automerge', 8)"
    ]
}

/// The `attrs.kind` column.
enum ValueKind: Int64, CaseIterable {
    /// Text of at most ``Layout/longTextBytes``.
    case text = 0
    case number = 1
    case date = 2
    case boolean = 3
    case location = 4
    /// Text longer than ``Layout/longTextBytes``. Format 1 kept these out of
    /// its trigram index; readers now treat both text kinds alike.
    case longText = 5

    var isText: Bool { self == .text || self == .longText }
    var isNumeric: Bool { self == .number || self == .date || self == .boolean }

    /// The attribute type whose values are stored as this kind.
    var valueType: ValueType {
        switch self {
        case .text, .longText: .text
        case .number: .number
        case .date: .date
        case .boolean: .boolean
        case .location: .location
        }
    }
}
