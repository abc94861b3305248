import Foundation

/// The single folding function of the store's indexes and of sort order
/// (`package`: the store and the coordinator's merge must fold alike): case and diacritics
/// removed with Foundation's rules, the same rules `TextMatcher` uses.
///
/// Indexes hold folded text and lookups fold their keys the same way, so a
/// value that matches a pattern under any of the `c`/`d` options always folds
/// to something the folded key finds: the indexes over-approximate, and
/// `TextMatcher` gives the final answer. Folding works character by character,
/// so the fold of a substring is a substring of the fold.
package enum Fold {
    /// Characters of a text value kept in the `key` column.
    package static let keyCharacters = 64
    /// Characters of a prefix pattern used against `key` (a margin below
    /// ``keyCharacters`` for folds that lengthen text, such as ß → ss).
    package static let prefixCharacters = 32

    package static func isASCII(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { buffer in
            // Eight bytes at a time: the high bit of any byte marks non-ASCII.
            var i = 0
            let n = buffer.count
            if let base = buffer.baseAddress {
                let raw = UnsafeRawPointer(base)
                while i + 8 <= n {
                    if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
                    i += 8
                }
            }
            while i < n {
                if buffer[i] >= 128 { return false }
                i += 1
            }
            return true
        }
    }

    package static func fold(_ s: String) -> String {
        if isASCII(s) { return s.lowercased() }
        return s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased()
    }

    /// The `key` column of a text value: its folded first characters.
    package static func key(_ s: String) -> String {
        if s.utf8.count <= keyCharacters { return fold(s) }
        return fold(String(s.prefix(keyCharacters)))
    }
}
