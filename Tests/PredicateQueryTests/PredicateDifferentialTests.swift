import Foundation
import Items
import PredicateQuery
import QueryPlan
import ShardStore
import Testing

/// Random predicates, written as format strings with literals, `%@` and `%K`,
/// parsed and run by the store, against the semantics of each construct
/// written out directly over the items (own folding, own LIKE matcher, Swift's
/// Regex for MATCHES, own haversine, own tokenizer).
@Suite struct PredicateDifferentialTests {
    static let names = [
        "Bob Smith", "bob", "Zoë Jones", "zoe", "Joanna", "John Appleseed", "Café Noir", "cafe noir",
        "École", "Jon", "Grün", "the Bobbins", "Smith and Sons", "x11 Tool",
    ]
    static let colors = ["red", "Red", "RED", "green", "blue", "Grün", "grün"]
    static let bios = ["Bob builds bridges", "likes the red café", "smith of the year", "über cool", "into data", "TOOL time"]
    static let cities: [(Double, Double)] = [(48.8566, 2.3522), (51.5074, -0.1278), (37.783, -122.404), (-33.87, 151.21)]

    struct Record {
        var uid: String
        var type: String
        var name: String?
        var color: String?
        var colors: [String]?
        var rank: Double?
        var done: Bool?
        var bio: String?
        var location: (Double, Double)?

        var json: JSONValue {
            var a: [String: JSONValue] = ["contentType": .string(type)]
            if let name { a["name"] = .string(name) }
            if let color { a["color"] = .string(color) }
            if let colors { a["colors"] = .array(colors.map { .string($0) }) }
            if let rank { a["rank"] = .number(rank) }
            if let done { a["done"] = .bool(done) }
            if let bio { a["bio"] = .string(bio) }
            if let (lat, lng) = location { a["location"] = .object(["latitude": .number(lat), "longitude": .number(lng)]) }
            return .object(["uniqueIdentifier": .string(uid), "domainIdentifier": .string("org.x"), "attributes": .object(a)])
        }

        func text(_ key: String) -> [String] {
            switch key {
            case "name": name.map { [$0] } ?? []
            case "color": color.map { [$0] } ?? []
            case "colors": colors ?? []
            case "bio": bio.map { [$0] } ?? []
            default: []
            }
        }

        /// Every text value, for tokenized search: every attribute here is searchable text.
        var allText: [String] { [type] + text("name") + text("color") + text("colors") + text("bio") }
    }

    static func records(_ rng: inout SplitMix64) -> [Record] {
        (0..<150).map { i in
            func maybe<T>(_ p: Int, _ make: () -> T) -> T? { Int.random(in: 0..<10, using: &rng) < p ? make() : nil }
            var r = Record(uid: "r\(i)", type: Bool.random(using: &rng) ? "Employee" : "Task")
            r.name = maybe(8) { names.randomElement(using: &rng)! }
            r.color = maybe(7) { colors.randomElement(using: &rng)! }
            r.colors = maybe(6) { (0..<Int.random(in: 0...3, using: &rng)).map { _ in colors.randomElement(using: &rng)! } }
            r.rank = maybe(7) { Double(Int.random(in: 0...9, using: &rng)) }
            r.done = maybe(5) { Bool.random(using: &rng) }
            r.bio = maybe(4) { bios.randomElement(using: &rng)! }
            r.location = maybe(5) {
                let (lat, lng) = cities.randomElement(using: &rng)!
                return (lat + Double.random(in: -2...2, using: &rng), lng + Double.random(in: -2...2, using: &rng))
            }
            return r
        }
    }

    // MARK: The reference semantics

    static func transform(_ s: String, _ options: String) -> String {
        var s = s
        if options.contains("d") { s = s.folding(options: .diacriticInsensitive, locale: nil) }
        if options.contains("c") { s = s.lowercased() }
        return s
    }

