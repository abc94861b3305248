import ArgumentParser
import Foundation
import Items
import Logging

/// How server processes write their logs.
enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case text, json
}

/// One JSON object per line on standard error, for log shippers (journald's
/// JSON output, Loki, Elasticsearch) that would otherwise parse text.
///
/// `{"time": "<ISO-8601 time>", "level": "info", "logger":
/// "limelight.coordinator", "message": "worker registered", "worker":
/// "indexer-0", "worker.role": "indexer", ...}`, with `"error"` when the
/// call passed one: metadata keys sit beside the
/// fixed ones under their dotted names, so a query for `worker` works on every
/// line that has one. A metadata key equal to a fixed key is written as
/// `metadata.KEY` instead of replacing it.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) { self.label = label }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: JSONValue] = [
            "time": .string(ISODate.format(Date())), "level": .string(event.level.rawValue),
            "logger": .string(label), "message": .string(event.message.description),
        ]
        if let error = event.error { fields["error"] = .string(String(describing: error)) }
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
        for (key, value) in all {
            fields[fields[key] == nil ? key : "metadata." + key] = Self.json(value)
        }
        var line = JSONValue.object(fields).serialized()
        line.append(0x0A)
        FileHandle.standardError.write(line)
    }

    static func json(_ v: Logger.Metadata.Value) -> JSONValue {
        switch v {
        case .string(let s): return .string(s)
        case .stringConvertible(let c): return .string(c.description)
        case .array(let xs): return .array(xs.map(json))
        case .dictionary(let d): return .object(d.mapValues(json))
        }
    }
}
