import Foundation
import Items

/// The JSON form of query plans, as the coordinator sends them to query
/// workers (`proto-schemas/plan.schema.json` describes it).
///
/// Written by hand rather than synthesised, so the wire shape is stable and
/// readable by clients in other languages: `{"op": "text", "attribute":
/// "title", "pattern": "Win*", "options": "cw"}`. `"*"` as an attribute means
/// every text attribute searchable by default.
public struct PlanDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { "\(path): \(message)" }
}

extension AttributeSelector {
    public var wire: String {
        switch self {
        case .allText: "*"
        case .named(let n): n
        }
    }

    public init(wire: String) {
        self = (wire == "*" || wire == "**") ? .allText : .named(wire)
    }
}

extension Predicate {
    public var json: JSONValue {
        switch self {
        case .all: return .object(["op": .string("all")])
        case .none: return .object(["op": .string("none")])
        case .and(let ps): return .object(["op": .string("and"), "of": .array(ps.map(\.json))])
        case .or(let ps): return .object(["op": .string("or"), "of": .array(ps.map(\.json))])
        case .not(let p): return .object(["op": .string("not"), "of": .array([p.json])])
        case .exists(let s): return .object(["op": .string("exists"), "attribute": .string(s.wire)])
        case .text(let t):
            return .object(["op": .string("text"), "attribute": .string(t.attribute.wire),
                            "pattern": .string(t.pattern.wire), "options": .string(t.options.letters)])
        case .range(let r):
            var o: [String: JSONValue] = ["op": .string("range"), "attribute": .string(r.attribute)]
            if let l = r.lower { o["min"] = .number(l.value); o["minInclusive"] = .bool(l.inclusive) }
            if let u = r.upper { o["max"] = .number(u.value); o["maxInclusive"] = .bool(u.inclusive) }
            return .object(o)
        case .domain(let ds): return .object(["op": .string("domain"), "domains": .array(ds.map { .string($0) })])
        }
    }

    public init(json: JSONValue, path: String = "predicate") throws(PlanDecodingError) {
        guard case .object(let o) = json, let op = o["op"]?.stringValue else {
            throw PlanDecodingError(path: path, message: "expected an object with a text 'op'")
        }
        func string(_ key: String) throws(PlanDecodingError) -> String {
            guard let s = o[key]?.stringValue else {
                throw PlanDecodingError(path: "\(path).\(key)", message: "expected text")
            }
            return s
        }
        func children() throws(PlanDecodingError) -> [Predicate] {
            guard let a = o["of"]?.arrayValue else {
                throw PlanDecodingError(path: "\(path).of", message: "expected a list of predicates")
            }
            var out: [Predicate] = []
            for (i, c) in a.enumerated() { out.append(try Predicate(json: c, path: "\(path).of[\(i)]")) }
            return out
        }
        switch op {
        case "all": self = .all
        case "none": self = .none
        case "and": self = .and(try children())
        case "or": self = .or(try children())
        case "not":
            let c = try children()
            guard c.count == 1 else { throw PlanDecodingError(path: "\(path).of", message: "'not' takes exactly one predicate") }
            self = .not(c[0])
        case "exists": self = .exists(AttributeSelector(wire: try string("attribute")))
        case "text":
            let letters = o["options"]?.stringValue ?? ""
            guard let options = TextOptions(letters: letters) else {
                throw PlanDecodingError(path: "\(path).options", message: "'\(letters)' is not a combination of c, d, w and t")
            }
            self = .text(TextTest(attribute: AttributeSelector(wire: try string("attribute")),
                                  pattern: TextPattern(wire: try string("pattern")), options: options))
        case "range":
            let attribute = try string("attribute")
            guard attribute != "*" && attribute != "**" else { throw PlanDecodingError(path: "\(path).attribute", message: "a range needs one attribute") }
            var r = RangeTest(attribute: attribute)
            if let v = o["min"] {
                guard let d = v.doubleValue else { throw PlanDecodingError(path: "\(path).min", message: "expected a number") }
                r.lower = Bound(d, inclusive: o["minInclusive"]?.boolValue ?? true)
            }
            if let v = o["max"] {
                guard let d = v.doubleValue else { throw PlanDecodingError(path: "\(path).max", message: "expected a number") }
                r.upper = Bound(d, inclusive: o["maxInclusive"]?.boolValue ?? true)
            }
            self = .range(r)
        case "domain":
            guard let a = o["domains"]?.arrayValue else {
                throw PlanDecodingError(path: "\(path).domains", message: "expected a list of domain identifiers")
            }
            self = .domain(a.compactMap(\.stringValue))
        default:
            throw PlanDecodingError(path: "\(path).op", message: "unknown operation '\(op)'")
        }
    }
}

extension SortKey {
    public var json: JSONValue {
        switch self {
        case .relevance: .object(["relevance": .bool(true)])
        case .attribute(let n, let asc): .object(["attribute": .string(n), "ascending": .bool(asc)])
        }
    }

    public init(json: JSONValue, path: String = "sort") throws(PlanDecodingError) {
        if json["relevance"]?.boolValue == true { self = .relevance; return }
        guard let n = json["attribute"]?.stringValue else {
            throw PlanDecodingError(path: path, message: "expected {\"attribute\": name, \"ascending\": bool} or {\"relevance\": true}")
        }
        self = .attribute(n, ascending: json["ascending"]?.boolValue ?? true)
    }
}

extension Query {
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "predicate": predicate.json,
            "sort": .array(sort.map(\.json)),
            "batchSize": .number(Double(batchSize)),
        ]
        if let fetchAttributes { o["fetchAttributes"] = .array(fetchAttributes.map { .string($0) }) }
        if let limit { o["limit"] = .number(Double(limit)) }
        return .object(o)
    }

    public init(json: JSONValue) throws(PlanDecodingError) {
        guard case .object(let o) = json, let p = o["predicate"] else {
            throw PlanDecodingError(path: "plan", message: "expected an object with a 'predicate'")
        }
        let predicate = try Predicate(json: p)
        var sort: [SortKey] = []
        if let s = o["sort"]?.arrayValue {
            for (i, k) in s.enumerated() { sort.append(try SortKey(json: k, path: "plan.sort[\(i)]")) }
        }
        let fetch = o["fetchAttributes"]?.arrayValue?.compactMap(\.stringValue)
        let limit = o["limit"]?.intValue
        let batch = o["batchSize"]?.intValue ?? Query.defaultBatchSize
        self.init(predicate: predicate, fetchAttributes: fetch, sort: sort, limit: limit, batchSize: max(1, batch))
    }
}