    /// LIKE: `*` any run, `?` one character, over characters.
    static func like(_ value: [Character], _ pattern: [Character]) -> Bool {
        guard let p = pattern.first else { return value.isEmpty }
        if p == "*" { return (0...value.count).contains { like(Array(value[$0...]), Array(pattern.dropFirst())) } }
        guard let v = value.first else { return false }
        return (p == "?" || p == v) && like(Array(value.dropFirst()), Array(pattern.dropFirst()))
    }

    static func haversineKm(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let r = 6371.0088, rad = Double.pi / 180
        let dLat = (b.0 - a.0) * rad, dLng = (b.1 - a.1) * rad
        let h = pow(sin(dLat / 2), 2) + cos(a.0 * rad) * cos(b.0 * rad) * pow(sin(dLng / 2), 2)
        return 2 * r * asin(min(1, sqrt(h)))
    }

    static let stopWords: Set<String> = [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
        "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
        "this", "to", "was", "will", "with",
    ]

    static func tokens(_ s: String) -> [String] {
        s.split { !($0.isLetter || $0.isNumber) }.map { transform(String($0), "cd") }
    }

    // MARK: Random predicates

    enum Leaf {
        case textEq(String, String, negated: Bool, options: String)
        case textOp(String, String, String, options: String)  // key, BEGINSWITH|ENDSWITH|CONTAINS|LIKE|MATCHES, pattern
        case number(String, String, Double)  // key, operator, value
        case between(Double, Double)
        case numberIn([Double])
        case textIn([String])
        case member(String, form: Int)  // colors holds the color
        case quantified(String, String, String)  // ALL|NONE, ==|BEGINSWITH, value
        case isNil(String, negated: Bool)
        case bool(Bool)
        case tokens(String, form: Int)
        case distance(Int, Double)
        case recordID([String])
    }

    indirect enum Node {
        case leaf(Leaf)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    static func leaf(_ rng: inout SplitMix64, _ dialect: PredicateQueryParser.Dialect) -> Leaf {
        let options = dialect == .nspredicate ? ["", "c", "d", "cd"].randomElement(using: &rng)! : ""
        let textKeys = ["name", "color", "bio"]
        let word = (names + colors).randomElement(using: &rng)!
        switch Int.random(in: 0..<(dialect == .nspredicate ? 14 : 11), using: &rng) {
        case 0:
            return .textEq(
                textKeys.randomElement(using: &rng)!, Bool.random(using: &rng) ? word : word.uppercased(),
                negated: Bool.random(using: &rng), options: options)
        case 1:
            return .textOp(
                textKeys.randomElement(using: &rng)!, "BEGINSWITH", String(word.prefix(Int.random(in: 1...3, using: &rng))),
                options: options)
        case 2:
            return .number(
                "rank", ["==", "!=", "<", "<=", ">", ">=", "=>", "=<", "<>"].randomElement(using: &rng)!,
                Double(Int.random(in: 0...9, using: &rng)))
        case 3:
            let lo = Double(Int.random(in: 0...9, using: &rng))
            return .between(lo, lo + Double(Int.random(in: 0...4, using: &rng)))
        case 4: return .numberIn((0..<Int.random(in: 1...3, using: &rng)).map { _ in Double(Int.random(in: 0...9, using: &rng)) })
        case 5: return .textIn((0..<Int.random(in: 1...3, using: &rng)).map { _ in colors.randomElement(using: &rng)! })
        case 6: return .member(colors.randomElement(using: &rng)!, form: Int.random(in: 0..<4, using: &rng))
        case 7:
            return Bool.random(using: &rng)
                ? .isNil(["rank", "color", "location", "bio"].randomElement(using: &rng)!, negated: Bool.random(using: &rng))
                : .bool(Bool.random(using: &rng))
        case 8:
            let pool = ["bob", "smith", "the", "cafe", "Café", "zoe", "RED", "tool", "the and", "bob smith", "employee", "Grun", "x11 data"]
            return .tokens(pool.randomElement(using: &rng)!, form: Int.random(in: 0..<4, using: &rng))
        case 9: return .distance(Int.random(in: 0..<cities.count, using: &rng), [50, 200, 400, 1000, 20000].randomElement(using: &rng)!)
        case 10: return .recordID((0..<Int.random(in: 1...3, using: &rng)).map { _ in "r\(Int.random(in: 0..<160, using: &rng))" })
        case 11:
            let op = ["ENDSWITH", "CONTAINS", "LIKE", "MATCHES"].randomElement(using: &rng)!
            let pattern: String
            switch op {
            case "LIKE": pattern = ["*o*", "?o*", "J*n", "*ë*", "B?b*", "*", "r?d", "*N"].randomElement(using: &rng)!
            case "MATCHES": pattern = ["J.*", "[a-z]+", ".*o.*", "B.b( .*)?", "(red|green)", "Z.*", ".*[0-9].*"].randomElement(using: &rng)!
            default: pattern = String(word.suffix(Int.random(in: 1...3, using: &rng)))
            }
            return .textOp(textKeys.randomElement(using: &rng)!, op, pattern, options: options)
        default:
            return .quantified(
                ["ALL", "NONE"].randomElement(using: &rng)!, Bool.random(using: &rng) ? "==" : "BEGINSWITH",
                Bool.random(using: &rng) ? colors.randomElement(using: &rng)! : "r")
        }
    }

    static func node(_ rng: inout SplitMix64, _ dialect: PredicateQueryParser.Dialect, depth: Int) -> Node {
        guard depth > 0, Int.random(in: 0..<3, using: &rng) == 0 else { return .leaf(leaf(&rng, dialect)) }
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: return .and((0..<Int.random(in: 2...3, using: &rng)).map { _ in node(&rng, dialect, depth: depth - 1) })
        case 1 where dialect == .nspredicate:
            return .or((0..<Int.random(in: 2...3, using: &rng)).map { _ in node(&rng, dialect, depth: depth - 1) })
        default:
            if dialect == .cloudkit {
                // CloudKit negates single comparisons other than tokens, distances and BETWEEN.
                var l = leaf(&rng, dialect)
                while unnegatable(l) { l = leaf(&rng, dialect) }
                return .not(.leaf(l))
            }
            return .not(node(&rng, dialect, depth: depth - 1))
        }
    }

