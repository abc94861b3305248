import Foundation
import QueryPlan
import SpotlightQuery
import Testing

/// Operators, values, escapes, attribute names, boolean structure, and how
/// each lowers to the plan.
@Suite struct GrammarTests {
    // MARK: Operators and lowering

    @Test func textEqualityAndInequality() {
        #expect(plan(#"title == "x""#) == text("title", "x"))
        #expect(plan(#"title = "x""#) == text("title", "x"))
        #expect(plan(#"title != "x""#) == .and([.exists(.named("title")), .not(text("title", "x"))]))
        let items = [TestItem("x", ["title": "x"]), TestItem("y", ["title": "y"]), TestItem("untitled", ["rating": 1])]
        #expect(matching(#"title != "x""#, items) == ["y"])
        #expect(matching(#"!(title == "x")"#, items) == ["y", "untitled"])
    }

    @Test func multiValuedInequality() {
        let items = [
            TestItem("ab", ["keywords": ["a", "b"]]),
            TestItem("bc", ["keywords": ["b", "c"]]),
            TestItem("none", ["title": "t"]),
        ]
        #expect(matching(#"keywords == "a""#, items) == ["ab"])
        #expect(matching(#"keywords != "a""#, items) == ["bc"])
    }

    @Test func existence() {
        #expect(plan(#"title == "*""#) == .exists(.named("title")))
        #expect(plan(#"title == '**'"#) == .exists(.named("title")))
        #expect(plan("title == *") == .exists(.named("title")))
        #expect(plan(#"title != "*""#) == .not(.exists(.named("title"))))
        #expect(plan(#"title == "*"cd"#) == .exists(.named("title")))
        #expect(plan(#"** == "*""#) == .exists(.allText))
        let items = [TestItem("titled", ["title": ""]), TestItem("untitled", ["rating": 3])]
        #expect(matching(#"title == "*""#, items) == ["titled"])
        #expect(matching(#"title != "*""#, items) == ["untitled"])
    }

