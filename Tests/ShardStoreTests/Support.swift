import Foundation
import Items
import Logging
import QueryPlan
import ShardStore
import Testing

let testLogger: Logger = {
    var logger = Logger(label: "limelight.store.tests", factory: { _ in SwiftLogNoOpLogHandler() })
    logger.logLevel = .critical
    return logger
}()

func openStore(_ dir: TempDir, _ name: String = "shard.db", mode: ShardStore.Mode = .readWrite) throws -> ShardStore {
    try ShardStore(path: dir.path(name), mode: mode, logger: testLogger)
}

/// Parses JSON written in a test.
func json(_ text: String) -> JSONValue {
    try! JSONValue.parse(text)
}

/// An item as producers send it.
func item(_ id: String, domain: String = "org.example", expires: String? = nil, _ attributes: String = "{}") -> JSONValue {
    var text = #"{"uniqueIdentifier": "\#(id)", "domainIdentifier": "\#(domain)", "attributes": \#(attributes)"#
    if let expires { text += #", "expirationDate": "\#(expires)""# }
    return json(text + "}")
}

extension ShardStore {
    /// Writes and insists that every item was stored.
    func put(_ items: [JSONValue]) throws {
        let outcomes = try write(items)
        for o in outcomes where !o.isStored { Issue.record("rejected: \(o)") }
    }

    /// The identifiers a query returns, in order.
    func ids(_ predicate: QueryPlan.Predicate, sort: [SortKey] = [], limit: Int? = nil) throws -> [String] {
        var out: [String] = []
        try run(Query(predicate: predicate, sort: sort, limit: limit)) { batch in
            out += batch.map { $0.item["uniqueIdentifier"]?.stringValue ?? "?" }
        }
        return out
    }

    func idSet(_ predicate: QueryPlan.Predicate) throws -> Set<String> {
        Set(try ids(predicate))
    }
}

func text(_ attribute: String, _ pattern: String, _ options: String = "") -> QueryPlan.Predicate {
    .text(
        TextTest(
            attribute: attribute == "*" ? .allText : .named(attribute), pattern: TextPattern(wire: pattern),
            options: TextOptions(letters: options)!))
}

func range(_ attribute: String, _ lower: Double?, _ upper: Double?, inclusive: Bool = true) -> QueryPlan.Predicate {
    .range(
        RangeTest(
            attribute: attribute, lower: lower.map { Bound($0, inclusive: inclusive) },
            upper: upper.map { Bound($0, inclusive: inclusive) }))
}
