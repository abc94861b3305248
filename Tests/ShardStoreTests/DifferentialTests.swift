import Foundation
import Items
import QueryPlan
import ShardStore
import Testing

/// The query semantics written down directly over decoded items, without
/// any index: what the store must agree with.
enum Reference {
    static func isDefaultText(_ name: String) -> Bool {
        guard let spec = StandardAttributes.all[name] else { return true }
        return spec.type == .text && spec.searchable && spec.searchableByDefault
    }

    static func matches(_ p: QueryPlan.Predicate, _ item: Item) -> Bool {
        switch p {
        case .all: return true
        case .none: return false
        case .and(let ps): return ps.allSatisfy { matches($0, item) }
        case .or(let ps): return ps.contains { matches($0, item) }
        case .not(let q): return !matches(q, item)
        case .domain(let ds): return ds.contains { DomainIdentifier.domain(item.domainIdentifier, isWithin: $0) }
        case .exactDomain(let ds): return ds.contains(item.domainIdentifier)
        case .exists(.named(let n)): return !(item.attributes[n]?.elements.isEmpty ?? true)
        case .exists(.allText):
            return item.attributes.contains { name, value in
                isDefaultText(name) && value.elements.contains { if case .text = $0 { true } else { false } }
            }
        case .range(let r):
            return (item.attributes[r.attribute]?.elements ?? []).contains { v in
                switch v {
                case .number(let n): r.contains(n)
                case .date(let d): r.contains(d.timeIntervalSinceReferenceDate)
                case .boolean(let b): r.contains(b ? 1 : 0)
                default: false
                }
            }
        case .textRange(let r):
            // Foundation's `compare(_:options:)`, as NSPredicate orders text;
            // `c` and `d` also ignore width.
            var options: String.CompareOptions = []
            if r.options.contains(.caseInsensitive) { options.formUnion([.caseInsensitive, .widthInsensitive]) }
            if r.options.contains(.diacriticInsensitive) { options.formUnion([.diacriticInsensitive, .widthInsensitive]) }
            func lies(_ s: String) -> Bool {
                if let l = r.lower {
                    let c = s.compare(l.value, options: options)
                    if !(c == .orderedDescending || (l.inclusive && c == .orderedSame)) { return false }
                }
                if let u = r.upper {
                    let c = s.compare(u.value, options: options)
                    if !(c == .orderedAscending || (u.inclusive && c == .orderedSame)) { return false }
                }
                return true
            }
            return (item.attributes[r.attribute]?.elements ?? []).contains { v in
                if case .text(let s) = v { lies(s) } else { false }
            }
        case .identifier(let ids): return ids.contains(item.uniqueIdentifier)
        case .every(let leaf):
            guard let name = leaf.attributeNames.first else { return true }
            return (item.attributes[name]?.elements ?? []).allSatisfy { v in
                var one = item
                one.attributes = [name: v]
                return matches(leaf, one)
            }
        case .regex(let r):
            let m = try! RegexMatcher(r)
            switch r.attribute {
            case .named(let n):
                return (item.attributes[n]?.elements ?? []).contains { v in
                    switch v {
                    case .text(let s): m.matches(s)
                    case .number(let d): m.matches(canonicalText(d))
                    default: false
                    }
                }
            case .allText:
                return item.attributes.contains { name, value in
                    isDefaultText(name) && value.elements.contains { if case .text(let s) = $0 { m.matches(s) } else { false } }
                }
            }
        case .geo(let g):
            return (item.attributes[g.attribute]?.elements ?? []).contains { v in
                if case .location(let l) = v { g.area.contains(l) } else { false }
            }
        case .text(let t):
            let m = TextMatcher(t)
            switch t.attribute {
            case .named(let n):
                return (item.attributes[n]?.elements ?? []).contains { v in
                    switch v {
                    case .text(let s): m.matches(s)
                    case .number(let d): m.matches(canonicalText(d))
                    default: false
                    }
                }
            case .allText:
                return item.attributes.contains { name, value in
                    isDefaultText(name) && value.elements.contains { if case .text(let s) = $0 { m.matches(s) } else { false } }
                }
            }
        }
    }
}

@Suite struct DifferentialTests {
    static let vocabulary = [
        "Window", "window", "MyWindowClass", "NSWindow", "Broken", "glass", "Café", "cafe", "ÉCOLE", "école",
        "naïve", "Straße", "strasse", "über", "Über", "HTMLParser", "parser", "x11", "libfoo-dev", "foo_bar",
        "São", "Paulo", "ünïcödé", "résumé", "resume", "kernel", "Kernel", "KERNEL", "data", "database",
        "日本語", "テキスト", "Ωmega", "ωmega", "3D", "2.5", "C++", "tool", "toolkit", "ToolKit", "Ｗｉｎｄｏｗ",
    ]

