import Foundation

/// Word boundaries, shared by matching and by the store's word index so the
/// two always agree.
public enum Words {
    @inline(__always)
    static func isWordScalar(_ u: Unicode.Scalar) -> Bool {
        let p = u.properties
        return p.isAlphabetic || p.numericType != nil || p.generalCategory == .nonspacingMark
            || p.generalCategory == .spacingMark
    }

    /// Splits text into words at every character that is not a letter, digit
    /// or combining mark. With `camelCase`, a lowercase letter followed by an
    /// uppercase one is also a boundary ("MyWindowClass" → My, Window, Class;
    /// "NSWindow" stays one word, as Apple documents).
    public static func split(_ s: String, camelCase: Bool) -> [Substring] {
        // ASCII text is most text, and Unicode property lookups per character
        // dominated indexing; the byte loop below gives the same answer.
        if let ascii = asciiSplit(s, camelCase: camelCase) { return ascii }
        return scalarSplit(s, camelCase: camelCase)
    }

    /// The definition of ``split(_:camelCase:)``, a `Character` at a time: a
    /// character is a word character when its first scalar is a letter, digit
    /// or combining mark, and a lowercase character followed by an uppercase
    /// one is a camel-case boundary. The faster paths must agree with it (a
    /// randomized test compares them).
    public static func splitByCharacters(_ s: String, camelCase: Bool) -> [Substring] {
        var out: [Substring] = []
        var start: String.Index?
        var prevLower = false
        var i = s.startIndex
        while i < s.endIndex {
            let ch = s[i]
            let first = ch.unicodeScalars.first!
            let isWord = isWordScalar(first)
            if isWord {
                if let st = start {
                    if camelCase, prevLower, ch.isUppercase {
                        out.append(s[st..<i])
                        start = i
                    }
                } else {
                    start = i
                }
                prevLower = ch.isLowercase
            } else {
                if let st = start { out.append(s[st..<i]); start = nil }
                prevLower = false
            }
            i = s.index(after: i)
        }
        if let st = start { out.append(s[st..<s.endIndex]) }
        return out
    }

    /// ``splitByCharacters(_:camelCase:)`` a scalar at a time, with no
    /// grapheme breaking: ASCII scalars are decided inline and only the others
    /// look up their properties, so a long description with one accented
    /// letter costs about what an ASCII one does (it cost fifty times more,
    /// and dominated queries that matched such descriptions). A scalar that
    /// extends a character (a combining mark, a joiner, a spacing mark) counts
    /// with the one before it, as it does inside a `Character` — unless that
    /// one is a control character, which nothing extends. The two differ only
    /// where grapheme rules go beyond that (prepended scalars, a few letters
    /// that are spacing marks for grapheme breaking only): text no word search
    /// is about.
    static func scalarSplit(_ s: String, camelCase: Bool) -> [Substring] {
        var out: [Substring] = []
        let scalars = s.unicodeScalars
        var start: String.Index?
        var prevLower = false
        var i = scalars.startIndex
        // Nothing extends the start of the text or a control character.
        var afterControl = true
        while i < scalars.endIndex {
            let u = scalars[i]
            let v = u.value
            let isWord: Bool, isUpper: Bool, isLower: Bool
            if v < 128 {
                isLower = v >= 97 && v <= 122
                isUpper = v >= 65 && v <= 90
                isWord = isLower || isUpper || (v >= 48 && v <= 57)
                afterControl = v < 32 || v == 127
            } else {
                let p = u.properties
                if !afterControl, p.isGraphemeExtend || p.generalCategory == .spacingMark || v == 0x200D {
                    i = scalars.index(after: i)
                    continue
                }
                isWord = isWordScalar(u)
                isUpper = Character(u).isUppercase
                isLower = Character(u).isLowercase
                switch p.generalCategory {
                case .control, .lineSeparator, .paragraphSeparator: afterControl = true
                case .format: afterControl = v != 0x200C && v != 0x200D
                default: afterControl = false
                }
            }
            if isWord {
                if let st = start {
                    if camelCase, prevLower, isUpper {
                        out.append(s[st..<i])
                        start = i
                    }
                } else {
                    start = i
                }
                prevLower = isLower
            } else {
                if let st = start { out.append(s[st..<i]); start = nil }
                prevLower = false
            }
            i = scalars.index(after: i)
        }
        if let st = start { out.append(s[st..<s.endIndex]) }
        return out
    }