    @Test func numericComparisons() {
        #expect(plan("size == 5") == range("size", Bound(5, inclusive: true), Bound(5, inclusive: true)))
        #expect(
            plan("size != 5")
                == .and([
                    .exists(.named("size")),
                    .not(range("size", Bound(5, inclusive: true), Bound(5, inclusive: true))),
                ]))
        #expect(plan("size < 5") == range("size", nil, Bound(5, inclusive: false)))
        #expect(plan("size <= 5") == range("size", nil, Bound(5, inclusive: true)))
        #expect(plan("size > 5") == range("size", Bound(5, inclusive: false), nil))
        #expect(plan("size >= 5") == range("size", Bound(5, inclusive: true), nil))
        #expect(plan("size>=5") == range("size", Bound(5, inclusive: true), nil))
        let items = (1...7).map { TestItem("\($0)", ["size": .number(Double($0))]) } + [TestItem("none", ["title": "t"])]
        #expect(matching("size < 3", items) == ["1", "2"])
        #expect(matching("size <= 3", items) == ["1", "2", "3"])
        #expect(matching("size > 5", items) == ["6", "7"])
        #expect(matching("size >= 5", items) == ["5", "6", "7"])
        #expect(matching("size == 4", items) == ["4"])
        #expect(matching("size != 4", items) == ["1", "2", "3", "5", "6", "7"])
        #expect(matching("InRange(size, 2, 4)", items) == ["2", "3", "4"])
        #expect(matching("InRange( size ,3,3 )", items) == ["3"])
        #expect(matching("InRange(size, 5, 2)", items) == [])
    }

    @Test(arguments: [
        ("42", 42.0), ("-7", -7), ("+7", 7), ("3.25", 3.25), ("-0.5", -0.5), (".5", 0.5), ("5.", 5),
        ("1e3", 1000), ("2.5E-2", 0.025), ("-1e+2", -100), ("0x1F", 31), ("0xff", 255), ("0XBEEF", 48879), ("-0x10", -16),
        ("true", 1), ("false", 0), ("TRUE", 1),
    ])
    func numberNotations(_ written: String, _ value: Double) {
        #expect(plan("n == \(written)") == range("n", Bound(value, inclusive: true), Bound(value, inclusive: true)))
    }

    @Test func booleans() {
        let items = [TestItem("yes", ["allDay": true]), TestItem("no", ["allDay": false])]
        #expect(matching("allDay == true", items) == ["yes"])
        #expect(matching("allDay == false", items) == ["no"])
        #expect(matching("allDay != true", items) == ["no"])
    }

    @Test func quotedNumbersStayTextForEquality() {
        // The store compares a number's canonical text with a quoted value.
        #expect(plan(#"installedSize == "28591""#) == text("installedSize", "28591"))
        let items = [TestItem("a", ["installedSize": 28591]), TestItem("b", ["installedSize": 28592])]
        #expect(matching(#"installedSize == "28591""#, items) == ["a"])
        #expect(matching(#"installedSize == "2859*""#, items) == ["a", "b"])
        #expect(matching("installedSize == 28591", items) == ["a"])
        // An ordering reads a quoted number or date as one.
        #expect(plan(#"installedSize > "10""#) == range("installedSize", Bound(10, inclusive: false), nil))
        #expect(plan(#"d >= '2026-11-01'"#) == range("d", Bound(seconds("2026-11-01"), inclusive: true), nil))
        #expect(plan(#"InRange(n, "1", '0x10')"#) == range("n", Bound(1, inclusive: true), Bound(16, inclusive: true)))
    }

    @Test func unquotedWords() {
        #expect(plan("title == Window") == text("title", "Window"))
        #expect(plan("title ==[wc] window") == text("title", "window", [.wordBased, .caseInsensitive]))
        #expect(plan("title == Win*") == text("title", "Win*"))
        #expect(plan(#"title == 5\*3"#) == text("title", #"5\*3"#))
        #expect(plan("version == 1.2.3") == text("version", "1.2.3"))
        #expect(plan("title == rock&roll") == text("title", "rock&roll"))
        #expect(plan("title == Hello!") == text("title", "Hello!"))
        #expect(plan("title == 0x") == text("title", "0x"))
        #expect(plan("title==Window&&size>2") == .and([text("title", "Window"), range("size", Bound(2, inclusive: false), nil)]))
    }

    // MARK: Modifiers

    @Test func modifierPlacements() {
        let cd: TextOptions = [.caseInsensitive, .diacriticInsensitive]
        #expect(plan(#"title == "x"cd"#) == text("title", "x", cd))
        #expect(plan(#"title == "x"dc"#) == text("title", "x", cd))
        #expect(plan(#"title ==[cd] "x""#) == text("title", "x", cd))
        #expect(plan(#"title == [cd] "x""#) == text("title", "x", cd))
        #expect(plan(#"title ==[c] "x"d"#) == text("title", "x", cd))
        #expect(plan(#"title ==[] "x""#) == text("title", "x"))
        #expect(plan(#"title == "x"cdwt"#) == text("title", "x", [.caseInsensitive, .diacriticInsensitive, .wordBased, .tokenized]))
        #expect(plan(#"title == "x"c&&a=="y""#) == .and([text("title", "x", .caseInsensitive), text("a", "y")]))
    }

    // MARK: Strings

    @Test func quotesAndEscapes() {
        #expect(plan(#"title == 'Window'"#) == text("title", "Window"))
        #expect(plan(#"title == 'Window'w"#) == text("title", "Window", .wordBased))
        #expect(plan(#"title == "it's""#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: "it's"))))
        #expect(plan(#"title == 'say "hi"'"#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: #"say "hi""#))))
        #expect(plan(#"title == "say \"hi\"""#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: #"say "hi""#))))
        #expect(plan(#"title == 'it\'s'"#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: "it's"))))
        #expect(plan(#"title == "back\\slash""#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: #"back\slash"#))))
        #expect(plan(#"title == "5 \* 3""#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: "5 * 3"))))
        #expect(plan(#"title == "\*""#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: "*"))))
        #expect(plan(#"title == """#) == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: ""))))
        #expect(plan("title == \"line\nbreak\"") == .text(TextTest(attribute: .named("title"), pattern: TextPattern(literal: "line\nbreak"))))
    }

    @Test func escapedStarIsLiteralWhenMatching() {
        let items = titled("title", ["5 * 3", "5 x 3", "*", "anything", #"a\b"#, #"say "hi""#])
        #expect(matching(#"title == "5 \* 3""#, items) == ["5 * 3"])
        #expect(matching(#"title == "\*""#, items) == ["*"])
        #expect(matching(#"title == "*\**""#, items) == ["5 * 3", "*"])
        #expect(matching(#"title == "a\\b""#, items) == [#"a\b"#])
        #expect(matching(#"title == 'say "hi"'"#, items) == [#"say "hi""#])
        #expect(matching(#"title == "say \"*\"""#, items) == [#"say "hi""#])
    }

    @Test func unicodeValues() {
        let items = titled("title", ["Café crème", "Cafe creme", "東京タワー", "🇫🇷 Paris"])
        #expect(matching(#"title == "Café*""#, items) == ["Café crème"])
        #expect(matching(#"title == "cafe*"cd"#, items) == ["Café crème", "Cafe creme"])
        #expect(matching(#"title == "東京*""#, items) == ["東京タワー"])
        #expect(matching(#"title == "🇫🇷*""#, items) == ["🇫🇷 Paris"])
        let caps = titled("title", ["CAFÉ CRÈME", "café crème", "Cafe Creme", "ÉCOLE", "école", "Ecole"])
        #expect(matching(#"title == "café*"c"#, caps) == ["CAFÉ CRÈME", "café crème"])
        #expect(matching(#"title == "école"c"#, caps) == ["ÉCOLE", "école"])
        #expect(matching(#"title == "ECOLE"cd"#, caps) == ["ÉCOLE", "école", "Ecole"])
        #expect(matching(#"title == "École"d"#, caps) == ["Ecole"])
        #expect(matching(#"title == "creme"wcd"#, caps) == ["CAFÉ CRÈME", "café crème", "Cafe Creme"])
    }

    // MARK: Attribute names

    @Test(arguments: [
        ("kMDItemTitle", "title"), ("kMDItemDisplayName", "displayName"), ("kMDItemAuthors", "authorNames"),
        ("kMDItemKeywords", "keywords"), ("kMDItemTextContent", "textContent"),
        ("kMDItemDescription", "contentDescription"), ("kMDItemContentCreationDate", "contentCreationDate"),
        ("kMDItemGPSStatus", "GPSStatus"), ("kMDItemEXIFVersion", "EXIFVersion"), ("kMDItemURL", "url"),
        ("kMDItemFSName", "fileName"), ("kMDItemFNumber", "fNumber"), ("kMDItemRecipients", "recipientNames"),
        ("kMDItemDurationSeconds", "duration"), ("kMDItemNumberOfPages", "pageCount"),
        ("title", "title"), ("com.example.rating", "com.example.rating"), ("my-attr_2", "my-attr_2"),
        ("_private", "_private"), ("kMDItem", "kMDItem"), ("kMDItemx", "kMDItemx"), ("InRange", "InRange"),
    ])
    func attributeNames(_ written: String, _ stored: String) {
        #expect(plan(#"\#(written) == "v""#) == text(stored, "v"))
    }

    @Test func metadataKeysInRanges() {
        #expect(plan("InRange(kMDItemDurationSeconds, 1, 2)") == range("duration", Bound(1, inclusive: true), Bound(2, inclusive: true)))
        #expect(
            plan("kMDItemContentCreationDate > $time.iso(2026-01-01)")
                == range("contentCreationDate", Bound(seconds("2026-01-01"), inclusive: false), nil))
    }

    @Test func everyAttributeTakesUnquotedNumbersAsText() {
        #expect(plan("** == 2026") == .text(TextTest(attribute: .allText, pattern: TextPattern(literal: "2026"))))
        #expect(
            plan("* != 2026-11-01")
                == .and([
                    .exists(.allText),
                    .not(.text(TextTest(attribute: .allText, pattern: TextPattern(literal: "2026-11-01")))),
                ]))
    }

    // MARK: Boolean structure

    @Test func andBindsTighterThanOr() {
        let a = text("a", "1"), b = text("b", "2"), c = text("c", "3")
        #expect(plan(#"a == "1" || b == "2" && c == "3""#) == .or([a, .and([b, c])]))
        #expect(plan(#"a == "1" && b == "2" || c == "3""#) == .or([.and([a, b]), c]))
        #expect(plan(#"(a == "1" || b == "2") && c == "3""#) == .and([.or([a, b]), c]))
        #expect(plan(#"a == "1" || (b == "2" && c == "3")"#) == plan(#"a == "1" || b == "2" && c == "3""#))
        let items = [
            TestItem("a", ["a": "1"]),
            TestItem("bc", ["b": "2", "c": "3"]),
            TestItem("b", ["b": "2"]),
            TestItem("ac", ["a": "1", "c": "3"]),
        ]
        #expect(matching(#"a == "1" || b == "2" && c == "3""#, items) == ["a", "bc", "ac"])
        #expect(matching(#"(a == "1" || b == "2") && c == "3""#, items) == ["bc", "ac"])
    }

    @Test func flattening() {
        let a = text("a", "1"), b = text("b", "2"), c = text("c", "3")
        #expect(plan(#"a == "1" && (b == "2" && c == "3")"#) == .and([a, b, c]))
        #expect(plan(#"((a == "1")) || ((b == "2") || c == "3")"#) == .or([a, b, c]))
    }

    @Test func negation() {
        let a = text("a", "1"), b = text("b", "2")
        #expect(plan(#"!a == "1""#) == .not(a))
        #expect(plan(#"! a == "1""#) == .not(a))
        #expect(plan(#"!(a == "1")"#) == .not(a))
        #expect(plan(#"!!a == "1""#) == a)
        #expect(plan(#"!(a == "1" || b == "2")"#) == .not(.or([a, b])))
        #expect(plan(#"!a == "1" && b == "2""#) == .and([.not(a), b]))
        #expect(
            plan(#"a != "1" && !(b != "2")"#)
                == .and([
                    .exists(.named("a")), .not(a),
                    .not(.and([.exists(.named("b")), .not(b)])),
                ]))
        let items = [TestItem("a", ["a": "1"]), TestItem("b", ["b": "2"]), TestItem("ab", ["a": "1", "b": "2"])]
        #expect(matching(#"!(a == "1") && b == "2""#, items) == ["b"])
        #expect(matching(#"!(a == "1" && b == "2")"#, items) == ["a", "b"])
    }

    @Test func whitespaceIsFree() {
        let expected = plan(#"a == "1" && b == "2""#)
        #expect(plan("  a==\"1\"&&b==\"2\"  ") == expected)
        #expect(plan("\ta ==\n\"1\"\r\n&&\n b\t== \"2\"") == expected)
    }
}
