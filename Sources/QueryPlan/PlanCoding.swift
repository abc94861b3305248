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
            return .object([
                "op": .string("text"), "attribute": .string(t.attribute.wire),
                "pattern": .string(t.pattern.wire), "options": .string(t.options.letters),
            ])
        case .range(let r):
            var o: [String: JSONValue] = ["op": .string("range"), "attribute": .string(r.attribute)]
            if let l = r.lower { o["min"] = .number(l.value); o["minInclusive"] = .bool(l.inclusive) }
            if let u = r.upper { o["max"] = .number(u.value); o["maxInclusive"] = .bool(u.inclusive) }
            return .object(o)
        case .textRange(let r):
            var o: [String: JSONValue] = [
                "op": .string("textRange"), "attribute": .string(r.attribute),
                "options": .string(r.options.letters),
            ]
            if let l = r.lower { o["min"] = .string(l.value); o["minInclusive"] = .bool(l.inclusive) }
            if let u = r.upper { o["max"] = .string(u.value); o["maxInclusive"] = .bool(u.inclusive) }
            return .object(o)
        case .domain(let ds): return .object(["op": .string("domain"), "domains": .array(ds.map { .string($0) })])
        case .exactDomain(let ds): return .object(["op": .string("exactDomain"), "domains": .array(ds.map { .string($0) })])
        case .geo(let g):
            var o: [String: JSONValue] = ["op": .string("geo"), "attribute": .string(g.attribute)]
            switch g.area {
            case .circle(let center, let radius):
                o["around"] = .object(["latitude": .number(center.latitude), "longitude": .number(center.longitude)])
                o["radius"] = .number(radius)
            case .box(let lat1, let lng1, let lat2, let lng2):
                o["box"] = .array([.number(lat1), .number(lng1), .number(lat2), .number(lng2)])
            }
            return .object(o)
        case .regex(let r):
            return .object([
                "op": .string("regex"), "attribute": .string(r.attribute.wire),
                "pattern": .string(r.pattern), "options": .string(r.options.letters),
            ])
        case .identifier(let ids): return .object(["op": .string("identifier"), "ids": .array(ids.map { .string($0) })])
        case .every(let p): return .object(["op": .string("every"), "of": .array([p.json])])
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
            self = .text(
                TextTest(
                    attribute: AttributeSelector(wire: try string("attribute")),
                    pattern: TextPattern(wire: try string("pattern")), options: options))
        case "range":
            let attribute = try string("attribute")
            guard attribute != "*" && attribute != "**" else {
                throw PlanDecodingError(path: "\(path).attribute", message: "a range needs one attribute")
            }
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
        case "textRange":
            let attribute = try string("attribute")
            guard attribute != "*" && attribute != "**" else {
                throw PlanDecodingError(path: "\(path).attribute", message: "a text range needs one attribute")
            }
            let letters = o["options"]?.stringValue ?? ""
            guard let options = TextOptions(letters: letters), options.isSubset(of: [.caseInsensitive, .diacriticInsensitive]) else {
                throw PlanDecodingError(path: "\(path).options", message: "'\(letters)' is not a combination of c and d")
            }
            var r = TextRangeTest(attribute: attribute, options: options)
            if o["min"] != nil { r.lower = TextBound(try string("min"), inclusive: o["minInclusive"]?.boolValue ?? true) }
            if o["max"] != nil { r.upper = TextBound(try string("max"), inclusive: o["maxInclusive"]?.boolValue ?? true) }
            self = .textRange(r)
        case "domain":
            guard let a = o["domains"]?.arrayValue else {
                throw PlanDecodingError(path: "\(path).domains", message: "expected a list of domain identifiers")
            }
            self = .domain(a.compactMap(\.stringValue))
        case "exactDomain":
            guard let a = o["domains"]?.arrayValue else {
                throw PlanDecodingError(path: "\(path).domains", message: "expected a list of domain identifiers")
            }
            self = .exactDomain(a.compactMap(\.stringValue))
        case "geo":
            self = .geo(try GeoTest(json: o, path: path))
        case "regex":
            let letters = o["options"]?.stringValue ?? ""
            guard let options = TextOptions(letters: letters), options.isSubset(of: [.caseInsensitive, .diacriticInsensitive]) else {
                throw PlanDecodingError(path: "\(path).options", message: "'\(letters)' is not a combination of c and d")
            }
            let test = RegexTest(attribute: AttributeSelector(wire: try string("attribute")), pattern: try string("pattern"), options: options)
            do throws(RegexMatcher.CompileError) { _ = try RegexMatcher(test) } catch {
                throw PlanDecodingError(path: "\(path).pattern", message: error.description)
            }
            self = .regex(test)
        case "identifier":
            guard let a = o["ids"]?.arrayValue else {
                throw PlanDecodingError(path: "\(path).ids", message: "expected a list of unique identifiers")
            }
            self = .identifier(a.compactMap(\.stringValue))
        case "every":
            let c = try children()
            guard c.count == 1 else { throw PlanDecodingError(path: "\(path).of", message: "'every' takes exactly one predicate") }
            guard Self.testsValues(c[0]), c[0].attributeNames.count == 1 else {
                throw PlanDecodingError(
                    path: "\(path).of[0]",
                    message: "'every' takes text, textRange, regex, range and geo tests of one named attribute, with and, or and not")
            }
            self = .every(c[0])
        default:
            throw PlanDecodingError(path: "\(path).op", message: "unknown operation '\(op)'")
        }
    }
}