    /// `split` for pure ASCII: words are runs of letters and digits, and an
    /// a–z letter followed by an A–Z letter is a camel-case boundary. Nil when
    /// the text is not ASCII (or not contiguous UTF-8).
    static func asciiSplit(_ s: String, camelCase: Bool) -> [Substring]? {
        let result = s.utf8.withContiguousStorageIfAvailable { bytes -> [Substring]? in
            var i = 0
            while i < bytes.count {
                if bytes[i] >= 128 { return nil }
                i += 1
            }
            var out: [Substring] = []
            let utf8 = s.utf8
            func index(_ offset: Int) -> String.Index { utf8.index(utf8.startIndex, offsetBy: offset) }
            var start = -1
            var prevLower = false
            for i in 0..<bytes.count {
                let b = bytes[i]
                let lower = b >= 97 && b <= 122
                let upper = b >= 65 && b <= 90
                if lower || upper || (b >= 48 && b <= 57) {
                    if start >= 0 {
                        if camelCase, prevLower, upper {
                            out.append(s[index(start)..<index(i)])
                            start = i
                        }
                    } else {
                        start = i
                    }
                    prevLower = lower
                } else {
                    if start >= 0 { out.append(s[index(start)..<index(i)]); start = -1 }
                    prevLower = false
                }
            }
            if start >= 0 { out.append(s[index(start)..<s.endIndex]) }
            return out
        }
        return result ?? nil
    }

    /// The text the store gives its word index for one value: every token,
    /// and the camel-case parts of tokens that have them, so both `w` and `t`
    /// comparisons find their candidates there.
    public static func indexText(_ s: String) -> String {
        // Most ASCII text has no a–z letter right before an A–Z one, so no
        // camel-case part: it is its own index text, found with one byte scan.
        var copy = s
        let noCamel = copy.withUTF8 { bytes -> Bool in
            var prevLower = false
            for b in bytes {
                if b >= 128 { return false }
                if prevLower, b >= 65, b <= 90 { return false }
                prevLower = b >= 97 && b <= 122
            }
            return true
        }
        if noCamel { return s }
        return indexTextGeneral(s)
    }

    /// ``indexText(_:)`` without its ASCII shortcut: the reference a test compares it with.
    public static func indexTextGeneral(_ s: String) -> String {
        var extra: [Substring] = []
        for token in split(s, camelCase: false) {
            let parts = split(String(token), camelCase: true)
            if parts.count > 1 { extra += parts }
        }
        if extra.isEmpty { return s }
        return s + " " + extra.joined(separator: " ")
    }
}

/// Decides whether one text value matches a Spotlight text comparison.
///
/// This is the single definition of text semantics; the store uses its word
/// and trigram indexes only to find candidates and asks this for the answer.
///
/// - Without `w` or `t` the pattern is matched against the whole value, `*`
///   matching any run of characters.
/// - With `w` both value and pattern are split into words (camel-case aware);
///   the pattern's words must match a consecutive run of the value's words,
///   each glob-matched on its own.
/// - With `t` the pattern's tokens must each match one of the value's tokens,
///   in any order (tokens split at non-word characters only; with `w` too,
///   camel-case boundaries also split).
/// - `c` folds case (Unicode) and `d` strips diacritics, on both sides.
public struct TextMatcher: Sendable {
    public let options: TextOptions
    let whole: [GlobPart]
    let words: [[GlobPart]]
    /// The pattern as folded ASCII bytes with ``starByte`` for `*`, when the
    /// pattern is ASCII without CR: `whole`, and `words` when there are any.
    /// ASCII values are then matched byte by byte (``asciiMatches``), with no
    /// allocation per word; anything else takes the general path.
    let asciiWhole: [UInt8]?
    let asciiWords: [[UInt8]]?

    enum GlobPart: Sendable, Hashable {
        case literal([Character])
        case star
    }

    public init(pattern: TextPattern, options: TextOptions) {
        self.options = options
        var whole: [GlobPart] = []
        for p in pattern.parts {
            switch p {
            case .anyRun: whole.append(.star)
            case .literal(let s): whole.append(.literal(Array(Self.fold(s, options))))
            }
        }
        self.whole = whole
        if options.contains(.wordBased) || options.contains(.tokenized) {
            // Split the pattern into words; a star sticks to the word it touches.
            var words: [[GlobPart]] = []
            var current: [GlobPart] = []
            let camel = options.contains(.wordBased)
            for p in pattern.parts {
                switch p {
                case .anyRun: current.append(.star)
                case .literal(let s):
                    // Split the literal, keeping track of whether it starts or ends mid-word.
                    var idx = s.startIndex
                    var wordStart: String.Index?
                    var prevLower = false
                    func flushWord(upTo end: String.Index) {
                        if let ws = wordStart {
                            current.append(.literal(Array(Self.fold(String(s[ws..<end]), options))))
                            wordStart = nil
                        }
                    }
                    while idx < s.endIndex {
                        let ch = s[idx]
                        if Words.isWordScalar(ch.unicodeScalars.first!) {
                            if wordStart != nil, camel, prevLower, ch.isUppercase {
                                flushWord(upTo: idx)
                                words.append(current); current = []
                            }
                            if wordStart == nil { wordStart = idx }
                            prevLower = ch.isLowercase
                        } else {
                            flushWord(upTo: idx)
                            if !current.isEmpty { words.append(current); current = [] }
                            prevLower = false
                        }
                        idx = s.index(after: idx)
                    }
                    flushWord(upTo: s.endIndex)
                }
            }
            if !current.isEmpty { words.append(current) }
            self.words = words
        } else {
            self.words = []
        }
        self.asciiWhole = Self.asciiBytes(whole)
        let asciiWords = self.words.map(Self.asciiBytes)
        self.asciiWords = asciiWords.contains { $0 == nil } ? nil : asciiWords.map { $0! }
    }