    static func unnegatable(_ l: Leaf) -> Bool {
        switch l {
        case .tokens, .distance, .between: true
        default: false
        }
    }

    /// The format string and its arguments; values go as literals or `%@`, keys as names or `%K`.
    struct Writer {
        var rng: SplitMix64
        var arguments: [JSONValue] = []

        mutating func key(_ k: String) -> String {
            if Int.random(in: 0..<4, using: &rng) == 0 { arguments.append(.string(k)); return "%K" }
            return k
        }

        mutating func text(_ s: String) -> String {
            if Bool.random(using: &rng) { arguments.append(.string(s)); return "%@" }
            return Bool.random(using: &rng)
                ? "'\(s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'"))'"
                : "\"\(s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))\""
        }

        mutating func number(_ d: Double) -> String {
            if Bool.random(using: &rng) { arguments.append(.number(d)); return "%@" }
            return String(Int(d))
        }

        mutating func ops(_ o: String) -> String { o.isEmpty ? "" : "[\(o)]" }

        mutating func write(_ n: Node) -> String {
            switch n {
            case .and(let ns): return "(" + ns.map { write($0) }.joined(separator: Bool.random(using: &rng) ? " AND " : " && ") + ")"
            case .or(let ns): return "(" + ns.map { write($0) }.joined(separator: Bool.random(using: &rng) ? " or " : " || ") + ")"
            case .not(let inner): return "NOT (" + write(inner) + ")"
            case .leaf(let l): return write(l)
            }
        }

        mutating func write(_ l: Leaf) -> String {
            switch l {
            case .textEq(let k, let v, let negated, let o):
                return "\(key(k)) \(negated ? ["!=", "<>"].randomElement(using: &rng)! : ["==", "="].randomElement(using: &rng)!)\(ops(o)) \(text(v))"
            case .textOp(let k, let op, let p, let o): return "\(key(k)) \(op)\(ops(o)) \(text(p))"
            case .number(let k, let op, let v): return "\(key(k)) \(op) \(number(v))"
            case .between(let lo, let hi):
                if Bool.random(using: &rng) {
                    let k = key("rank")
                    arguments.append(.array([.number(lo), .number(hi)]))
                    return "\(k) BETWEEN %@"
                }
                return "\(key("rank")) BETWEEN {\(number(lo)), \(number(hi))}"
            case .numberIn(let vs): return "\(key("rank")) IN {\(vs.map { number($0) }.joined(separator: ", "))}"
            case .textIn(let vs): return "\(key("color")) IN {\(vs.map { text($0) }.joined(separator: ", "))}"
            case .member(let c, let form):
                switch form {
                case 0: return "\(key("colors")) CONTAINS \(text(c))"
                case 1: return "\(text(c)) IN \(key("colors"))"
                case 2: return "ANY \(key("colors")) == \(text(c))"
                default: return "SOME \(key("colors")) = \(text(c))"
                }
            case .quantified(let q, let op, let v): return "\(q) \(key("colors")) \(op) \(text(v))"
            case .isNil(let k, let negated): return "\(key(k)) \(negated ? "!=" : "==") \(["nil", "NULL", "Nil"].randomElement(using: &rng)!)"
            case .bool(let b):
                return
                    "\(key("done")) == \(b ? ["YES", "TRUE", "true"].randomElement(using: &rng)! : ["NO", "FALSE", "no"].randomElement(using: &rng)!)"
            case .tokens(let t, let form):
                switch form {
                case 0: return "self CONTAINS \(text(t))"
                case 1: return "allTokens TOKENMATCHES[cdl] \(text(t))"
                case 2: arguments.append(.string(t)); return "ANY tokenize(%@, 'cdl') IN allTokens"
                default: arguments.append(.string(t)); return "ALL tokenize:using:(%@, 'Cdl') IN allTokens"
                }
            case .distance(let city, let km):
                let (lat, lng) = PredicateDifferentialTests.cities[city]
                let k = key("location")
                arguments.append(.object(["latitude": .number(lat), "longitude": .number(lng)]))
                return "distanceToLocation:fromLocation:(\(k), %@) < \(number(km))"
            case .recordID(let ids):
                if ids.count == 1 {
                    arguments.append(Bool.random(using: &rng) ? .string(ids[0]) : .object(["recordName": .string(ids[0])]))
                    return "recordID == %@"
                }
                return "recordID IN {\(ids.map { text($0) }.joined(separator: ", "))}"
            }
        }
    }

    static func matches(_ n: Node, _ r: Record, _ dialect: PredicateQueryParser.Dialect) -> Bool {
        switch n {
        case .and(let ns): return ns.allSatisfy { matches($0, r, dialect) }
        case .or(let ns): return ns.contains { matches($0, r, dialect) }
        case .not(let inner): return !matches(inner, r, dialect)
        case .leaf(let l): return matches(l, r, dialect)
        }
    }

    static func equal(_ a: String, _ b: String, _ dialect: PredicateQueryParser.Dialect, _ options: String) -> Bool {
        let o = dialect == .cloudkit ? "c" : options
        return transform(a, o) == transform(b, o)
    }

    static func matches(_ l: Leaf, _ r: Record, _ dialect: PredicateQueryParser.Dialect) -> Bool {
        switch l {
        case .textEq(let k, let v, let negated, let o):
            let hit = r.text(k).contains { equal($0, v, dialect, o) }
            return negated ? !hit : hit
        case .textOp(let k, let op, let p, let o):
            return r.text(k).contains { value in
                let v = transform(value, o), q = transform(p, o)
                switch op {
                case "BEGINSWITH": return v.hasPrefix(q)
                case "ENDSWITH": return v.hasSuffix(q)
                case "CONTAINS": return v.contains(q)
                case "LIKE": return like(Array(v), Array(q))
                default:
                    var regex = try! Regex(q)
                    if o.contains("c") { regex = regex.ignoresCase() }
                    return (try? regex.wholeMatch(in: v)) != nil
                }
            }
        case .number(_, let op, let x):
            guard let v = r.rank else { return op == "!=" || op == "<>" }
            switch op {
            case "==": return v == x
            case "!=", "<>": return v != x
            case "<": return v < x
            case "<=", "=<": return v <= x
            case ">": return v > x
            default: return v >= x
            }
        case .between(let lo, let hi): return r.rank.map { lo <= $0 && $0 <= hi } ?? false
        case .numberIn(let vs): return r.rank.map(vs.contains) ?? false
        case .textIn(let vs): return r.color.map { c in vs.contains { equal(c, $0, dialect, "") } } ?? false
        case .member(let c, let form):
            // NSPredicate's CONTAINS with a text is a substring test; CloudKit's, membership.
            if form == 0, dialect == .nspredicate { return (r.colors ?? []).contains { $0.contains(c) } }
            return (r.colors ?? []).contains { equal($0, c, dialect, "") }
        case .quantified(let q, let op, let v):
            let each = (r.colors ?? []).map { value in op == "==" ? equal(value, v, dialect, "") : value.hasPrefix(v) }
            return q == "ALL" ? each.allSatisfy { $0 } : !each.contains(true)
        case .isNil(let k, let negated):
            let present: Bool
            switch k {
            case "rank": present = r.rank != nil
            case "location": present = r.location != nil
            default: present = !r.text(k).isEmpty
            }
            return negated ? present : !present
        case .bool(let b): return r.done == b
        case .tokens(let t, let form):
            let wanted = Set(tokens(t).filter { !stopWords.contains($0) })
            guard !wanted.isEmpty else { return false }
            let have = Set(r.allText.flatMap(tokens))
            return form == 1 || form == 3 ? wanted.isSubset(of: have) : !wanted.isDisjoint(with: have)
        case .distance(let city, let km):
            return r.location.map { haversineKm($0, cities[city]) < km } ?? false
        case .recordID(let ids): return ids.contains(r.uid)
        }
    }

    @Test(arguments: [(PredicateQueryParser.Dialect.cloudkit, UInt64(1)), (.cloudkit, 2), (.nspredicate, 3), (.nspredicate, 4)])
    func parsedPredicatesAgreeWithThePlainEvaluation(dialect: PredicateQueryParser.Dialect, seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let records = Self.records(&rng)
        let store = try RecordStore(records.map { JSONWriter.string($0.json) })
        let parser = PredicateQueryParser(dialect: dialect, now: fixedNow)
        var checked = 0, selective = 0
        var parsing = Duration.zero
        for _ in 0..<250 {
            let type = Bool.random(using: &rng) ? "Employee" : "Task"
            let tree = Self.node(&rng, dialect, depth: 2)
            var writer = Writer(rng: SplitMix64(state: rng.next()))
            let format = writer.write(tree)
            let expected = Set(records.filter { $0.type == type && Self.matches(tree, $0, dialect) }.map(\.uid))
            let clock = ContinuousClock.now
            let plan = try parser.parse(recordType: type, format, arguments: writer.arguments)
            parsing += ContinuousClock.now - clock
            var got = Set<String>()
            try store.store.run(Query(predicate: plan)) { got.formUnion($0.compactMap { $0.item["uniqueIdentifier"]?.stringValue }) }
            #expect(got == expected, "\(format) \(writer.arguments) → \(plan)")
            if got != expected { break }
            checked += 1
            if !expected.isEmpty, expected.count < records.count / 3 { selective += 1 }
        }
        print("predicate parsing (\(dialect.rawValue), seed \(seed)): \(checked) predicates in \(parsing), \(parsing / max(1, checked)) each")
        #expect(checked == 250)
        #expect(selective > 60, "most predicates should select some records but not all")
    }
}