    static func words(_ rng: inout SplitMix64, _ count: Int) -> String {
        let seps = [" ", " ", " ", "-", ", ", "/", "."]
        var s = ""
        for i in 0..<count {
            if i > 0 { s += seps.randomElement(using: &rng)! }
            s += vocabulary.randomElement(using: &rng)!
        }
        return s
    }

    static func corpus(_ rng: inout SplitMix64) -> [JSONValue] {
        (0..<160).map { i in
            var attrs: [String: JSONValue] = [:]
            attrs["title"] = .string(words(&rng, Int.random(in: 1...3, using: &rng)))
            if Bool.random(using: &rng) { attrs["displayName"] = .string(words(&rng, Int.random(in: 1...6, using: &rng))) }
            if Int.random(in: 0..<3, using: &rng) == 0 {
                // Long texts (kind 5, over 256 bytes).
                attrs["contentDescription"] = .string(words(&rng, Int.random(in: 40...90, using: &rng)))
            }
            if Bool.random(using: &rng) {
                attrs["keywords"] = .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in .string(words(&rng, 1)) })
            }
            if Bool.random(using: &rng) { attrs["rating"] = .number(Double(Int.random(in: 0...10, using: &rng)) / 2) }
            if Bool.random(using: &rng) { attrs["installedSize"] = .number(Double(Int.random(in: 1...50000, using: &rng))) }
            if Bool.random(using: &rng) { attrs["tag"] = .string(words(&rng, 1)) }
            if Bool.random(using: &rng) { attrs["url"] = .string("https://example.org/" + words(&rng, 1)) }
            if Int.random(in: 0..<4, using: &rng) == 0 { attrs["supportsNavigation"] = .bool(Bool.random(using: &rng)) }
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: attrs["location"] = location(&rng)
            case 1:
                // Core Spotlight's pair, which also makes `location`.
                if case .object(let o) = location(&rng) { attrs["latitude"] = o["latitude"]; attrs["longitude"] = o["longitude"] }
            default: break
            }
            if Int.random(in: 0..<4, using: &rng) == 0 {
                attrs["stops"] = .array((0..<Int.random(in: 1...3, using: &rng)).map { _ in location(&rng) })
            }
            let domain = ["org.a", "org.a.b", "org.ab", "org.c"].randomElement(using: &rng)!
            return .object([
                "uniqueIdentifier": .string("item\(i)"),
                "domainIdentifier": .string(domain),
                "attributes": .object(attrs),
            ])
        }
    }

    /// Places the geo leaves are drawn around, so that circles and boxes catch some items.
    static let cities: [(Double, Double)] = [
        (48.8566, 2.3522), (51.5074, -0.1278), (52.52, 13.405), (-33.8688, 151.2093),
        (40.7128, -74.006), (0, 179.95), (89.5, 10),
    ]

    static func location(_ rng: inout SplitMix64) -> JSONValue {
        let (lat, lng) = cities.randomElement(using: &rng)!
        let jitter = [0, 0.01, 0.5, 3].randomElement(using: &rng)!
        let la = min(90, max(-90, lat + Double.random(in: -jitter...jitter, using: &rng)))
        let lo = min(180, max(-180, lng + Double.random(in: -jitter...jitter, using: &rng)))
        return .object(["latitude": .number(la), "longitude": .number(lo)])
    }

    static func geoLeaf(_ rng: inout SplitMix64) -> QueryPlan.Predicate {
        let attribute = ["location", "location", "stops"].randomElement(using: &rng)!
        let (lat, lng) = cities.randomElement(using: &rng)!
        if Bool.random(using: &rng) {
            let radius: Double = [0, 1_000, 50_000, 300_000, 1_000_000, 20_100_000].randomElement(using: &rng)!
            return .geo(GeoTest(attribute: attribute, area: .circle(center: Location(latitude: lat, longitude: lng), radius: radius)))
        }
        let h = [0.02, 1, 5, 30].randomElement(using: &rng)!
        return .geo(
            GeoTest(
                attribute: attribute,
                area: .box(
                    lat1: min(90, lat + h), lng1: max(-180, lng - h),
                    lat2: max(-90, lat - Double.random(in: 0...h, using: &rng)),
                    lng2: min(180, lng + h))))
    }

    static func pattern(_ rng: inout SplitMix64) -> String {
        var word = vocabulary.randomElement(using: &rng)!
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: word = "*" + word + "*"
        case 1: word = String(word.prefix(Int.random(in: 1...max(1, word.count), using: &rng))) + "*"
        case 2: word = "*" + String(word.suffix(Int.random(in: 1...max(1, word.count), using: &rng)))
        case 3:
            let chars = Array(word)
            if chars.count > 2 { word = String(chars[..<1]) + "*" + String(chars[(chars.count - 1)...]) }
        case 4: word = word + " " + vocabulary.randomElement(using: &rng)!
        case 5: word = "*" + String(Array(word).dropFirst().prefix(3)) + "*"
        default: break
        }
        return word
    }

    static func leaf(_ rng: inout SplitMix64) -> QueryPlan.Predicate {
        let attributes = ["title", "displayName", "contentDescription", "keywords", "tag", "url", "installedSize", "*", "*", "*"]
        switch Int.random(in: 0..<16, using: &rng) {
        case 10: return geoLeaf(&rng)
        case 11:
            let patterns = ["caf.*", ".*indow.*", "[a-z]+", "K.*L", "x\\d+", ".*", "(?:Über|über).*", "\\d+(\\.5)?", "ecole"]
            return .regex(
                RegexTest(
                    attribute: ["title", "keywords", "tag", "rating", "*"].randomElement(using: &rng)! == "*"
                        ? .allText
                        : .named(["title", "keywords", "tag", "rating"].randomElement(using: &rng)!),
                    pattern: patterns.randomElement(using: &rng)!,
                    options: TextOptions(letters: ["", "c", "d", "cd"].randomElement(using: &rng)!)!))
        case 12: return .identifier((0..<Int.random(in: 0...3, using: &rng)).map { _ in "item\(Int.random(in: 0..<170, using: &rng))" })
        case 13:
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: return .every(text("keywords", pattern(&rng), ["", "c", "cd", "cdw"].randomElement(using: &rng)!))
            case 1: return .every(range("rating", Double(Int.random(in: 0...3, using: &rng)), nil))
            case 2: return .every(textRange(&rng, attribute: "keywords"))
            default: return .every(geoLeaf(&rng))
            }
        case 14, 15:
            return textRange(
                &rng,
                attribute: ["title", "displayName", "contentDescription", "keywords", "tag", "url", "installedSize"]
                    .randomElement(using: &rng)!)
        case 0: return .exists(Bool.random(using: &rng) ? .allText : .named(attributes.randomElement(using: &rng)!))
        case 1:
            return range(
                ["rating", "installedSize", "supportsNavigation"].randomElement(using: &rng)!,
                Double(Int.random(in: 0...3, using: &rng)), Bool.random(using: &rng) ? nil : 4,
                inclusive: Bool.random(using: &rng))
        case 2: return .domain([["org.a", "org.ab", "org.c", "org"].randomElement(using: &rng)!])
        case 3: return text("installedSize", ["1*", "*5", "*0*", "12345"].randomElement(using: &rng)!)
        default:
            let options = ["", "c", "d", "cd", "w", "cw", "cdw", "t", "cdt", "cdwt"].randomElement(using: &rng)!
            return text(attributes.randomElement(using: &rng)!, pattern(&rng), options)
        }
    }

    /// A text range with bounds from the vocabulary (whole words, their
    /// first letters, folded or not), one end open at times; `cd` most
    /// often, the ranges the key index narrows.
    static func textRange(_ rng: inout SplitMix64, attribute: String) -> QueryPlan.Predicate {
        func bound() -> TextBound {
            var word = vocabulary.randomElement(using: &rng)!
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: word = String(word.prefix(Int.random(in: 1...2, using: &rng)))
            case 1: word = word.lowercased()
            default: break
            }
            return TextBound(word, inclusive: Bool.random(using: &rng))
        }
        var lower: TextBound? = bound(), upper: TextBound? = bound()
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: lower = nil
        case 1: upper = nil
        default: break
        }
        let options = ["", "c", "d", "cd", "cd", "cd"].randomElement(using: &rng)!
        return .textRange(TextRangeTest(attribute: attribute, lower: lower, upper: upper, options: TextOptions(letters: options)!))
    }

    static func predicate(_ rng: inout SplitMix64, depth: Int) -> QueryPlan.Predicate {
        guard depth > 0, Int.random(in: 0..<3, using: &rng) == 0 else { return leaf(&rng) }
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: return .and((0..<Int.random(in: 2...3, using: &rng)).map { _ in predicate(&rng, depth: depth - 1) })
        case 1: return .or((0..<Int.random(in: 2...3, using: &rng)).map { _ in predicate(&rng, depth: depth - 1) })
        default: return .not(predicate(&rng, depth: depth - 1))
        }
    }

    /// Hundreds of random plans over a random shard: the store, with all its
    /// index shortcuts, must return exactly what the plain definition does.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func storeAgreesWithTheDefinition(seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let dir = TempDir()
        let store = try openStore(dir)
        let items = Self.corpus(&rng)
        try store.put(items)
        // Replace a few, so the indexes have seen deletions too.
        try store.put(Array(Self.corpus(&rng).prefix(40)))
        let decoder = ItemDecoder()
        var current: [String: Item] = [:]
        for json in items { let i = try decoder.decode(json); current[i.uniqueIdentifier] = i }
        var replay = SplitMix64(state: seed)
        _ = Self.corpus(&replay)
        for json in Self.corpus(&replay).prefix(40) { let i = try decoder.decode(json); current[i.uniqueIdentifier] = i }

        var checked = 0, nonEmpty = 0
        for _ in 0..<300 {
            let p = Self.predicate(&rng, depth: 2)
            let expected = Set(current.values.filter { Reference.matches(p, $0) }.map(\.uniqueIdentifier))
            let got = try store.idSet(p)
            #expect(got == expected, "\(p)")
            if got != expected { break }
            #expect(try store.count(matching: p) == expected.count, "\(p)")
            checked += 1
            if !expected.isEmpty, expected.count < current.count { nonEmpty += 1 }
        }
        #expect(checked == 300)
        #expect(nonEmpty > 100, "most plans should select some items but not all")
    }

    /// A search's own filter and its disjunctive facets' filters, built
    /// from one pool of random conditions as InstantSearch's page builds
    /// them (each facet's filter is the search's without one condition, some
    /// beside a domain scope): each condition's items are read once per
    /// search and intersected per filter, which must give every filter's
    /// items exactly (the search's `nbHits`, each facet's set size).
    @Test(arguments: [4, 5, 6] as [UInt64])
    func sharedFilterConditionsAgreeWithTheDefinition(seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let dir = TempDir()
        let store = try openStore(dir)
        let items = Self.corpus(&rng)
        try store.put(items)
        let decoder = ItemDecoder()
        let current = try items.map { try decoder.decode($0) }
        func count(_ p: QueryPlan.Predicate) -> Int { current.filter { Reference.matches(p, $0) }.count }
        var checked = 0
        for _ in 0..<60 {
            let pool = (0..<Int.random(in: 2...4, using: &rng)).map { _ in Self.predicate(&rng, depth: 1) }
            let scope: [QueryPlan.Predicate] =
                Bool.random(using: &rng) ? [.domain([["org.a", "org", "org.c"].randomElement(using: &rng)!])] : []
            let main = QueryPlan.Predicate.and(scope + pool)
            var disjunctive: [String: QueryPlan.Predicate] = [:]
            for i in pool.indices { disjunctive["f\(i)"] = .and(scope + pool.enumerated().filter { $0.offset != i }.map(\.element)) }
            var plan = SearchPlan(
                filter: main, facets: disjunctive.keys.sorted() + [SearchPlan.disjunctiveSetSizes], disjunctiveFilters: disjunctive,
                window: 0)
            plan.facetAliases = disjunctive.mapValues { _ in "title" }
            let r = try store.search(plan)
            #expect(r.nbHits == count(main), "\(main)")
            #expect(r.facets[SearchPlan.disjunctiveSetSizes] == disjunctive.mapValues(count), "\(main)")
            checked += 1
        }
        #expect(checked == 60)
    }
}