    /// Marks `*` in an ASCII byte pattern (a byte no ASCII text holds).
    static let starByte: UInt8 = 0xFF

    /// Glob parts as bytes, when every character is ASCII and not CR (CR LF is
    /// one `Character` but two bytes, so it must take the general path).
    static func asciiBytes(_ parts: [GlobPart]) -> [UInt8]? {
        var out: [UInt8] = []
        for part in parts {
            switch part {
            case .star: out.append(starByte)
            case .literal(let cs):
                for c in cs {
                    guard c.utf8.count == 1, let b = c.utf8.first, b < 128, b != 13 else { return nil }
                    out.append(b)
                }
            }
        }
        return out
    }

    public init(_ test: TextTest) {
        self.init(pattern: test.pattern, options: test.options)
    }

    public func matches(_ value: String) -> Bool {
        var value = value
        if let fast = value.withUTF8({ asciiMatches($0) }) { return fast }
        if let mixed = mixedWordMatches(value) { return mixed }
        return matchesGeneral(value)
    }

    /// `w`/`t` over a value that is not all ASCII, with an ASCII pattern: the
    /// general split, but each ASCII token compared byte by byte and only the
    /// others folded (a long description with a few accented words no longer
    /// folds every word through Foundation). Nil when it does not apply.
    func mixedWordMatches(_ value: String) -> Bool? {
        let tokenized = options.contains(.tokenized)
        guard tokenized || options.contains(.wordBased), let pw = asciiWords, !pw.isEmpty else { return nil }
        let lower = options.contains(.caseInsensitive)
        let tokens = Words.split(value, camelCase: options.contains(.wordBased))
        // A token's folded characters, made only for tokens that are not ASCII.
        var folded: [Int: [Character]] = [:]
        func match(_ j: Int, _ t: Int) -> Bool {
            let token = tokens[t]
            var copy = token
            if let r = copy.withUTF8({ bytes -> Bool? in
                for b in bytes where b >= 128 || b == 13 { return nil }
                return Self.asciiGlob(pw[j], bytes, 0, bytes.count, lower: lower)
            }) {
                return r
            }
            if folded[t] == nil { folded[t] = Array(Self.fold(String(token), options)) }
            return Self.glob(words[j], folded[t]!)
        }
        if tokenized {
            return pw.indices.allSatisfy { j in tokens.indices.contains { match(j, $0) } }
        }
        guard tokens.count >= pw.count else { return false }
        for first in 0...(tokens.count - pw.count) {
            var ok = true
            for j in 0..<pw.count where !match(j, first + j) {
                ok = false
                break
            }
            if ok { return true }
        }
        return false
    }

    /// The answer for an ASCII value without CR, byte by byte; nil when the
    /// value or the pattern needs the general path. Agrees with
    /// ``matchesGeneral(_:)`` (a randomized test compares the two): for ASCII,
    /// folding is lowercasing A–Z (`d` changes nothing), words are runs of
    /// letters and digits (``Words/asciiSplit(_:camelCase:)``), and every byte
    /// is one `Character`.
    func asciiMatches(_ text: UnsafeBufferPointer<UInt8>) -> Bool? {
        let wordMode = options.contains(.tokenized) || options.contains(.wordBased)
        if wordMode {
            guard let pw = asciiWords, !pw.isEmpty else { return nil }
        } else {
            guard asciiWhole != nil else { return nil }
        }
        for b in text where b >= 128 || b == 13 { return nil }
        let lower = options.contains(.caseInsensitive)
        guard wordMode, let pw = asciiWords else {
            return Self.asciiGlob(asciiWhole!, text, 0, text.count, lower: lower)
        }
        let camel = options.contains(.wordBased)
        // Token ranges, as Words.asciiSplit draws them.
        var starts: [Int] = [], ends: [Int] = []
        var start = -1
        var prevLower = false
        for i in 0..<text.count {
            let b = text[i]
            let isLower = b >= 97 && b <= 122
            let isUpper = b >= 65 && b <= 90
            if isLower || isUpper || (b >= 48 && b <= 57) {
                if start >= 0 {
                    if camel, prevLower, isUpper {
                        starts.append(start); ends.append(i)
                        start = i
                    }
                } else {
                    start = i
                }
                prevLower = isLower
            } else {
                if start >= 0 { starts.append(start); ends.append(i); start = -1 }
                prevLower = false
            }
        }
        if start >= 0 { starts.append(start); ends.append(text.count) }
        if options.contains(.tokenized) {
            return pw.allSatisfy { w in starts.indices.contains { Self.asciiGlob(w, text, starts[$0], ends[$0], lower: lower) } }
        }
        guard starts.count >= pw.count else { return false }
        for first in 0...(starts.count - pw.count) {
            var ok = true
            for j in 0..<pw.count where !Self.asciiGlob(pw[j], text, starts[first + j], ends[first + j], lower: lower) {
                ok = false
                break
            }
            if ok { return true }
        }
        return false
    }

