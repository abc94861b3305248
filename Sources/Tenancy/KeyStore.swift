import Foundation
import Hashing
import Items
import SQLite

/// One stored key: never its value, only its hash.
package struct KeyRecord: Sendable, Hashable {
    /// The first 16 hex digits of the hash: public, shown by `keys list`.
    package var id: String
    package var hash: String
    /// Nil for a master key, which belongs to no app.
    package var app: String?
    package var role: KeyRole
    /// Requests per second the key may make (secured keys made from it
    /// share it per user token); nil for no limit.
    package var rateLimit: Double?
    /// Items one publish (or entity donation) may carry; nil for no limit.
    package var maxItemsPerPublish: Int?
    package var description: String?
    package var created: Date
    package var revoked: Date?
    /// Search keys: the secret their secured keys are signed with (see ``SecuredKey``).
    package var signingSecret: String?

    /// The listing form (`keys_reply`): no hash, no secret.
    package var json: JSONValue {
        func date(_ d: Date?) -> JSONValue { d.map { .string(ISODate.format($0)) } ?? .null }
        return .object([
            "id": .string(id), "app": app.map(JSONValue.string) ?? .null, "role": .string(role.rawValue),
            "rateLimit": rateLimit.map(JSONValue.number) ?? .null,
            "maxItemsPerPublish": maxItemsPerPublish.map { .number(Double($0)) } ?? .null,
            "description": description.map(JSONValue.string) ?? .null,
            "created": date(created), "revoked": date(revoked),
        ])
    }
}

