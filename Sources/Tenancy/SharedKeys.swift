import Foundation
import Hashing
import Items

/// A key as every coordinator of a cluster knows it: its record, and for a
/// search key its value (Algolia's secured keys are signed with the parent
/// key itself, so a coordinator that checks them needs it).
package struct SharedKey: Sendable, Equatable {
    package var record: KeyRecord
    package var searchKey: String?

    package init(record: KeyRecord, searchKey: String? = nil) {
        self.record = record
        self.searchKey = searchKey
    }

    /// The form the control plane keeps (``KeyStore`` keeps its own): the
    /// record's public fields in the clear, and its secrets — the signing
    /// secret of secured keys and a search key's value — sealed (AES-GCM)
    /// with `sealKey`, which every coordinator derives from the cluster
    /// secret. The hash is kept in the clear: it is what a request's key is
    /// looked up by, and it reveals no key.
    package func encoded(sealKey: [UInt8]) throws(TenancyError) -> Data {
        var o: [String: JSONValue] = [
            "id": .string(record.id), "hash": .string(record.hash), "role": .string(record.role.rawValue),
            "created": .number(record.created.timeIntervalSince1970),
        ]
        if let app = record.app { o["app"] = .string(app) }
        if let r = record.rateLimit { o["rateLimit"] = .number(r) }
        if let m = record.maxItemsPerPublish { o["maxItemsPerPublish"] = .number(Double(m)) }
        if let d = record.description { o["description"] = .string(d) }
        if let r = record.revoked { o["revoked"] = .number(r.timeIntervalSince1970) }
        var secrets: [String: JSONValue] = [:]
        if let s = record.signingSecret { secrets["signingSecret"] = .string(s) }
        if let k = searchKey { secrets["searchKey"] = .string(k) }
        if !secrets.isEmpty {
            do {
                let box = try AESGCM.seal(Array(JSONValue.object(secrets).serialized()), key: sealKey)
                o["sealed"] = .string(Data(box).base64EncodedString())
            } catch {
                throw TenancyError(.storeFailed, "cannot seal key \(record.id)'s secrets: \(error)")
            }
        }
        return JSONValue.object(o).serialized()
    }

    /// Reads what ``encoded(sealKey:)`` wrote. A record whose secrets do not
    /// open with `sealKey` (a coordinator given another cluster secret) is
    /// refused: taking it without them would make its secured keys fail
    /// unexplained.
    package init(decoding data: Data, sealKey: [UInt8]) throws(TenancyError) {
        guard case .object(let o)? = try? JSONValue.parse(data),
            case .string(let id)? = o["id"], case .string(let hash)? = o["hash"],
            case .string(let roleName)? = o["role"], let role = KeyRole(rawValue: roleName),
            case .number(let created)? = o["created"]
        else {
            throw TenancyError(.storeFailed, "a key record of the control plane is not one: \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
        var secrets: [String: JSONValue] = [:]
        if case .string(let sealed)? = o["sealed"] {
            guard let box = Data(base64Encoded: sealed), let plain = try? AESGCM.open([UInt8](box), key: sealKey),
                case .object(let s)? = try? JSONValue.parse(Data(plain))
            else {
                throw TenancyError(
                    .storeFailed,
                    "key \(id)'s secrets in the control plane do not open with this coordinator's cluster secret: give every coordinator the same one"
                )
            }
            secrets = s
        }
        func number(_ k: String) -> Double? { if case .number(let n)? = o[k] { return n } else { return nil } }
        func string(_ v: JSONValue?) -> String? { if case .string(let s)? = v { return s } else { return nil } }
        record = KeyRecord(
            id: id, hash: hash, app: string(o["app"]), role: role, rateLimit: number("rateLimit"),
            maxItemsPerPublish: number("maxItemsPerPublish").map { Int($0) }, description: string(o["description"]),
            created: Date(timeIntervalSince1970: created), revoked: number("revoked").map { Date(timeIntervalSince1970: $0) },
            signingSecret: string(secrets["signingSecret"]))
        searchKey = string(secrets["searchKey"])
    }
}

/// How a coordinator's keys and the control plane's come to agree, when a
/// coordinator starts serving: both only ever grow (a key is never deleted,
/// and revoking is for good), so the agreement is their union, a key
/// revoked in either being revoked in both, at the earlier date.
package enum KeyMerge {
    /// `adopt`: what this coordinator takes from the control plane (keys it
    /// lacks, revocations it missed); `publish`: what it writes there (keys
    /// made where the control plane did not hear of them, such as the first
    /// keys `limelight up` makes before its coordinator starts).
    package static func merge(local: [SharedKey], shared: [SharedKey]) -> (adopt: [SharedKey], publish: [SharedKey]) {
        let localByID = Dictionary(local.map { ($0.record.id, $0) }, uniquingKeysWith: { a, _ in a })
        let sharedByID = Dictionary(shared.map { ($0.record.id, $0) }, uniquingKeysWith: { a, _ in a })
        var adopt: [SharedKey] = []
        var publish: [SharedKey] = []
        for id in Set(localByID.keys).union(sharedByID.keys).sorted() {
            switch (localByID[id], sharedByID[id]) {
            case (let l?, nil): publish.append(l)
            case (nil, let s?): adopt.append(s)
            case (let l?, let s?):
                var both = s
                both.record.revoked = earlier(l.record.revoked, s.record.revoked)
                both.searchKey = s.searchKey ?? l.searchKey
                both.record.signingSecret = s.record.signingSecret ?? l.record.signingSecret
                if both != l { adopt.append(both) }
                if both != s { publish.append(both) }
            case (nil, nil): break
            }
        }
        return (adopt, publish)
    }

    static func earlier(_ a: Date?, _ b: Date?) -> Date? {
        switch (a, b) {
        case (let a?, let b?): min(a, b)
        default: a ?? b
        }
    }
}
