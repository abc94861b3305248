import Foundation
import Hashing
import Items
import SearchParameters

/// What a secured key narrows its parent to (Algolia's `generateSecuredApiKey`
/// restrictions, with Limelight's domains for Algolia's indices).
package struct KeyRestrictions: Sendable, Hashable {
    /// An Algolia `filters` expression every search of the key is ANDed with,
    /// in every query language (see ``TenantScope``).
    package var filters: String?
    /// The key is refused from this instant on (Algolia's `validUntil`, Unix seconds).
    package var validUntil: Date?
    /// Only items of these domains (and their subdomains) are visible.
    package var restrictDomains: [String]?
    /// Whose key it is (Algolia's `userToken`): requests per second are
    /// counted per user token, so one user cannot use up a shared limit.
    package var userToken: String?

    package init(filters: String? = nil, validUntil: Date? = nil, restrictDomains: [String]? = nil, userToken: String? = nil) {
        self.filters = filters
        self.validUntil = validUntil
        self.restrictDomains = restrictDomains
        self.userToken = userToken
    }

    /// Checks what the server would refuse, so that `keys secure` fails at once.
    package func validate() throws(TenancyError) {
        if let filters {
            var parser = FilterExpressionParser(filters)
            do throws(SearchParametersError) { _ = try parser.parse() } catch {
                throw TenancyError(.invalidParameter, "the secured key's filters do not parse: \(error.message)", field: "filters")
            }
        }
        if let domains = restrictDomains {
            guard !domains.isEmpty else {
                throw TenancyError(.invalidParameter, "restrictDomains is empty: name at least one domain", field: "restrictDomains")
            }
            for d in domains where d.isEmpty || !DomainIdentifier.isValid(d) || d.contains(",") {
                throw TenancyError(.invalidParameter, "'\(d)' is not a domain identifier", field: "restrictDomains")
            }
        }
        if let userToken, userToken.isEmpty || userToken.utf8.count > 128 {
            throw TenancyError(.invalidParameter, "userToken must be 1 to 128 bytes", field: "userToken")
        }
    }
}

/// Secured API keys, made as Algolia makes them: with no call to the server,
/// from a search key and restrictions, as
/// `base64(hex(hmac_sha256(secret, params)) + params)`, where `params` is the
/// restrictions as a URL query string (keys sorted; `filters`, `parent`,
/// `restrictDomains`, `userToken`, `validUntil`).
///
/// One difference from Algolia: the HMAC key is not the parent key itself but
/// its *signing secret*, `hex(hmac_sha256(parentKey, "limelight secured key v1"))`.
/// The server stores keys only as SHA-256 hashes, from which no HMAC can be
/// checked; it stores this secret beside the hash of each search key instead.
/// Whoever can read the key store could therefore forge secured keys of the
/// app's search keys (no more than search rights: admin keys cannot be parents
/// and have no secret), but cannot recover any key. `parent` is the parent's
/// package id, so the server finds the secret without trying every key.
package enum SecuredKey {
    static let context = "limelight secured key v1"

    /// The secret a search key signs its secured keys with (stored by the server).
    package static func signingSecret(parentKey: String) -> String {
        let mac = HMACSHA256.authenticationCode(for: context.utf8, key: parentKey.utf8)
        return APIKey.hex(mac)
    }

    package static func generate(parentKey: String, _ r: KeyRestrictions) throws(TenancyError) -> String {
        guard APIKey.isPlain(parentKey) else {
            throw TenancyError(.invalidParameter, "the parent must be a search key (llk_…), not a secured key", field: "parent")
        }
        try r.validate()
        let params = encode(parent: APIKey.id(of: parentKey), r)
        let sig = sign(params, secret: signingSecret(parentKey: parentKey))
        return Data((sig + params).utf8).base64EncodedString()
    }

    /// A secured key taken apart, its signature not yet checked.
    package struct Parsed: Sendable, Hashable {
        package var signature: String
        package var params: String
        package var parent: String
        package var restrictions: KeyRestrictions
    }

    package static func parse(_ key: String) throws(TenancyError) -> Parsed {
        let invalid = TenancyError(.invalidKey, "the key is neither a key of this cluster nor a secured key made from one")
        var b64 = key.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64), let text = String(data: data, encoding: .utf8), text.utf8.count > 64 else { throw invalid }
        let signature = String(text.prefix(64))
        guard signature.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { throw invalid }
        let params = String(text.dropFirst(64))
        var r = KeyRestrictions()
        var parent: String?
        for pair in params.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2, let name = kv[0].removingPercentEncoding, let value = kv[1].removingPercentEncoding else { throw invalid }
            switch name {
            case "filters": r.filters = value
            case "parent": parent = value
            case "restrictDomains": r.restrictDomains = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            case "userToken": r.userToken = value
            case "validUntil":
                guard let n = Int64(value) else { throw invalid }
                r.validUntil = Date(timeIntervalSince1970: TimeInterval(n))
            default:
                throw TenancyError(.invalidKey, "the secured key has an unknown restriction '\(name)'")
            }
        }
        guard let parent else { throw invalid }
        return Parsed(signature: signature, params: params, parent: parent, restrictions: r)
    }

    /// Whether the signature is the one `secret` makes (constant time).
    package static func verify(_ p: Parsed, secret: String) -> Bool {
        let expected = Array(sign(p.params, secret: secret).utf8), got = Array(p.signature.utf8)
        guard expected.count == got.count else { return false }
        var diff: UInt8 = 0
        for (a, b) in zip(expected, got) { diff |= a ^ b }
        return diff == 0
    }

    static func sign(_ params: String, secret: String) -> String {
        APIKey.hex(HMACSHA256.authenticationCode(for: params.utf8, key: secret.utf8))
    }

    static func encode(parent: String, _ r: KeyRestrictions) -> String {
        var pairs: [(String, String)] = [("parent", parent)]
        if let f = r.filters { pairs.append(("filters", f)) }
        if let d = r.restrictDomains { pairs.append(("restrictDomains", d.joined(separator: ","))) }
        if let u = r.userToken { pairs.append(("userToken", u)) }
        if let v = r.validUntil { pairs.append(("validUntil", String(Int64(v.timeIntervalSince1970.rounded(.down))))) }
        pairs.sort { $0.0 < $1.0 }
        return pairs.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~,")
    static func escape(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? s }
}
