import Foundation

/// A regular-expression comparison: NSPredicate's `MATCHES`.
///
/// The flavour is ICU's, the one NSPredicate uses on Apple platforms:
/// swift-corelibs-foundation's `NSRegularExpression` runs ICU's regex engine
/// on Linux too. The whole value must match (`MATCHES` is anchored at both
/// ends, as in NSPredicate). Options: `c` ignores case (ICU's
/// case-insensitive flag); `d` removes diacritics from the value and from the
/// pattern's text before matching, so `caf[eé]` and `cafe` both match "Café".
public struct RegexTest: Sendable, Hashable {
    public var attribute: AttributeSelector
    public var pattern: String
    /// Only `.caseInsensitive` and `.diacriticInsensitive` mean anything here.
    public var options: TextOptions

    public init(attribute: AttributeSelector, pattern: String, options: TextOptions = []) {
        self.attribute = attribute
        self.pattern = pattern
        self.options = options.intersection([.caseInsensitive, .diacriticInsensitive])
    }
}

/// A compiled ``RegexTest``: build once per query, call ``matches(_:)`` per value.
/// Immutable once made, and so `Sendable` (Foundation's
/// `NSRegularExpression` is: it is documented thread-safe).
public final class RegexMatcher: Sendable {
    let regex: NSRegularExpression
    let foldDiacritics: Bool

    /// Why a pattern does not compile, for the parser's and the plan decoder's errors.
    public struct CompileError: Error, Sendable, CustomStringConvertible {
        public var pattern: String
        public var description: String { "'\(pattern)' is not an ICU regular expression" }
    }

    public init(_ test: RegexTest) throws(CompileError) {
        foldDiacritics = test.options.contains(.diacriticInsensitive)
        let source = foldDiacritics ? test.pattern.folding(options: .diacriticInsensitive, locale: nil) : test.pattern
        var options: NSRegularExpression.Options = []
        if test.options.contains(.caseInsensitive) { options.insert(.caseInsensitive) }
        do {
            // A group, so that `a|b` is anchored as a whole.
            regex = try NSRegularExpression(pattern: "^(?:" + source + ")$", options: options)
        } catch {
            throw CompileError(pattern: test.pattern)
        }
        // `^(?:` + `)$` can be balanced by a pattern such as `a)|(b`; refuse it.
        guard (try? NSRegularExpression(pattern: source, options: options)) != nil else { throw CompileError(pattern: test.pattern) }
    }

    public func matches(_ value: String) -> Bool {
        let s = foldDiacritics ? value.folding(options: .diacriticInsensitive, locale: nil) : value
        return regex.firstMatch(in: s, options: [], range: NSRange(s.startIndex..., in: s)) != nil
    }
}
