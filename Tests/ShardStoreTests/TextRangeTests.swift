import Foundation
import Items
import QueryPlan
import ShardStore
import Testing

/// Text ranges over values whose folds order as Foundation does and values
/// whose folds do not (full-width letters fold to themselves but compare as
/// their ASCII twins), keys cut at 64 characters: every bound, option and inclusivity against ``Reference``.
@Suite struct TextRangeTests {
    static let titles = [
        "window", "Window", "Ｗｉｎｄｏｗ", "ｗｉｎｄｏｗｓ", "Café", "cafe", "CAFÉ noir", "ÉCOLE", "Straße", "strasse", "zebra", "Zebra",
        "Ωmega", "日本語", "ﬀ", "", "a", "B", "x11", "Bob",
        String(repeating: "m", count: 70) + "a", String(repeating: "m", count: 70) + "z", String(repeating: "Ｍ", count: 70),
    ]
    static let bounds = [
        "", "a", "B", "cafe", "Café", "CAFE NOIR", "ecole", "m", String(repeating: "m", count: 70) + "b",
        "straße", "Window", "WINDOWS", "ｗｉｎｄｏｗ", "x", "Zebra", "ω", "日",
    ]

    @Test func everyBoundAndOptionAgreesWithTheDefinition() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let items: [JSONValue] = Self.titles.enumerated().map { i, t in
            .object(["uniqueIdentifier": .string("t\(i)"), "domainIdentifier": .string("org.a"), "attributes": .object(["title": .string(t)])])
        }
        try store.put(items)
        let decoder = ItemDecoder()
        let decoded = try items.map { try decoder.decode($0) }
        var checked = 0, selective = 0
        for options in ["", "c", "d", "cd"] {
            let ends: [String?] = [nil] + Self.bounds
            for low in ends {
                for high in ends {
                    for inclusive in [true, false] {
                        let test = TextRangeTest(
                            attribute: "title", lower: low.map { TextBound($0, inclusive: inclusive) },
                            upper: high.map { TextBound($0, inclusive: !inclusive) }, options: TextOptions(letters: options)!)
                        let p = QueryPlan.Predicate.textRange(test)
                        let expected = Set(decoded.filter { Reference.matches(p, $0) }.map(\.uniqueIdentifier))
                        #expect(try store.idSet(p) == expected, "\(test)")
                        checked += 1
                        if !expected.isEmpty, expected.count < items.count { selective += 1 }
                    }
                }
            }
        }
        #expect(checked == 4 * 18 * 18 * 2)
        #expect(selective > checked / 2)
    }
}