extension DifferentialTests {
    /// Queries between another connection's writes: a read-only connection
    /// kept open across the writer's commits (new items, replaced ones under
    /// new ids, deleted ones), with its caches (domains, identifiers,
    /// universe) patched or read again, returns exactly what the plain
    /// definition does over the items after each commit.
    @Test(arguments: [4, 5] as [UInt64])
    func readerAgreesWithTheDefinitionBetweenWrites(seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let dir = TempDir()
        let writer = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        let decoder = ItemDecoder()
        var current: [String: Item] = [:]
        func put(_ items: [JSONValue]) throws {
            try writer.put(items)
            for json in items { let i = try decoder.decode(json); current[i.uniqueIdentifier] = i }
        }
        try put(Self.corpus(&rng))
        var checked = 0
        for round in 0..<5 {
            // Some items of a fresh corpus replace theirs, some are new (ids
            // past the first corpus's), some are deleted.
            let fresh = Self.corpus(&rng)
            try put(Array(fresh.shuffled(using: &rng).prefix(30)))
            let added = fresh.suffix(10).enumerated().map { k, json -> JSONValue in
                guard case .object(var o) = json else { return json }
                o["uniqueIdentifier"] = .string("added\(round)-\(k)")
                return .object(o)
            }
            try put(added)
            let gone = Array(current.keys.sorted().shuffled(using: &rng).prefix(8))
            #expect(try writer.delete(ids: gone) == gone.count)
            for id in gone { current[id] = nil }
            for _ in 0..<80 {
                let p = Self.predicate(&rng, depth: 2)
                let expected = Set(current.values.filter { Reference.matches(p, $0) }.map(\.uniqueIdentifier))
                let got = try reader.idSet(p)
                #expect(got == expected, "round \(round): \(p)")
                if got != expected { return }
                checked += 1
            }
        }
        #expect(checked == 400)
    }
}

