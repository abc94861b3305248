import Foundation
import Hashing

/// What a key may do.
///
/// - `master`: manages the keys of every app (create, list, revoke) and reads
///   the cluster's stats; it belongs to no app, so it neither writes nor
///   searches items. `limelight up` writes one to `DATA/master.key`.
/// - `admin`: an app's writes (publish, delete, declare, entities), its
///   searches in every query language, and the keys of its own app.
/// - `search`: an app's searches only (Algolia's search-only key); the parent
///   of secured keys.
package enum KeyRole: String, Sendable, Hashable, CaseIterable, Codable {
    case master, admin, search
}

/// Key values and their hashes.
///
/// A key is `llk_` followed by 64 hexadecimal digits (256 random bits). The
/// store keeps only its SHA-256 (hex); the first 16 hex digits of that hash
/// are the key's package id, which `limelight keys list` shows and `revoke`
/// accepts, so listing keys never reveals one.
package enum APIKey {
    package static let prefix = "llk_"

    package static func generate() -> String {
        var rng = SystemRandomNumberGenerator()
        var out = prefix
        for _ in 0..<32 { out += String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }
        return out
    }

    /// Whether `text` has the form of a plain (not secured) key.
    package static func isPlain(_ text: String) -> Bool {
        text.hasPrefix(prefix) && text.utf8.count == prefix.utf8.count + 64
            && text.utf8.dropFirst(prefix.utf8.count).allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    package static func hash(_ key: String) -> String { hex(SHA256.hash(key.utf8)) }

    package static func id(ofHash hash: String) -> String { String(hash.prefix(16)) }

    package static func id(of key: String) -> String { id(ofHash: hash(key)) }

    /// App names: 1 to 64 of `a-z`, `0-9`, `_` and `-`, starting with a letter
    /// or digit. No dots: an app is one label of the reserved domain that
    /// holds its items (see ``TenantScope``).
    package static func isValidApp(_ app: String) -> Bool {
        guard let first = app.utf8.first, app.utf8.count <= 64 else { return false }
        func ok(_ c: UInt8) -> Bool { (97...122).contains(c) || (48...57).contains(c) }
        return ok(first) && app.utf8.allSatisfy { ok($0) || $0 == 95 || $0 == 45 }
    }

    static func hex<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
