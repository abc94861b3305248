import Foundation
import QueryPlan

/// Caches that parameter search keeps per connection, valid for one version
/// of the shard's data.
final class SearchCache {
    var vocabulary: Vocabulary?
    var vocabularyBuilt = ContinuousClock.now
    var vocabularyVersion: Int64 = -2
    /// The data the facet columns are of, and its removal-log mark (nil:
    /// none to patch them from; see ``ShardStore/facetColumn(_:)``).
    var facetVersion = UniverseCache.Version(data: -2, changes: 0)
    var facetMark: ChangeMark?
    var facetColumns: [Int64: FacetColumn] = [:]
    /// Whether facet columns are patched with each commit's changes rather
    /// than read again (tests turn it off to compare).
    var patchesFacetColumns = true
    /// Facet columns read whole, and patched (for tests and figures).
    var facetColumnReads = 0
    var facetColumnPatches = 0
    /// Scans of the whole `attrs` table a search's facet columns took (for tests).
    var facetTableScans = 0
    /// Misspelt forms found per (word, typos) in the current vocabulary: a
    /// person typing repeats the words before the one being typed.
    var typoForms: [String: [(term: Int, typos: Int)]] = [:]
    /// The vocabulary ``typoForms`` indexes.
    weak var typoFormsVocabulary: Vocabulary?
    /// The data version at which this connection last brought the shard's
    /// ``VectorIndex`` up to date.
    var vectorsVersion: Int64 = -2
    /// Posting lists of the terms suggestions have counted (see ``TermPostings``).
    let postings = TermPostings()
    /// Whether searches take their word lookups from the process's
    /// ``PostingIndex`` when it is current (tests turn it off to compare).
    var searchesUsePostingIndex = true
    /// Searches that found the shared index current and used it (for tests).
    var postingSearches = 0
    /// Whether ranking takes proximity from the index's ``ForwardIndex``
    /// when it is current (tests turn it off to compare with the text scan).
    var searchesUseForwardIndex = true
    /// Searches that took proximity from the forward index (for tests).
    var forwardSearches = 0
    /// Whether searches take their hits' rows from the current index's
    /// ``ItemRows`` (tests turn it off to compare with SQLite's).
    var searchesUseItemRows = true
    /// Hits whose rows came from an ``ItemRows`` (for tests).
    var rowsServed = 0
    /// Whether a read-only connection takes its vocabulary from the
    /// process's ``SharedVocabularies`` (tests turn it off to compare).
    var sharesVocabulary = SharedVocabularies.enabled
    /// Whether a read-only connection takes its ids, facet and sort columns
    /// from the process's ``SharedColumns`` (tests turn it off to compare).
    var sharesColumns = SharedColumns.enabled
    /// Columns taken from ``SharedColumns`` rather than read or patched (for tests).
    var columnsTaken = 0
    /// Each forward-index term's words, per query (see ``ForwardTokenCache``).
    let forwardTokens = ForwardTokenCache()

    static let maxTypoForms = 10_000
    /// Each query word's lookups (``SearchRun/wordPostings(_:isLast:)``),
    /// for the index they were made with (typo forms included: they come
    /// from its terms).
    var wordPostings: [String: SearchRun.WordPostings] = [:]
    weak var wordPostingsIndex: PostingIndex?
    /// Lookups taken from ``wordPostings`` (for tests).
    var wordPostingsReused = 0
    /// Words kept at most.
    static let maxWordPostings = 256
    /// The bytes the kept words' sets may take at most (one word's at most a
    /// quarter of it; a word's sets are typically tens of KB).
    static let maxWordPostingsBytes = 32 << 20
    var wordPostingsBytes = 0
    /// The connection's ``ItemOrder`` when no posting index is current, and
    /// the data it is of; read for a search ranking this many candidates.
    var itemOrder: (UniverseCache.Version, ItemOrder)?
    static let itemOrderMinCandidates = 2_000
    /// The last search's attributes (see ``SearchAttributes``).
    var attributes: SearchAttributes?
    /// Whether a window led by custom values is picked from their columns
    /// (``SearchRun/customWindow(_:matched:typos:attribute:exactAttribute:exactWords:)``;
    /// tests turn it off to compare with ranking every candidate).
    var searchesUseCustomWindow = true
    /// Searches whose window came from the columns (for tests).
    var customWindows = 0
}

/// What a search's searchable attributes are to the shard: their ids and
/// ranks, the word-index columns to look in, whether matches must be
/// confirmed on the text. Worked out from the shard's attribute names, and
/// kept per connection while they and the plan's attributes are the same:
/// iterating every name's column per search would be half of a search that
/// finds nothing.
struct SearchAttributes {
    struct Key: Equatable {
        var order: [String]
        var ids: [Int64]
        var names: Int
        var data: UniverseCache.Version
    }
    let key: Key
    let searchable: [Int64]
    let rankOf: [Int64: Int]
    let columns: [(column: Int, rank: Int)]
    let mustVerify: Bool
    let coversEveryColumn: Bool
    let rankByName: [Int]
    let noRank: Int
    /// Per rank, whether every attribute of that rank is `unordered()`: a
    /// match anywhere in it counts as one at its start.
    let unordered: [Bool]

    /// The attribute criterion of a match in an attribute of `rank`.
    func attribute(_ rank: Int, atStart: Bool) -> Int {
        SearchRank.attribute(rank, atStart: atStart || (rank < unordered.count && unordered[rank]))
    }

    /// `holdsText(id)`: whether any item holds a text value of name `id`
    /// (only text goes into the word index).
    init(_ key: Key, names: [Int64: String], holdsText: (Int64) throws -> Bool) rethrows {
        self.key = key
        let ids = key.ids
        let order = SearchableAttribute.parse(key.order.isEmpty ? SearchPlan.defaultAttributeOrder : key.order)
        let last = (order.last?.rank ?? -1) + 1
        searchable = ids
        var rankOf: [Int64: Int] = [:]
        for id in ids {
            let name = names[id] ?? ""
            rankOf[id] = order.first { $0.name == name }?.rank ?? last
        }
        var unordered = [Bool](repeating: false, count: last + 1)
        for ranked in Dictionary(grouping: order, by: \.rank) where ranked.value.allSatisfy(\.unordered) {
            unordered[ranked.key] = true
        }
        self.unordered = unordered
        var best: [Int: Int] = [:]
        for id in ids {
            let c = Layout.wordColumn(names[id] ?? "")
            best[c] = min(best[c] ?? .max, rankOf[id]!)
        }
        columns = best.map { ($0.key, $0.value) }.sorted { ($0.rank, $0.column) < ($1.rank, $1.column) }
        let searchedColumns = Set(best.keys)
        let searchableSet = Set(ids)
        // A searched column's words come from the text of every name it
        // holds: those of a name not searched must be told apart on the
        // text, unless the name holds no text (numbers and dates put no
        // word in the index), which saves reading every match's text.
        var mustVerify = false
        for (id, name) in names where !searchableSet.contains(id) && searchedColumns.contains(Layout.wordColumn(name)) {
            if try holdsText(id) {
                mustVerify = true
                break
            }
        }
        self.mustVerify = mustVerify
        coversEveryColumn = names.values.allSatisfy { searchedColumns.contains(Layout.wordColumn($0)) }
        var rankByName = [Int](repeating: -1, count: Int(max(ids.max() ?? -1, -1)) + 1)
        for (id, rank) in rankOf where id >= 0 { rankByName[Int(id)] = rank }
        self.rankByName = rankByName
        self.rankOf = rankOf
        noRank = SearchRank.attribute((rankOf.values.max() ?? 0) + 1, atStart: false)
    }
}
