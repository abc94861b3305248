import Foundation
import Items
import Logging
import PredicateQuery
import QueryPlan
import ShardStore
import Testing

/// A fresh folder per test, removed afterwards.
final class TempDir {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("limelight-predicate-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

let quietLogger: Logger = {
    var logger = Logger(label: "limelight.predicate.tests", factory: { _ in SwiftLogNoOpLogHandler() })
    logger.logLevel = .critical
    return logger
}()

func json(_ text: String) -> JSONValue { try! JSONValue.parse(text) }

/// 2026-11-22T15:30:00Z: the clock of every `now` test.
let fixedNow = ISODate.parse("2026-11-22T15:30:00Z")!

/// A shard holding `records`, queried through the parser as a client would.
final class RecordStore {
    let dir = TempDir()
    let store: ShardStore

    init(_ records: [String]) throws {
        store = try ShardStore(path: dir.path("shard.db"), logger: quietLogger)
        let outcomes = try store.write(records.map(json))
        for o in outcomes where !o.isStored { Issue.record("rejected: \(o)") }
    }

    /// The unique identifiers matching `CKQuery(recordType:predicate:)`.
    func ids(
        _ recordType: String, _ format: String, _ arguments: [JSONValue] = [],
        dialect: PredicateQueryParser.Dialect = .cloudkit, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Set<String> {
        let parser = PredicateQueryParser(dialect: dialect, now: fixedNow)
        do {
            let plan = try parser.parse(recordType: recordType, format, arguments: arguments)
            var out = Set<String>()
            try store.run(Query(predicate: plan)) { batch in
                for r in batch { out.insert(r.item["uniqueIdentifier"]?.stringValue ?? "?") }
            }
            return out
        } catch {
            Issue.record("\(format): \(error)", sourceLocation: sourceLocation)
            return []
        }
    }
}

/// The error a predicate raises, or nil (recorded as a failure) when it parses.
func parseError(
    _ format: String, _ arguments: [JSONValue] = [], dialect: PredicateQueryParser.Dialect = .cloudkit,
    sourceLocation: SourceLocation = #_sourceLocation
) -> PredicateQueryError? {
    do {
        let p = try PredicateQueryParser(dialect: dialect, now: fixedNow).parse(format, arguments: arguments)
        Issue.record("'\(format)' parsed as \(p), expected an error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