@Suite struct CursorTests {
    /// Paging with `after` through a sort full of ties (ratings repeat, many
    /// items have none) gives every match once, in the order of one sorted run.
    @Test(arguments: [7, 1, 50] as [Int])
    func pagesResumeExactlyAfterTheLastResult(pageSize: Int) throws {
        var rng = SplitMix64(state: 99)
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put(DifferentialTests.corpus(&rng))
        for sort in [
            [SortKey.attribute("rating", ascending: false), .identifier],
            [.attribute("title", ascending: true), .attribute("rating", ascending: true), .identifier],
            [.identifier],
        ] {
            let predicate = QueryPlan.Predicate.not(text("title", "kernel", "c"))
            var whole: [String] = []
            try store.run(Query(predicate: predicate, sort: sort)) { whole += $0.map { $0.item["uniqueIdentifier"]?.stringValue ?? "?" } }
            var paged: [String] = []
            var after: [JSONValue]?
            while true {
                var page: [StoredResult] = []
                try store.run(Query(predicate: predicate, sort: sort, limit: pageSize, after: after)) { page += $0 }
                paged += page.map { $0.item["uniqueIdentifier"]?.stringValue ?? "?" }
                guard page.count == pageSize, let last = page.last else { break }
                after = last.sortValues
            }
            #expect(whole.count > 100)
            #expect(paged == whole, "\(sort)")
        }
    }
}

