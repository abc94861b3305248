import Items
import SQLite

extension ShardStore {
    /// Refuses declarations that conflict with this shard's data, changing
    /// nothing: an attribute already declared with another type (or as a list
    /// where it was a single value, or the reverse), or an undeclared
    /// attribute whose stored values are of another type than the one
    /// declared.
    ///
    /// A declaration may not change a stored attribute's type: every stored
    /// value would have to be converted, and a date stored as text or a
    /// number stored as a date has no conversion every user would expect. So
    /// the refusal names the values that conflict (how many, of which type,
    /// and one item that holds one), and the user deletes or rewrites those
    /// items first. Declaring again what is already declared is accepted, as
    /// are changes of the flags (`searchable`, `unique`, …), which apply to
    /// items written from then on. The item named is one whose stored
    /// identifier starts with `exampleTag` (an app's `@APP/`, shown without
    /// it), none when no such item conflicts: declarations are shared by every
    /// app, and one app must not learn another's identifiers.
    package func checkDeclaration(_ specs: [AttributeSpec], exampleTag: String = "") throws {
        try reloadIfChanged()
        for spec in specs {
            if let declared = schema.custom[spec.name] {
                if declared.type != spec.type {
                    throw StoreError(
                        .invalidDeclaration,
                        "'\(spec.name)' is declared \(declared.type.rawValue); declaring it \(spec.type.rawValue) conflicts with that declaration and with the values stored under it"
                    )
                }
                if declared.multiValued != spec.multiValued {
                    throw StoreError(
                        .invalidDeclaration,
                        "'\(spec.name)' is declared \(declared.multiValued ? "multi-valued" : "single-valued"); declaring it \(spec.multiValued ? "multi-valued" : "single-valued") conflicts with that declaration"
                    )
                }
                continue
            }
            guard let nameID = nameIDs[spec.name] else { continue }
            let allowed = ValueKind.allCases.filter { $0.valueType == spec.type }.map { String($0.rawValue) }.joined(separator: ", ")
            var conflict: (kind: Int64, count: Int64, uid: String?)?
            do {
                let s = try db.prepare(
                    """
                    SELECT kind, count(*) FROM attrs WHERE name = ? AND kind NOT IN (\(allowed))
                    GROUP BY kind ORDER BY count(*) DESC LIMIT 1
                    """)
                try s.bind(nameID, at: 0)
                var found: (kind: Int64, count: Int64)?
                try s.forEachRow { row in found = (row.int64(at: 0), row.int64(at: 1)) }
                if let found {
                    let u = try db.prepare(
                        """
                        SELECT i.uid FROM attrs a JOIN items i ON i.id = a.item
                        WHERE a.name = ? AND a.kind = ? AND substr(i.uid, 1, ?) = ? LIMIT 1
                        """)
                    try u.bind([.integer(nameID), .integer(found.kind), .integer(Int64(exampleTag.unicodeScalars.count)), .text(exampleTag)])
                    let uid = try u.scalar()?.string.map { String($0.unicodeScalars.dropFirst(exampleTag.unicodeScalars.count)) }
                    conflict = (found.kind, found.count, uid)
                }
            } catch {
                throw StoreError.wrap(error, "cannot check the values stored under '\(spec.name)'")
            }
            if let conflict {
                let kind = ValueKind(rawValue: conflict.kind)?.valueType.rawValue ?? "other"
                let example = conflict.uid.map { " (item '\($0)' among them)" } ?? ""
                throw StoreError(
                    .invalidDeclaration,
                    "'\(spec.name)' holds \(conflict.count) \(kind) value\(conflict.count == 1 ? "" : "s")\(example); declaring it \(spec.type.rawValue) conflicts with them: delete or rewrite those items first"
                )
            }
        }
    }
}
