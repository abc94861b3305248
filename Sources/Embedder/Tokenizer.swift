import Foundation

/// BERT's uncased WordPiece tokenizer, as all-MiniLM-L6-v2's `tokenizer.json`
/// configures Hugging Face's fast tokenizer: `BertNormalizer` (clean text, pad CJK
/// ideographs, strip accents, lowercase), `BertPreTokenizer` (split on whitespace,
/// isolate punctuation), `WordPiece` (`##` continuations, `[UNK]` past 100
/// characters), then `[CLS] … [SEP]` truncated to the model's sequence length.
///
/// Each step follows the Rust code of the `tokenizers` library rather than the
/// older Python `BasicTokenizer` where the two differ, since the reference vectors
/// came from the fast tokenizer; in particular lowercasing is per scalar (no
/// final-sigma rule) and runs after accent stripping, as there.
package struct WordPieceTokenizer: Sendable {
    /// Keys are UTF-8 bytes, not `String`s: Swift compares strings by canonical
    /// equivalence, which would merge vocabulary entries the Rust code keeps apart.
    let vocabulary: [[UInt8]: Int32]
    package let unknownID: Int
    package let classID: Int
    package let separatorID: Int
    /// Tokens in a sequence, `[CLS]` and `[SEP]` included.
    package let maxLength: Int
    /// Longer words become one `[UNK]` without being split.
    package let maxCharactersPerWord = 100

    package init(vocabularyFile path: String, maxLength: Int) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EmbedderError(.missingFile, "cannot read the vocabulary", path: path)
        }
        // Lines split on "\n" bytes: as Characters, "\r\n" would be one and could
        // hide a token; the line number is the token id.
        var lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var vocabulary: [[UInt8]: Int32] = [:]
        vocabulary.reserveCapacity(lines.count)
        for (id, line) in lines.enumerated() where vocabulary[Array(line)] == nil {
            vocabulary[Array(line)] = Int32(id)
        }
        func id(_ token: String) throws -> Int {
            guard let id = vocabulary[Array(token.utf8)] else {
                throw EmbedderError(.invalidVocabulary, "the vocabulary lacks \(token)", path: path)
            }
            return Int(id)
        }
        self.vocabulary = vocabulary
        unknownID = try id("[UNK]")
        classID = try id("[CLS]")
        separatorID = try id("[SEP]")
        guard maxLength >= 2 else {
            throw EmbedderError(.unsupportedConfig, "sequence length \(maxLength) leaves no room for [CLS] and [SEP]")
        }
        self.maxLength = maxLength
    }

    /// The token ids the model reads for `text`: `[CLS]`, at most `maxLength - 2`
    /// word pieces (the rest dropped, as the reference truncates), `[SEP]`.
    package func tokenize(_ text: String) -> [Int] {
        var ids = [classID]
        let budget = maxLength - 2
        outer: for word in words(text) {
            for piece in wordPieces(word) {
                if ids.count > budget { break outer }
                ids.append(piece)
            }
        }
        ids.append(separatorID)
        return ids
    }

    /// The normalised, pre-tokenised words of `text`, as arrays of scalars.
    func words(_ text: String) -> [[Unicode.Scalar]] {
        // Clean text and pad CJK ideographs with spaces, so each is its own word.
        var cleaned = String.UnicodeScalarView()
        var ascii = true
        for s in text.unicodeScalars {
            if s.value < 0x80 {
                if s.value == 0 { continue }
                if s == "\t" || s == "\n" || s == "\r" { cleaned.append(" "); continue }
                if s.value < 0x20 || s.value == 0x7F { continue }
                cleaned.append(s)
                continue
            }
            ascii = false
            if s.value == 0xFFFD || Self.isControl(s) { continue }
            if s.properties.isWhitespace {
                cleaned.append(" ")
            } else if Self.isCJK(s.value) {
                cleaned.append(" "); cleaned.append(s); cleaned.append(" ")
            } else {
                cleaned.append(s)
            }
        }
        // Strip accents: canonical decomposition, then drop nonspacing marks.
        // ASCII text has neither, so it skips Foundation's normaliser.
        var stripped: [Unicode.Scalar] = []
        stripped.reserveCapacity(cleaned.count)
        if ascii {
            stripped.append(contentsOf: cleaned)
        } else {
            for s in String(cleaned).decomposedStringWithCanonicalMapping.unicodeScalars
            where s.properties.generalCategory != .nonspacingMark {
                stripped.append(s)
            }
        }
        // Lowercase each scalar (full mappings: one scalar may become several),
        // then split on whitespace and isolate punctuation.
        var words: [[Unicode.Scalar]] = []
        var word: [Unicode.Scalar] = []
        func lowered(_ s: Unicode.Scalar) {
            if Self.isBertWhitespace(s) {
                if !word.isEmpty { words.append(word); word.removeAll(keepingCapacity: true) }
            } else if Self.isPunctuation(s) {
                if !word.isEmpty { words.append(word); word.removeAll(keepingCapacity: true) }
                words.append([s])
            } else {
                word.append(s)
            }
        }
        for s in stripped {
            if s.value < 0x80 {
                lowered(s.value >= 0x41 && s.value <= 0x5A ? Unicode.Scalar(s.value + 32)! : s)
            } else if s.properties.changesWhenLowercased {
                for l in s.properties.lowercaseMapping.unicodeScalars { lowered(l) }
            } else {
                lowered(s)
            }
        }
        if !word.isEmpty { words.append(word) }
        return words
    }

    /// Greedy longest-match-first WordPiece; a word with any unmatched rest, or
    /// longer than `maxCharactersPerWord`, is one `[UNK]`.
    func wordPieces(_ word: [Unicode.Scalar]) -> [Int] {
        if word.count > maxCharactersPerWord { return [unknownID] }
        // UTF-8 offsets of each scalar boundary, so candidates are byte slices.
        var bytes: [UInt8] = []
        var boundaries: [Int] = [0]
        for s in word {
            bytes.append(contentsOf: UTF8.encode(s)!)
            boundaries.append(bytes.count)
        }
        var pieces: [Int] = []
        var start = 0
        var key: [UInt8] = []
        while start < word.count {
            var end = word.count
            var found: Int32?
            while start < end {
                key.removeAll(keepingCapacity: true)
                if start > 0 { key.append(0x23); key.append(0x23) }  // "##"
                key.append(contentsOf: bytes[boundaries[start]..<boundaries[end]])
                if let id = vocabulary[key] { found = id; break }
                end -= 1
            }
            guard let id = found else { return [unknownID] }
            pieces.append(Int(id))
            start = end
        }
        return pieces
    }

    /// Rust's `char::is_whitespace` (the White_Space property), which BERT's
    /// pre-tokenizer splits on.
    static func isBertWhitespace(_ s: Unicode.Scalar) -> Bool {
        if s.value < 0x80 { return s == " " || (s.value >= 0x09 && s.value <= 0x0D) }
        return s.properties.isWhitespace
    }

    /// Controls (other than tab, newline, carriage return, which count as
    /// whitespace), format characters, surrogates, private-use and unassigned
    /// code points: the categories `tokenizers`' `is_control` removes.
    static func isControl(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned: return true
        default: return false
        }
    }

    /// ASCII punctuation (which includes symbols such as `$`, `+`, `<`, `^`, `|`)
    /// or any Unicode punctuation category.
    static func isPunctuation(_ s: Unicode.Scalar) -> Bool {
        let v = s.value
        if v < 0x80 {
            return (v >= 0x21 && v <= 0x2F) || (v >= 0x3A && v <= 0x40) || (v >= 0x5B && v <= 0x60) || (v >= 0x7B && v <= 0x7E)
        }
        switch s.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
            .initialPunctuation, .finalPunctuation, .otherPunctuation:
            return true
        default: return false
        }
    }

    /// The CJK Unified Ideographs blocks BERT treats as one word each (kana and
    /// hangul are not among them, so Japanese kana runs stay words).
    static func isCJK(_ v: UInt32) -> Bool {
        (0x4E00...0x9FFF).contains(v) || (0x3400...0x4DBF).contains(v) || (0x20000...0x2A6DF).contains(v)
            || (0x2A700...0x2B73F).contains(v) || (0x2B740...0x2B81F).contains(v) || (0x2B920...0x2CEAF).contains(v)
            || (0xF900...0xFAFF).contains(v) || (0x2F800...0x2FA1F).contains(v)
    }
}