extension CursorTests {
    /// The identifier sort key over more items than the per-item lookup
    /// serves (the table is read in one pass), and over fewer: one order,
    /// case folded first, then the raw identifier.
    @Test func identifierSortAgreesOverManyAndFewItems() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        var items: [JSONValue] = []
        for i in 0..<2300 {
            let uid = (i % 3 == 0 ? "Id" : "id") + String((i * 7919) % 2300)
            items.append(item(uid, #"{"n": \#(i % 5)}"#))
        }
        try store.put(items)
        let uids = items.compactMap { $0["uniqueIdentifier"]?.stringValue }
        let expected = uids.sorted { ($0.lowercased(), $0) < ($1.lowercased(), $1) }
        #expect(try store.ids(.all, sort: [.identifier]) == expected)
        let few = try store.ids(range("n", 0, 0), sort: [.identifier])
        #expect(few.count == 460)
        #expect(few == expected.filter { few.contains($0) })
    }
}

@Suite struct WordsFastPathTests {
    /// `Words.split` has an ASCII fast path; appending a non-ASCII word after
    /// a separator forces the general path, whose answer must be the same.
    @Test func asciiSplitAgreesWithTheGeneralPath() {
        var rng = SplitMix64(state: 42)
        let alphabet = Array("aZbYzA09 -_.,/\t\r\nMyWindowClassNSWindowHTML5Parser'\"")
        for _ in 0..<3000 {
            let s = String((0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            for camel in [false, true] {
                let fast = Words.split(s, camelCase: camel).map(String.init)
                let general = Words.split(s + " é", camelCase: camel).map(String.init).dropLast()
                #expect(fast == Array(general), "\(s.debugDescription) camelCase: \(camel)")
            }
        }
        for _ in 0..<3000 {
            let s = String((0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            #expect(Words.indexText(s) == Words.indexTextGeneral(s), "\(s.debugDescription)")
        }
        // The scalar loop that serves other text against the Character-based definition.
        let unicode: [String] =
            Array("aZbYzA09 -_.,/\t\r\nMyWindowNS'").map(String.init) + [
                "é", "e\u{301}", "É", "E\u{301}", "\u{301}", "日", "テ", "Ω", "ω", "ß", "İ", "ǅ", "\u{200D}",
                "👍🏽", "🇫🇷", "한", "क्षि", "ก", "Ⅻ", "½", "٣", "\u{00A0}", "—", "’", "ﬁ", "\r\n",
            ]
        for _ in 0..<5000 {
            let s = (0..<Int.random(in: 0...16, using: &rng)).map { _ in unicode.randomElement(using: &rng)! }.joined()
            for camel in [false, true] {
                #expect(
                    Words.split(s, camelCase: camel) == Words.splitByCharacters(s, camelCase: camel),
                    "\(s.debugDescription) camelCase: \(camel)")
            }
        }
        #expect(Words.split("Le Café crème", camelCase: true) == ["Le", "Café", "crème"])
        #expect(Words.split("naïveÉcole e\u{301}A", camelCase: true) == ["naïve", "École", "e\u{301}", "A"])
        #expect(Words.indexText("MyWindowClass") == "MyWindowClass My Window Class")
        #expect(Words.indexText("NSWindow a1B") == "NSWindow a1B")
        #expect(Words.split("MyWindowClass", camelCase: true) == ["My", "Window", "Class"])
        #expect(Words.split("NSWindow", camelCase: true) == ["NSWindow"])
    }
}

@Suite struct TextMatcherFastPathTests {
    /// `TextMatcher.matches` takes a byte path for ASCII values, and for the
    /// ASCII words of other values; on random ASCII patterns and values mostly
    /// ASCII (camel case, digits, separators, CR LF, stars, some accented and
    /// other letters) under every option set it must agree with the general path.
    @Test func asciiMatchAgreesWithTheGeneralPath() {
        var rng = SplitMix64(state: 4242)
        let valueAlphabet = Array("aAbBzZ09 -_.\t\r\nMyWindowClassNSWindowHTML5Parser" + "é e\u{301} É日\u{212A}ßΩ")
        let patternAlphabet = Array("aAbBzZ09 -_.\r\nMyWindowNSW*")
        var checked = 0
        for _ in 0..<4000 {
            let value = String((0..<Int.random(in: 0...20, using: &rng)).map { _ in valueAlphabet.randomElement(using: &rng)! })
            let count = Int.random(in: 0...6, using: &rng)
            var patternText = String((0..<count).map { _ in patternAlphabet.randomElement(using: &rng)! })
            // Often a piece of the value itself, so that matches happen.
            if Bool.random(using: &rng), !value.isEmpty {
                let a = Int.random(in: 0..<value.count, using: &rng)
                let b = Int.random(in: a...value.count, using: &rng)
                let piece = String(Array(value)[a..<b])
                patternText = Bool.random(using: &rng) ? piece : "*" + piece.lowercased() + (Bool.random(using: &rng) ? "*" : "")
            }
            let pattern = TextPattern(
                parts: patternText.split(separator: "*", omittingEmptySubsequences: false)
                    .enumerated().flatMap { i, lit in (i > 0 ? [TextPattern.Part.anyRun] : []) + [.literal(String(lit))] })
            for raw in UInt8(0)..<16 {
                let matcher = TextMatcher(pattern: pattern, options: TextOptions(rawValue: raw))
                let fast = matcher.matches(value)
                let general = matcher.matchesGeneral(value)
                #expect(fast == general, "\(value.debugDescription) ~ \(patternText.debugDescription) options \(raw)")
                checked += fast ? 1 : 0
            }
        }
        #expect(checked > 1000)  // the inputs do produce matches
        // Non-ASCII values and patterns take the general path.
        #expect(
            TextMatcher(pattern: TextPattern(literal: "cafe"), options: [.caseInsensitive, .diacriticInsensitive, .wordBased]).matches("Le Café"))
        #expect(!TextMatcher(pattern: TextPattern(literal: "cafe"), options: [.caseInsensitive, .wordBased]).matches("Le Café"))
        #expect(TextMatcher(pattern: TextPattern(literal: "window"), options: [.caseInsensitive, .wordBased]).matches("MyWindowClass"))
        #expect(!TextMatcher(pattern: TextPattern(literal: "window"), options: [.caseInsensitive, .wordBased]).matches("NSWindow"))
    }
}
