import Foundation
import Hashing

/// Secured API keys as Algolia's own clients make them
/// (`generate_secured_api_key`): `base64(hex(hmac_sha256(parentKey, params)) + params)`,
/// keyed by the parent search key itself and naming no parent.
///
/// The server can check such a key only with the parent's value, so the key
/// store keeps every search key sealed (``KeyStore``; docs/algolia.md has the
/// trade-off) and tries the live search keys until one signs the params.
/// Restrictions read: `filters`, `validUntil`, `restrictIndices` (an
/// index's domain, see `AlgoliaIndex`), `userToken`; `restrictSources` and
/// `referers` are accepted and not checked; any other parameter is refused,
/// naming it, rather than silently not imposed.
package enum AlgoliaSecuredKey {
    package struct Parsed: Sendable, Hashable {
        package var signature: String
        package var params: String
        package var restrictions: KeyRestrictions
    }

    /// The key taken apart, or nil when it is not of this form.
    package static func parse(_ key: String) throws(TenancyError) -> Parsed? {
        guard let data = Data(base64Encoded: key), let text = String(data: data, encoding: .utf8), text.utf8.count > 64 else { return nil }
        let signature = String(text.prefix(64))
        guard signature.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        let params = String(text.dropFirst(64))
        var r = KeyRestrictions()
        for pair in params.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2, let name = kv[0].removingPercentEncoding,
                let value = kv[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            else { return nil }
            switch name {
            case "filters": r.filters = value
            case "userToken": r.userToken = value
            case "validUntil":
                guard let n = Int64(value) else { throw TenancyError(.invalidKey, "the secured key's validUntil is not a number of seconds") }
                r.validUntil = Date(timeIntervalSince1970: TimeInterval(n))
            case "restrictIndices":
                r.restrictDomains = value.split(separator: ",").map { "algolia." + AlgoliaIndexLabel.label(String($0)) }
            case "restrictSources", "referers": break
            default:
                throw TenancyError(
                    .invalidKey, "the secured key imposes the search parameter '\(name)', which Limelight does not impose yet: use filters")
            }
        }
        return Parsed(signature: signature, params: params, restrictions: r)
    }

    /// Whether `parentKey` signed the params (constant time).
    package static func verify(_ p: Parsed, parentKey: String) -> Bool {
        let mac = HMACSHA256.authenticationCode(for: Array(p.params.utf8), key: Array(parentKey.utf8))
        let expected = Array(APIKey.hex(mac).utf8), got = Array(p.signature.utf8)
        guard expected.count == got.count else { return false }
        var diff: UInt8 = 0
        for (a, b) in zip(expected, got) { diff |= a ^ b }
        return diff == 0
    }
}

/// An Algolia index name as one domain label: bytes other than ASCII
/// letters, digits, `_` and `-` as `%XX` (so `a.b` is not an index inside `a`).
package enum AlgoliaIndexLabel {
    package static func label(_ index: String) -> String {
        var out = ""
        for b in index.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "-"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += String(format: "%%%02X", b)
            }
        }
        return out
    }
}