    /// ``glob(_:_:)`` over `text[from..<to]`, lowercasing A–Z when `lower`.
    @inline(__always)
    static func asciiGlob(_ p: [UInt8], _ text: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, lower: Bool) -> Bool {
        var pi = 0, ti = from
        var starP = -1, starT = from
        while ti < to {
            var c = text[ti]
            if lower, c >= 65, c <= 90 { c += 32 }
            if pi < p.count, p[pi] == c {
                pi += 1; ti += 1
            } else if pi < p.count, p[pi] == starByte {
                starP = pi; starT = ti; pi += 1
            } else if starP >= 0 {
                pi = starP + 1; starT += 1; ti = starT
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == starByte { pi += 1 }
        return pi == p.count
    }

    /// The reference definition, for any text; ``matches(_:)`` takes a byte
    /// path for ASCII that must agree with it.
    public func matchesGeneral(_ value: String) -> Bool {
        if options.contains(.tokenized) {
            let tokens = Words.split(value, camelCase: options.contains(.wordBased)).map { Array(Self.fold(String($0), options)) }
            if words.isEmpty { return whole.contains(.star) ? !tokens.isEmpty || Self.glob(whole, []) : false }
            return words.allSatisfy { w in tokens.contains { Self.glob(w, $0) } }
        }
        if options.contains(.wordBased) {
            let tokens = Words.split(value, camelCase: true).map { Array(Self.fold(String($0), options)) }
            if words.isEmpty { return whole.contains(.star) ? !tokens.isEmpty : false }
            guard tokens.count >= words.count else { return false }
            for start in 0...(tokens.count - words.count) {
                var ok = true
                for j in 0..<words.count where !Self.glob(words[j], tokens[start + j]) {
                    ok = false
                    break
                }
                if ok { return true }
            }
            return false
        }
        return Self.glob(whole, Array(Self.fold(value, options)))
    }

    static func fold(_ s: String, _ options: TextOptions) -> String {
        var f: String.CompareOptions = []
        if options.contains(.caseInsensitive) { f.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { f.insert(.diacriticInsensitive) }
        if f.isEmpty { return s }
        // Fast path: pure ASCII needs no Unicode tables.
        if s.utf8.allSatisfy({ $0 < 128 }) {
            return options.contains(.caseInsensitive) ? s.lowercased() : s
        }
        var out = s.folding(options: f, locale: nil)
        if options.contains(.caseInsensitive) { out = out.lowercased() }
        return out
    }

    /// Glob match with `*` only: iterative, backtracking to the last star.
    static func glob(_ pattern: [GlobPart], _ text: [Character]) -> Bool {
        // Flatten to characters with a star marker.
        var p: [Character?] = []
        for part in pattern {
            switch part {
            case .star: p.append(nil)
            case .literal(let cs): p += cs.map { Optional($0) }
            }
        }
        var pi = 0, ti = 0
        var starP = -1, starT = 0
        while ti < text.count {
            if pi < p.count, let c = p[pi], c == text[ti] {
                pi += 1; ti += 1
            } else if pi < p.count, p[pi] == nil {
                starP = pi; starT = ti; pi += 1
            } else if starP >= 0 {
                pi = starP + 1; starT += 1; ti = starT
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == nil { pi += 1 }
        return pi == p.count
    }
}

/// The text form of a number, for text comparisons against numeric values
/// (`installedSize == "28591"`): integral values without a decimal point.
public func canonicalText(_ d: Double) -> String {
    if d.rounded() == d, abs(d) < 1e15 { return String(Int64(d)) }
    return String(d)
}
