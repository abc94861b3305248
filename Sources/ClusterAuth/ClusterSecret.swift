import Foundation
import Hashing

/// The secret every process of one cluster shares, and the proofs made with it.
///
/// A worker registers only by proving it knows the secret, without sending it:
/// the coordinator answers a `register` with a `challenge` (a random nonce
/// bound to that connection, good for 30 s), and the worker registers again
/// with `proof` = HMAC-SHA256(secret, "limelight-register-v1" ‖ nonce ‖ worker ‖
/// role ‖ shards). Someone who watches the wire learns a proof that is useless
/// for any other connection, worker id or shard list; someone without the secret
/// cannot register at all, so cannot receive writes or answer queries.
///
/// The secret lives in a file (mode 0600), as Erlang's distribution cookie
/// does: `limelight up` writes one into its data folder for its children;
/// processes started by hand read `--cluster-secret-file`, else
/// ``defaultPath`` (made on first use by the coordinator), so that every
/// process of one user on one machine agrees without being told.
package struct ClusterSecret: Sendable {
    let key: [UInt8]
    /// Where the secret was read from, for messages.
    package let path: String

    /// A fault with a secret file, naming it.
    package struct FileError: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    /// `$XDG_CONFIG_HOME/limelight/cluster.secret`, else
    /// `$HOME/.config/limelight/cluster.secret`; nil when neither is set.
    package static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/limelight/cluster.secret" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.config/limelight/cluster.secret" }
        return nil
    }

    /// The fewest characters a secret may have: a short one could be guessed
    /// by trying proofs against the coordinator.
    package static let minimumLength = 16

    /// The secret of `text` (surrounding white space ignored).
    package init(text: String, path: String = "-") throws {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard t.utf8.count >= Self.minimumLength else {
            throw FileError(
                description:
                    "the cluster secret in \(path) is \(t.utf8.count) characters long; it needs at least \(Self.minimumLength) (make one with: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')"
            )
        }
        key = Array(t.utf8)
        self.path = path
    }

    /// Reads the secret file at `path`.
    package static func read(path: String) throws -> ClusterSecret {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileError(description: "cannot read the cluster secret file \(path)")
        }
        return try ClusterSecret(text: String(decoding: data, as: UTF8.self), path: path)
    }

    /// Reads the secret file at `path`, first making it (32 random bytes as
    /// hex, mode 0600, its folder 0700) when there is none. Two processes
    /// making it at once agree: the file appears whole, once (a private
    /// temporary file linked into place), and the loser reads the winner's.
    package static func readOrCreate(path: String) throws -> ClusterSecret {
        if FileManager.default.fileExists(atPath: path) { return try read(path: path) }
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            try? FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let temporary = path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw FileError(description: "cannot create the cluster secret file \(path): \(String(cString: strerror(errno)))") }
        let text = Array((newSecretText() + "\n").utf8)
        let wrote = write(fd, text, text.count)
        close(fd)
        defer { unlink(temporary) }
        guard wrote == text.count else { throw FileError(description: "cannot write the cluster secret file \(path)") }
        // link(2) fails if the file appeared meanwhile: then the other one counts.
        if link(temporary, path) != 0 && errno != EEXIST {
            throw FileError(description: "cannot create the cluster secret file \(path): \(String(cString: strerror(errno)))")
        }
        return try read(path: path)
    }

    /// 32 random bytes from the system's secure generator, as 64 hex digits.
    package static func newSecretText() -> String {
        randomHex(bytes: 32)
    }

    /// A challenge nonce: 32 random bytes as hex.
    package static func newNonce() -> String {
        randomHex(bytes: 32)
    }

    static func randomHex(bytes n: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<n).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }

    /// What a proof covers: the nonce and everything the registration claims.
    static func message(nonce: String, worker: String, role: String, shards: [Int]) -> [UInt8] {
        Array("limelight-register-v1\n\(nonce)\n\(worker)\n\(role)\n\(shards.map(String.init).joined(separator: ","))".utf8)
    }

    /// The proof for a registration answering `nonce`, as hex.
    package func proof(nonce: String, worker: String, role: String, shards: [Int]) -> String {
        let mac = HMACSHA256.authenticationCode(for: Self.message(nonce: nonce, worker: worker, role: role, shards: shards), key: key)
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    /// A 256-bit key for `purpose`, derived from the secret (HMAC-SHA256
    /// of the purpose's name): every process given the same secret derives
    /// the same key, and one purpose's key reveals neither the secret nor
    /// another's. The API keys' secrets in the control plane are sealed
    /// with ``apiKeySeal``.
    package func derivedKey(_ purpose: String) -> [UInt8] {
        HMACSHA256.authenticationCode(for: Array("limelight-derive-v1\n\(purpose)".utf8), key: key)
    }

    /// The purpose whose derived key seals API keys' secrets in the control plane.
    package static let apiKeySeal = "api-key-seal"

    /// Whether `proof` is right, compared in constant time.
    package func verify(proof: String, nonce: String, worker: String, role: String, shards: [Int]) -> Bool {
        guard let bytes = Self.bytes(hex: proof), bytes.count == SHA256.byteCount else { return false }
        return HMACSHA256.isValid(bytes, for: Self.message(nonce: nonce, worker: worker, role: role, shards: shards), key: key)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let u = Array(hex.utf8)
        guard u.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        for i in stride(from: 0, to: u.count, by: 2) {
            guard let b = UInt8(String(decoding: u[i...i + 1], as: UTF8.self), radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }
}