/// The coordinator's keys: a small SQLite file in its data folder
/// (`DATA/keys.sqlite`, mode 0600), read whole at open and kept in memory,
/// written through on every change.
///
/// ```
/// keys(hash TEXT PRIMARY KEY, id TEXT UNIQUE, app TEXT, role TEXT, rate_limit REAL,
///      max_items INTEGER, description TEXT, created REAL, revoked REAL, secret TEXT)
/// ```
///
/// Only the coordinator writes it while the cluster runs (`limelight up`
/// opens it before starting the coordinator, to make the first keys).
///
/// Not `Sendable`: it holds a SQLite connection (a C handle) and its
/// in-memory copy of the keys; whoever opens it hands it to the coordinator's
/// actor (`sending`), which alone uses it from then on.
package final class KeyStore {
    let db: Database
    package let path: String
    private(set) var byHash: [String: KeyRecord] = [:]
    private(set) var byID: [String: KeyRecord] = [:]
    /// Search keys' values by key id, unsealed at open: Algolia's secured
    /// keys are signed with the parent key itself (``AlgoliaSecuredKey``).
    private(set) var searchKeys: [String: String] = [:]
    /// The key search keys are sealed with (AES-GCM), in `PATH.seal` (mode
    /// 0600) beside the store: a copy of the store alone reveals no key.
    let sealKey: [UInt8]

    package init(path: String) throws(TenancyError) {
        self.path = path
        // Made 0600 before SQLite opens it: SQLite gives its journal the
        // database file's mode, so no copy of the keys is ever readable by others.
        if !FileManager.default.fileExists(atPath: path) {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            if fd >= 0 { close(fd) }
        }
        do {
            var config = Database.Configuration()
            config.walJournal = false
            config.synchronous = .full
            db = try Database(path: path, configuration: config)
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS keys(
                    hash TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, app TEXT, role TEXT NOT NULL,
                    rate_limit REAL, max_items INTEGER, description TEXT,
                    created REAL NOT NULL, revoked REAL, secret TEXT)
                """)
            // Search keys sealed, for Algolia's secured keys (a store made before has none).
            let columns = try db.prepare("SELECT name FROM pragma_table_info('keys') WHERE name = 'sealed'")
            var hasSealed = false
            try columns.forEachRow { _ in hasSealed = true }
            if !hasSealed { try db.execute("ALTER TABLE keys ADD COLUMN sealed TEXT") }
        } catch {
            throw TenancyError(.storeFailed, "cannot open the key store \(path): \(error)")
        }
        sealKey = try Self.sealKey(path + ".seal")
        try load()
    }

    func load() throws(TenancyError) {
        do {
            let s = try db.prepare(
                "SELECT hash, id, app, role, rate_limit, max_items, description, created, revoked, secret, sealed FROM keys")
            try s.forEachRow { r in
                guard let hash = r.string(at: 0), let id = r.string(at: 1), let role = KeyRole(rawValue: r.string(at: 3) ?? "") else { return }
                let rec = KeyRecord(
                    id: id, hash: hash, app: r.string(at: 2), role: role,
                    rateLimit: r.isNull(at: 4) ? nil : r.double(at: 4),
                    maxItemsPerPublish: r.isNull(at: 5) ? nil : r.int(at: 5),
                    description: r.string(at: 6), created: Date(timeIntervalSince1970: r.double(at: 7)),
                    revoked: r.isNull(at: 8) ? nil : Date(timeIntervalSince1970: r.double(at: 8)),
                    signingSecret: r.string(at: 9))
                byHash[hash] = rec
                byID[id] = rec
                if let sealed = r.string(at: 10), let box = Data(base64Encoded: sealed),
                    let value = try? AESGCM.open([UInt8](box), key: sealKey)
                {
                    searchKeys[id] = String(decoding: value, as: UTF8.self)
                }
            }
        } catch {
            throw TenancyError(.storeFailed, "cannot read the key store \(path): \(error)")
        }
    }

    /// The seal key of `file`, made (32 random bytes, hex, mode 0600) when absent.
    static func sealKey(_ file: String) throws(TenancyError) -> [UInt8] {
        if let data = FileManager.default.contents(atPath: file) {
            let hex = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            var bytes: [UInt8] = []
            var i = hex.startIndex
            while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex), let b = UInt8(hex[i..<j], radix: 16) {
                bytes.append(b)
                i = j
            }
            guard bytes.count == 32 else { throw TenancyError(.storeFailed, "\(file) does not hold a 256-bit key in hex") }
            return bytes
        }
        guard let key = SecureRandom.bytes(AESGCM.keyByteCount) else { throw TenancyError(.storeFailed, "cannot make a seal key: no random bytes") }
        try writeSecret(APIKey.hex(key) + "\n", to: file)
        return key
    }

    /// The live search key that signed an Algolia secured key, if any.
    package func algoliaParent(of p: AlgoliaSecuredKey.Parsed) -> KeyRecord? {
        for (id, value) in searchKeys where AlgoliaSecuredKey.verify(p, parentKey: value) { return byID[id] }
        return nil
    }

    /// Makes a key and stores it; returns its value, which is nowhere else:
    /// the store keeps its hash.
    package func create(
        app: String?, role: KeyRole, rateLimit: Double? = nil, maxItemsPerPublish: Int? = nil,
        description: String? = nil
    ) throws(TenancyError) -> (key: String, record: KeyRecord) {
        let made = try Self.make(app: app, role: role, rateLimit: rateLimit, maxItemsPerPublish: maxItemsPerPublish, description: description)
        try adopt(made.shared)
        return (made.key, made.shared.record)
    }

    /// A new key, checked but not stored: a coordinator that shares its
    /// keys through the control plane stores it (``adopt(_:)``) once the
    /// control plane holds it.
    package static func make(
        app: String?, role: KeyRole, rateLimit: Double? = nil, maxItemsPerPublish: Int? = nil,
        description: String? = nil
    ) throws(TenancyError) -> (key: String, shared: SharedKey) {
        if role == .master {
            guard app == nil else { throw TenancyError(.invalidParameter, "a master key belongs to no app", field: "app") }
        } else {
            guard let app else { throw TenancyError(.invalidParameter, "an \(role.rawValue) key needs an app", field: "app") }
            guard APIKey.isValidApp(app) else {
                throw TenancyError(
                    .invalidParameter,
                    "app '\(app)' is not a valid name: 1-64 of a-z, 0-9, '_' and '-', starting with a letter or digit", field: "app")
            }
        }
        if let r = rateLimit, !(r > 0 && r.isFinite) {
            throw TenancyError(.invalidParameter, "rateLimit must be a positive number of requests per second, found \(r)", field: "rateLimit")
        }
        if let m = maxItemsPerPublish, m < 1 {
            throw TenancyError(.invalidParameter, "maxItemsPerPublish must be at least 1, found \(m)", field: "maxItemsPerPublish")
        }
        let key = APIKey.generate()
        let hash = APIKey.hash(key)
        let rec = KeyRecord(
            id: APIKey.id(ofHash: hash), hash: hash, app: app, role: role, rateLimit: rateLimit,
            maxItemsPerPublish: maxItemsPerPublish, description: description,
            created: Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)), revoked: nil,
            signingSecret: role == .search ? SecuredKey.signingSecret(parentKey: key) : nil)
        return (key, SharedKey(record: rec, searchKey: role == .search ? key : nil))
    }

    /// Stores a key as given, replacing the one of its hash: a key made here
    /// or read from the control plane, or a revocation.
    package func adopt(_ k: SharedKey) throws(TenancyError) {
        let rec = k.record
        var sealed: String?
        if let value = k.searchKey {
            do { sealed = Data(try AESGCM.seal(Array(value.utf8), key: sealKey)).base64EncodedString() } catch {
                throw TenancyError(.storeFailed, "cannot seal search key \(rec.id): \(error)")
            }
        }
        do {
            let s = try db.prepare(
                """
                INSERT OR REPLACE INTO keys(hash, id, app, role, rate_limit, max_items, description, created, revoked, secret, sealed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            try s.run([
                .text(rec.hash), .text(rec.id), rec.app.map(SQLValue.text) ?? .null, .text(rec.role.rawValue),
                rec.rateLimit.map(SQLValue.real) ?? .null, rec.maxItemsPerPublish.map { .integer(Int64($0)) } ?? .null,
                rec.description.map(SQLValue.text) ?? .null, .real(rec.created.timeIntervalSince1970),
                rec.revoked.map { .real($0.timeIntervalSince1970) } ?? .null,
                rec.signingSecret.map(SQLValue.text) ?? .null, sealed.map(SQLValue.text) ?? .null,
            ])
        } catch {
            throw TenancyError(.storeFailed, "cannot store key \(rec.id) in \(path): \(error)")
        }
        byHash[rec.hash] = rec
        byID[rec.id] = rec
        if let value = k.searchKey { searchKeys[rec.id] = value }
    }

    /// Every key, with search keys' values: what a coordinator shares.
    package var shared: [SharedKey] {
        byID.values.sorted { $0.id < $1.id }.map { SharedKey(record: $0, searchKey: searchKeys[$0.id]) }
    }

    package func record(hash: String) -> KeyRecord? { byHash[hash] }
    package func record(id: String) -> KeyRecord? { byID[id] }

    /// Keys of one app (nil: every key), oldest first.
    package func list(app: String?) -> [KeyRecord] {
        byID.values.filter { app == nil || $0.app == app }.sorted { ($0.created, $0.id) < ($1.created, $1.id) }
    }

    /// Revokes a key named by its value or its id. Revoking is for good: the
    /// key, and every secured key made from it, is refused from now on.
    package func revoke(_ keyOrID: String) throws(TenancyError) -> KeyRecord {
        let k = try revocation(of: keyOrID)
        if k.record != record(id: k.record.id) { try adopt(k) }
        return k.record
    }

    /// The key named by its value or id, revoked (now, unless it was
    /// already), but not stored: see ``make(app:role:rateLimit:maxItemsPerPublish:description:)``.
    package func revocation(of keyOrID: String) throws(TenancyError) -> SharedKey {
        guard var rec = byHash[APIKey.hash(keyOrID)] ?? byID[keyOrID] else {
            throw TenancyError(.notFound, "no key has this value or id", field: "target")
        }
        if rec.revoked == nil { rec.revoked = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }
        return SharedKey(record: rec, searchKey: searchKeys[rec.id])
    }

    /// The key of `file` when it names a live key of this store with `role`
    /// (and `app`); otherwise a new one, written to `file` (mode 0600). How
    /// `limelight up` gives its user a master key and the default app's admin
    /// key without ever printing them.
    @discardableResult
    package func ensureKeyFile(_ file: String, app: String?, role: KeyRole) throws(TenancyError) -> String {
        if let data = FileManager.default.contents(atPath: file) {
            let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if let rec = byHash[APIKey.hash(key)], rec.revoked == nil, rec.role == role, rec.app == app { return key }
        }
        let (key, _) = try create(app: app, role: role, description: "made by limelight for \((file as NSString).lastPathComponent)")
        try Self.writeSecret(key + "\n", to: file)
        return key
    }

    /// Writes a file only its owner can read, creating it with mode 0600 (never
    /// readable by others, even for an instant).
    package static func writeSecret(_ text: String, to file: String) throws(TenancyError) {
        _ = unlink(file)
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw TenancyError(.storeFailed, "cannot create \(file): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            throw TenancyError(.storeFailed, "cannot write \(file): \(String(cString: strerror(errno)))")
        }
    }
}
