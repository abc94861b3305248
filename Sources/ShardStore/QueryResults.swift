import Foundation
import Items
import QueryPlan
import SQLite

/// A query's results read from the shard: each hit's stored item (whole or
/// its fetched attributes) and the values its sort and ranking need.
extension ShardStore {
    func fetchResult(_ id: Int64, attributes: FetchList?) throws -> StoredResult? {
        let s = try db.prepare("SELECT json FROM items WHERE id = ?")
        try s.bind(id, at: 0)
        defer { try? s.reset() }
        guard try s.step() else { return nil }
        return try storedResult(s, column: 0, attributes: attributes)
    }

    /// ``fetchResult(_:attributes:)`` with the item's unique identifier, in
    /// one lookup: from `rows` when it holds the item (see ``ItemRows``).
    func fetchResultAndUID(_ id: Int64, attributes: FetchList?, rows: ItemRows? = nil) throws -> (String, StoredResult)? {
        if let held = try rows?.withRow(
            id,
            { uidBytes, json, layout -> (String, StoredResult)? in
                let uid = String(decoding: uidBytes, as: UTF8.self)
                return try storedResult(json: json, attributes: attributes, uid: uid, layout: layout).map { (uid, $0) }
            })
        {
            searchCache.rowsServed += 1
            return held
        }
        let s = try db.prepare("SELECT uid, json FROM items WHERE id = ?")
        try s.bind(id, at: 0)
        defer { try? s.reset() }
        guard try s.step(), let uid = s.string(at: 0), let stored = try storedResult(s, column: 1, attributes: attributes, uid: uid) else {
            return nil
        }
        return (uid, stored)
    }

    /// The result in the `items.json` column of a stepped row (see
    /// ``storedResult(json:attributes:uid:layout:)``).
    func storedResult(_ s: Statement, column: Int, attributes: FetchList?, uid: String? = nil) throws -> StoredResult? {
        try s.withUTF8(at: column) { try storedResult(json: $0, attributes: attributes, uid: uid) } ?? nil
    }

    /// The result an item's stored JSON gives, with only `attributes` when
    /// given. `uid`: the row's identifier, when read already (see
    /// ``StrictJSONReader/parseItem(_:keepingAttributes:uid:layout:)``).
    /// `layout`: the JSON's ``AttributesLayout``, when known.
    func storedResult(
        json: UnsafeBufferPointer<UInt8>, attributes: FetchList?, uid: String? = nil,
        layout: AttributesLayout? = nil
    ) throws -> StoredResult? {
        if rawResults {
            let bytes =
                attributes.map { keep in
                    layout.flatMap { StrictJSONReader.projectItem(json, keepingAttributes: keep, layout: $0) }
                        ?? StrictJSONReader.projectItem(json, keepingAttributes: keep)
                } ?? Array(json)
            if let bytes { return StoredResult(rawItem: bytes) }
            rawResults = false
            defer { rawResults = true }
            return try storedResult(json: json, attributes: attributes).map { StoredResult(rawItem: JSONWriter.bytes($0.item)) }
        }
        if let attributes, let item = StrictJSONReader.parseItem(json, keepingAttributes: attributes, uid: uid, layout: layout) {
            return StoredResult(item: item)
        }
        var parsed = StrictJSONReader.parse(json)
        if parsed == nil { parsed = try JSONValue.parse(String(decoding: json, as: UTF8.self)) }
        guard var item = parsed else { return nil }
        if let attributes, case .object(var o) = item, case .object(let attrs)? = o["attributes"] {
            o["attributes"] = .object(attrs.filter { attributes.names.contains($0.key) })
            item = .object(o)
        }
        return StoredResult(item: item)
    }

    /// Each item's sort value for one attribute: its first value.
    func attributeSortValues(ids: [Int64], name: Int64?, _ context: QueryContext) throws -> [Int64: SortValue] {
        guard let name else { return [:] }
        var out: [Int64: SortValue] = [:]
        func value(_ s: Statement, _ base: Int) -> SortValue {
            guard let kind = ValueKind(rawValue: s.int64(at: base)) else { return .missing }
            if kind.isNumeric { return .number(s.double(at: base + 2)) }
            if kind.isText, let text = s.string(at: base + 1) { return .text(key: s.string(at: base + 3) ?? Fold.key(text), raw: text) }
            return .missing
        }
        if ids.count > 2000 {
            // Numbers straight from the covering (name, num) index; text rows
            // need the row itself for the exact text that breaks ties.
            let wanted = Set(ids)
            let numbers = try db.prepare(
                "SELECT item, num FROM attrs WHERE name = ? AND num IS NOT NULL AND pos = 0"
                    + (try holdsLocations(name) ? " AND kind != 4" : ""))
            try numbers.bind(name, at: 0)
            while try numbers.step() {
                try context.checkCancelled()
                let id = numbers.int64(at: 0)
                if wanted.contains(id) { out[id] = .number(numbers.double(at: 1)) }
            }
            let texts = try db.prepare("SELECT item, coalesce(text, key), key FROM attrs WHERE name = ? AND key IS NOT NULL AND pos = 0")
            try texts.bind(name, at: 0)
            while try texts.step() {
                try context.checkCancelled()
                let id = texts.int64(at: 0)
                if wanted.contains(id), let text = texts.string(at: 1) {
                    out[id] = .text(key: texts.string(at: 2) ?? Fold.key(text), raw: text)
                }
            }
        } else {
            let s = try db.prepare("SELECT kind, coalesce(text, key), num, key FROM attrs WHERE item = ? AND name = ? AND pos = 0")
            for id in ids {
                try context.checkCancelled()
                try s.bind(id, at: 0)
                try s.bind(name, at: 1)
                if try s.step() { out[id] = value(s, 0) }
                try s.reset()
            }
        }
        return out
    }

    /// Each item's unique identifier as a sort value.
    func identifierSortValues(ids: [Int64], _ context: QueryContext) throws -> [Int64: SortValue] {
        var out: [Int64: SortValue] = [:]
        out.reserveCapacity(ids.count)
        if ids.count > 2000 {
            // One pass over the table beats thousands of lookups.
            let wanted = Set(ids)
            let all = try db.prepare("SELECT id, uid FROM items")
            while try all.step() {
                try context.checkCancelled()
                let id = all.int64(at: 0)
                if wanted.contains(id), let uid = all.string(at: 1) { out[id] = .text(key: Fold.key(uid), raw: uid) }
            }
            return out
        }
        let s = try db.prepare("SELECT uid FROM items WHERE id = ?")
        for id in ids {
            try context.checkCancelled()
            try s.bind(id, at: 0)
            if try s.step(), let uid = s.string(at: 0) { out[id] = .text(key: Fold.key(uid), raw: uid) }
            try s.reset()
        }
        return out
    }

    /// Entity priority nudges relevance: a hundredth of it is added to the score.
    func addPriorities(to context: QueryContext, ids: [Int64]) throws {
        guard context.scores != nil else { return }
        let s = try db.prepare("SELECT id, priority FROM items WHERE priority != 0")
        try s.forEachRow { row in
            context.scores![row.int64(at: 0), default: 0] += row.double(at: 1) / 100
        }
    }
}