extension Predicate {
    /// Whether `p` tests one value at a time, so that `every` can apply it
    /// to each value: value tests of named attributes under `and`, `or` and `not`.
    static func testsValues(_ p: Predicate) -> Bool {
        switch p {
        case .text(let t): t.attribute.name != nil
        case .regex(let r): r.attribute.name != nil
        case .range, .textRange, .geo: true
        case .and(let ps), .or(let ps): !ps.isEmpty && ps.allSatisfy(testsValues)
        case .not(let q): testsValues(q)
        default: false
        }
    }
}

extension GeoTest {
    /// `{"op": "geo", "attribute": "location", "around": {"latitude": …,
    /// "longitude": …}, "radius": metres}` or `{…, "box": [lat1, lng1, lat2,
    /// lng2]}`; the attribute is `location` when absent.
    init(json o: [String: JSONValue], path: String) throws(PlanDecodingError) {
        func coordinate(_ v: JSONValue?, _ limit: Double, _ path: String, _ what: String) throws(PlanDecodingError) -> Double {
            guard let d = v?.doubleValue, d.isFinite else { throw PlanDecodingError(path: path, message: "expected a \(what) in degrees") }
            guard abs(d) <= limit else { throw PlanDecodingError(path: path, message: "a \(what) must be within ±\(Int(limit)), not \(d)") }
            return d
        }
        var attribute = GeoTest.defaultAttribute
        if let a = o["attribute"] {
            guard let s = a.stringValue, !s.isEmpty, s != "*", s != "**" else {
                throw PlanDecodingError(path: "\(path).attribute", message: "expected the name of one location attribute")
            }
            attribute = s
        }
        switch (o["around"], o["box"]) {
        case (let around?, nil):
            let lat = try coordinate(around["latitude"], 90, "\(path).around.latitude", "latitude")
            let lng = try coordinate(around["longitude"], 180, "\(path).around.longitude", "longitude")
            guard let radius = o["radius"]?.doubleValue, radius.isFinite, radius >= 0 else {
                throw PlanDecodingError(path: "\(path).radius", message: "expected a radius in metres, zero or more")
            }
            self.init(attribute: attribute, area: .circle(center: Location(latitude: lat, longitude: lng), radius: radius))
        case (nil, let box?):
            guard let a = box.arrayValue, a.count == 4 else {
                throw PlanDecodingError(path: "\(path).box", message: "expected four numbers: lat1, lng1, lat2, lng2")
            }
            self.init(
                attribute: attribute,
                area: .box(
                    lat1: try coordinate(a[0], 90, "\(path).box[0]", "latitude"),
                    lng1: try coordinate(a[1], 180, "\(path).box[1]", "longitude"),
                    lat2: try coordinate(a[2], 90, "\(path).box[2]", "latitude"),
                    lng2: try coordinate(a[3], 180, "\(path).box[3]", "longitude")))
        default:
            throw PlanDecodingError(path: path, message: "a geo test takes either 'around' with 'radius', or 'box'")
        }
    }
}

extension SortKey {
    public var json: JSONValue {
        switch self {
        case .relevance: .object(["relevance": .bool(true)])
        case .identifier: .object(["identifier": .bool(true)])
        case .attribute(let n, let asc): .object(["attribute": .string(n), "ascending": .bool(asc)])
        }
    }

    public init(json: JSONValue, path: String = "sort") throws(PlanDecodingError) {
        if json["relevance"]?.boolValue == true { self = .relevance; return }
        if json["identifier"]?.boolValue == true { self = .identifier; return }
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
        if let after { o["after"] = .array(after) }
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
        var after: [JSONValue]?
        if let a = o["after"] {
            guard let values = a.arrayValue else {
                throw PlanDecodingError(path: "plan.after", message: "expected the list of sort values to resume after")
            }
            guard values.count == sort.count else {
                throw PlanDecodingError(path: "plan.after", message: "expected \(sort.count) sort values, one per sort key, found \(values.count)")
            }
            after = values
        }
        self.init(predicate: predicate, fetchAttributes: fetch, sort: sort, limit: limit, batchSize: max(1, batch), after: after)
    }
}
