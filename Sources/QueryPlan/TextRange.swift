import Foundation

/// One end of a text range.
public struct TextBound: Sendable, Hashable {
    public var value: String
    public var inclusive: Bool
    public init(_ value: String, inclusive: Bool) {
        self.value = value
        self.inclusive = inclusive
    }
}

/// An ordering of text: the attribute's text values that lie between the
/// bounds (NSPredicate's `<`, `<=`, `>`, `>=` and `BETWEEN` with text).
///
/// The order is Foundation's `compare(_:)`, which NSPredicate uses: without
/// options, canonically equivalent texts are equal ("é" precomposed or as
/// `e` and a combining accent) and the rest orders by the code points of the
/// canonical decompositions, so "Zoë" sorts before "Zof" and every capital
/// before every small letter ("Zoe" < "apple"). `c` ignores case and `d`
/// diacritics, and either one also ignores character width, as NSPredicate's
/// options do (full-width "Ａ" is "A"). Numbers, dates and other values that
/// are not text never lie in a text range, as Foundation never orders a text
/// against a number.
public struct TextRangeTest: Sendable, Hashable {
    public var attribute: String
    public var lower: TextBound?
    public var upper: TextBound?
    /// `.caseInsensitive` and `.diacriticInsensitive` only.
    public var options: TextOptions

    public init(attribute: String, lower: TextBound? = nil, upper: TextBound? = nil, options: TextOptions = []) {
        self.attribute = attribute
        self.lower = lower
        self.upper = upper
        self.options = options.intersection([.caseInsensitive, .diacriticInsensitive])
    }

    /// Foundation's comparison options for `options`.
    var compareOptions: String.CompareOptions {
        var o: String.CompareOptions = []
        if options.contains(.caseInsensitive) { o.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { o.insert(.diacriticInsensitive) }
        if !o.isEmpty { o.insert(.widthInsensitive) }
        return o
    }

    /// How `a` orders against `b` under the test's options.
    public func compare(_ a: String, _ b: String) -> ComparisonResult {
        a.compare(b, options: compareOptions)
    }

    /// Whether a text value lies in the range.
    public func contains(_ text: String) -> Bool {
        if let l = lower {
            let c = compare(text, l.value)
            if c == .orderedAscending || (c == .orderedSame && !l.inclusive) { return false }
        }
        if let u = upper {
            let c = compare(text, u.value)
            if c == .orderedDescending || (c == .orderedSame && !u.inclusive) { return false }
        }
        return true
    }
}
