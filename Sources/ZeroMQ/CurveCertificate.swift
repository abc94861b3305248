import Foundation

/// CURVE keys in files, in the ZPL certificate format that CZMQ's `zcert`
/// and pyzmq's `zmq.auth` read and write, so keys made by either work here:
///
/// ```text
/// #   ZeroMQ CURVE **Secret** Certificate
/// metadata
/// curve
///     public-key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
///     secret-key = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
/// ```
///
/// `NAME.key` holds the public key alone (hand it out freely); `NAME.key_secret`
/// both (mode 0600). A file holding just a 40-character Z85 key on a line is
/// read too.
public enum CurveCertificate {
    /// A fault in a key file, naming the file.
    public struct FileError: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// The keys a file holds: its `public-key` and, if any, its `secret-key`.
    public static func read(path: String) throws -> (publicKey: CurveKey?, secretKey: CurveKey?) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileError(description: "cannot read the key file \(path)")
        }
        var pub: CurveKey?, sec: CurveKey?
        for raw in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.isEmpty { continue }
            let value = { (l: String) -> String in
                String(l.split(separator: "=", maxSplits: 1).last ?? "").trimmingCharacters(in: CharacterSet(charactersIn: " \t'\""))
            }
            if line.hasPrefix("public-key") {
                guard let k = CurveKey(z85: value(line)) else { throw FileError(description: "\(path): public-key is not a 40-character Z85 key") }
                pub = k
            } else if line.hasPrefix("secret-key") {
                guard let k = CurveKey(z85: value(line)) else { throw FileError(description: "\(path): secret-key is not a 40-character Z85 key") }
                sec = k
            } else if line.utf8.count == 40, let k = CurveKey(z85: line), pub == nil {
                pub = k
            }
        }
        guard pub != nil || sec != nil else {
            throw FileError(description: "\(path) holds no CURVE key (expected public-key = \"…\" lines, as `limelight keys curve` writes)")
        }
        return (pub, sec)
    }

    /// The key pair in a secret certificate (`NAME.key_secret`).
    public static func readKeyPair(path: String) throws -> CurveKeyPair {
        let (pub, sec) = try read(path: path)
        guard let sec else { throw FileError(description: "\(path) holds no secret-key: give the NAME.key_secret file, not NAME.key") }
        let pair = try CurveKeyPair(secretKey: sec)
        if let pub, pub != pair.publicKey {
            throw FileError(description: "\(path): its public-key is not the public half of its secret-key")
        }
        return pair
    }

    /// A public key given as its Z85 text or as a file holding it.
    public static func publicKey(textOrPath: String) throws -> CurveKey {
        if let k = CurveKey(z85: textOrPath) { return k }
        guard FileManager.default.fileExists(atPath: textOrPath) else {
            throw FileError(description: "'\(textOrPath)' is neither a 40-character Z85 public key nor a key file")
        }
        guard let k = try read(path: textOrPath).publicKey else { throw FileError(description: "\(textOrPath) holds no public-key") }
        return k
    }

    /// An allow-list: every `*.key` file of a folder (as pyzmq's
    /// `load_certificates` reads one), or the keys of one file.
    public static func allowList(path: String) throws -> [String: CurveKey] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FileError(description: "the key list \(path) does not exist")
        }
        var keys: [String: CurveKey] = [:]
        if isDirectory.boolValue {
            let names = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".key") }.sorted()
            for name in names {
                let file = (path as NSString).appendingPathComponent(name)
                guard let k = try read(path: file).publicKey else { continue }
                keys[k.z85] = k
            }
        } else {
            let data = FileManager.default.contents(atPath: path) ?? Data()
            // A file of keys, one a line, or one certificate.
            for raw in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if let k = CurveKey(z85: line) { keys[k.z85] = k }
            }
            if keys.isEmpty, let k = try read(path: path).publicKey { keys[k.z85] = k }
        }
        return keys
    }

    /// The text of a certificate: public only, or with the secret key.
    public static func text(_ pair: CurveKeyPair, includeSecret: Bool, comment: String = "limelight keys curve") -> String {
        var s =
            includeSecret
            ? "#   ZeroMQ CURVE **Secret** Certificate (\(comment))\n#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n\n"
            : "#   ZeroMQ CURVE Public Certificate (\(comment))\n#   Exchange securely, or use a secure mechanism to verify the contents\n\n"
        s += "metadata\ncurve\n    public-key = \"\(pair.publicKey.z85)\"\n"
        if includeSecret { s += "    secret-key = \"\(pair.secretKey.z85)\"\n" }
        return s
    }

    /// Writes `base.key` (mode 0644) and `base.key_secret` (mode 0600), as
    /// pyzmq's `create_certificates` does; an existing file is not overwritten.
    public static func write(_ pair: CurveKeyPair, base: String) throws {
        try writeNew(path: base + ".key", text(pair, includeSecret: false), mode: 0o644)
        try writeNew(path: base + ".key_secret", text(pair, includeSecret: true), mode: 0o600)
    }

    static func writeNew(path: String, _ text: String, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard fd >= 0 else {
            throw FileError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do { try handle.write(contentsOf: Data(text.utf8)) } catch {
            throw FileError(description: "cannot write \(path): \(error)")
        }
    }
}
