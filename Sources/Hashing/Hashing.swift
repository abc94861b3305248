internal import COpenSSL

// SHA-256 and HMAC-SHA256, which the cluster secret's registration proofs
// (ClusterAuth) and API keys (Tenancy) need, and nothing more: the system's
// libcrypto does the work, behind a system-library target like SQLite and
// ZeroMQ, so that no pointer leaks and no cryptography library is compiled
// with the project.

/// SHA-256 of a message.
package enum SHA256 {
    /// The length of a digest, in bytes.
    package static let byteCount = 32

    package static func hash(_ message: some Sequence<UInt8>) -> [UInt8] {
        let bytes = Array(message)
        var digest = [UInt8](repeating: 0, count: byteCount)
        withNonNullBytes(bytes) { m in
            digest.withUnsafeMutableBufferPointer { d in _ = COpenSSL.SHA256(m, bytes.count, d.baseAddress) }
        }
        return digest
    }
}

/// HMAC-SHA256 (RFC 2104) of a message under a key.
package enum HMACSHA256 {
    package static func authenticationCode(for message: some Sequence<UInt8>, key: some Sequence<UInt8>) -> [UInt8] {
        let (m, k) = (Array(message), Array(key))
        var code = [UInt8](repeating: 0, count: SHA256.byteCount)
        var length: UInt32 = 0
        withNonNullBytes(k) { kp in
            withNonNullBytes(m) { mp in
                code.withUnsafeMutableBufferPointer { c in
                    let done = HMAC(EVP_sha256(), kp, Int32(k.count), mp, m.count, c.baseAddress, &length)
                    precondition(done != nil && length == UInt32(SHA256.byteCount), "libcrypto's HMAC-SHA256 failed")
                }
            }
        }
        return code
    }

    /// Whether `code` is the message's code under `key`, compared in constant
    /// time (`CRYPTO_memcmp`), so that timing tells nothing of how much of a
    /// guess was right.
    package static func isValid(_ code: some Sequence<UInt8>, for message: some Sequence<UInt8>, key: some Sequence<UInt8>) -> Bool {
        let given = Array(code)
        let expected = authenticationCode(for: message, key: key)
        guard given.count == expected.count else { return false }
        return given.withUnsafeBytes { g in
            expected.withUnsafeBytes { e in CRYPTO_memcmp(g.baseAddress, e.baseAddress, e.count) == 0 }
        }
    }
}

/// `body` with a pointer to `bytes` that is never null (libcrypto may reject
/// a null pointer even with a length of zero).
private func withNonNullBytes<R>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>) -> R) -> R {
    if bytes.isEmpty {
        let none: [UInt8] = [0]
        return none.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
    return bytes.withUnsafeBufferPointer { body($0.baseAddress!) }
}
