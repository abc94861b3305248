import Foundation
import Items
import QueryPlan
import SQLite

/// The ranking criteria a search reads apart from its words: whole-value
/// exactness for one word, the custom ranking's values, and the distance to
/// the plan's point.
extension SearchRun {
    /// Per attribute rank, the items whose attribute of that rank is, folded,
    /// the query's one word (`vim` for "vim"): the exactness criterion for
    /// one-word queries, answered by the (name, key) index alone. (With
    /// several words, ``textMatch(_:)`` compares a value's words with the
    /// query's, so "firefox-esr" is exact for "firefox esr"; with one word a
    /// value must be the word itself, "vim." is not.)
    /// An alternative of the word that counts as exact (``WordAlternative``)
    /// is such a value too.
    func wholeValueMatches() throws -> [Int: [Int64]] {
        var keys = [plan.words.joined(separator: " ")]
        if plan.words.count == 1 { keys += plan.alternatives(of: 0).filter(\.exact).map(\.word) }
        let s = try store.db.prepare("SELECT item FROM attrs WHERE name = ? AND key = ?")
        var out: [Int: [Int64]] = [:]
        for key in keys where key.count <= Fold.keyCharacters {
            for name in searchable {
                try s.bind(name, at: 0)
                try s.bind(key, at: 1)
                while try s.step() { out[rankOf[name]!, default: []].append(s.int64(at: 0)) }
                try s.reset()
            }
        }
        return out.mapValues(IDs.sortedUnique)
    }

    /// Sets each rank's custom values, in the plan's order (``SearchPlan/rankValues``) (entity priority
    /// 0 and null when an item has none). The ranks that have none of them
    /// share one array: a common word or an empty query ranks tens of
    /// thousands of matches, and an array built per item was a tenth of it.
    func addCustomRanking(ids: [Int64], to ranks: inout [SearchRank]) throws {
        guard !plan.rankValues.isEmpty else { return }
        let (held, defaults) = try customValues(ids: ids)
        let anyHeld = held.contains { !$0.isEmpty }
        for (i, id) in ids.enumerated() {
            var custom = defaults
            if anyHeld {
                for (k, values) in held.enumerated() { if let v = values[id] { custom[k] = v } }
            }
            if ranks[i].custom.isEmpty { ranks[i].custom = custom } else { ranks[i].custom += custom }
        }
    }

    /// Per custom ranking key, in the plan's order, the values the items of
    /// `ids` hold (only those that hold one), and the value of an item that
    /// holds none (entity priority 0, else null).
    func customValues(ids: [Int64]) throws -> (held: [[Int64: JSONValue]], defaults: [JSONValue]) {
        var held: [[Int64: JSONValue]] = []
        var defaults: [JSONValue] = []
        for key in plan.rankValues {
            var values: [Int64: JSONValue] = [:]
            if key.attribute == CustomRank.entityPriority {
                for (id, priority) in try store.entityPriorities() { values[id] = .number(priority) }
                defaults.append(.number(0))
            } else {
                if let name = store.nameIDs[key.attribute] {
                    // Numbers from the attribute's column (held while the data
                    // is the same, patched at each commit); the text values,
                    // which the column only marks, from their rows.
                    let column = try store.sortColumn(name)
                    var texts: [Int64] = []
                    for id in ids {
                        switch column.kind(id) {
                        case .number: values[id] = .number(column.numbers[Int(id)])
                        case .text: texts.append(id)
                        case .missing: break
                        }
                    }
                    if !texts.isEmpty {
                        for (id, value) in try store.attributeSortValues(ids: texts, name: name, context) { values[id] = value.json }
                    }
                }
                defaults.append(SortValue.missing.json)
            }
            held.append(values)
        }
        return (held, defaults)
    }

    /// The ids within the plan's radius (the filter's box only narrowed them down).
    func withinRadius(_ ids: [Int64]) throws -> [Int64] {
        guard let around = plan.around, let radius = plan.aroundRadius else { return ids }
        let lat = try store.attributeSortValues(ids: ids, name: store.nameIDs["latitude"], context)
        let lon = try store.attributeSortValues(ids: ids, name: store.nameIDs["longitude"], context)
        return ids.filter { id in
            guard case .number(let a)? = lat[id], case .number(let b)? = lon[id] else { return false }
            return around.distance(from: Location(latitude: a, longitude: b)) <= radius
        }
    }

    func addDistances(ids: [Int64], to ranks: inout [SearchRank]) throws {
        guard let around = plan.around else { return }
        let lat = try store.attributeSortValues(ids: ids, name: store.nameIDs["latitude"], context)
        let lon = try store.attributeSortValues(ids: ids, name: store.nameIDs["longitude"], context)
        for (i, id) in ids.enumerated() {
            if case .number(let a)? = lat[id], case .number(let b)? = lon[id] {
                ranks[i].geoDistance = around.distance(from: Location(latitude: a, longitude: b)).rounded()
            }
        }
    }
}
