internal import COpenSSL

// SHA-256 and HMAC-SHA256, which the cluster secret's registration proofs
// (ClusterAuth) and API keys (Tenancy) need, and AES-256-GCM with random
// bytes, which seal search keys at rest (Tenancy), and nothing more: the system's
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

/// AES-256-GCM, as CryptoKit's `AES.GCM` lays a sealed box out: the 12-byte
/// nonce, the ciphertext, then the 16-byte tag (`combined`). What the key
/// store seals search keys with (see Tenancy's `KeyStore`).
package enum AESGCM {
    package static let keyByteCount = 32
    package static let nonceByteCount = 12
    package static let tagByteCount = 16

    /// Why a box could not be sealed or opened.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Seals `plaintext` under a 32-byte key with a fresh random nonce.
    package static func seal(_ plaintext: [UInt8], key: [UInt8]) throws(Failure) -> [UInt8] {
        try seal(plaintext, key: key, nonce: try randomNonce())
    }

    /// Seals with a given nonce, which must never be used twice with one key
    /// (known-answer tests only; ``seal(_:key:)`` draws a fresh one).
    package static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws(Failure) -> [UInt8] {
        guard key.count == keyByteCount else { throw Failure(description: "an AES-256 key is 32 bytes, not \(key.count)") }
        guard nonce.count == nonceByteCount else { throw Failure(description: "a GCM nonce is 12 bytes, not \(nonce.count)") }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        var written: Int32 = 0, final: Int32 = 0
        guard let ctx = EVP_CIPHER_CTX_new() else { throw Failure(description: "libcrypto could not make a cipher context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let ok = withNonNullBytes(key) { k in
            withNonNullBytes(nonce) { n in
                withNonNullBytes(plaintext) { p in
                    out.withUnsafeMutableBufferPointer { o in
                        EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1
                            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1
                            && EVP_EncryptInit_ex(ctx, nil, nil, k, n) == 1
                            && EVP_EncryptUpdate(ctx, o.baseAddress, &written, p, Int32(plaintext.count)) == 1
                            && EVP_EncryptFinal_ex(ctx, o.baseAddress! + Int(written), &final) == 1
                            && tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), $0.baseAddress) } == 1
                    }
                }
            }
        }
        guard ok else { throw Failure(description: "libcrypto could not seal with AES-256-GCM") }
        return nonce + out[..<Int(written + final)] + tag
    }

    /// Opens a box `seal` made; throws when the key is wrong or the box was changed.
    package static func open(_ combined: [UInt8], key: [UInt8]) throws(Failure) -> [UInt8] {
        guard key.count == keyByteCount else { throw Failure(description: "an AES-256 key is 32 bytes, not \(key.count)") }
        guard combined.count >= nonceByteCount + tagByteCount else { throw Failure(description: "a sealed box is at least 28 bytes") }
        let nonce = Array(combined[..<nonceByteCount])
        let cipher = Array(combined[nonceByteCount..<(combined.count - tagByteCount)])
        var tag = Array(combined[(combined.count - tagByteCount)...])
        var out = [UInt8](repeating: 0, count: cipher.count + 16)
        var written: Int32 = 0, final: Int32 = 0
        guard let ctx = EVP_CIPHER_CTX_new() else { throw Failure(description: "libcrypto could not make a cipher context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let ok = withNonNullBytes(key) { k in
            withNonNullBytes(nonce) { n in
                withNonNullBytes(cipher) { c in
                    out.withUnsafeMutableBufferPointer { o in
                        EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1
                            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1
                            && EVP_DecryptInit_ex(ctx, nil, nil, k, n) == 1
                            && EVP_DecryptUpdate(ctx, o.baseAddress, &written, c, Int32(cipher.count)) == 1
                            && tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), $0.baseAddress) } == 1
                            && EVP_DecryptFinal_ex(ctx, o.baseAddress! + Int(written), &final) == 1
                    }
                }
            }
        }
        guard ok else { throw Failure(description: "the sealed box does not open with this key (wrong key, or the box was changed)") }
        return Array(out[..<Int(written + final)])
    }

    private static func randomNonce() throws(Failure) -> [UInt8] {
        guard let nonce = SecureRandom.bytes(nonceByteCount) else { throw Failure(description: "libcrypto's random generator failed") }
        return nonce
    }
}

/// Random bytes from libcrypto's generator (`RAND_bytes`): keys and nonces.
package enum SecureRandom {
    /// `count` random bytes, or nil when the generator fails.
    package static func bytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        return ok == 1 ? bytes : nil
    }
}
