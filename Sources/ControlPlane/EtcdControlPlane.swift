import Foundation
import JSON
import LimelightConcurrency

/// The control plane of a cluster across hosts: etcd 3.4, through its
/// HTTP/JSON gateway (`/v3/kv/range`, `/v3/kv/txn`, `/v3/lease/…`; keys and
/// values base64, 64-bit integers as strings) over plain HTTP
/// (``PlainHTTP``): no gRPC code and no TLS stack enter the build.
///
/// Requests go to one member; on a failed connection, a timeout or an
/// "unavailable" answer (no leader yet, the leader changed) the next member
/// is tried, round the list twice, with a short pause between rounds. A
/// transaction resent after a timeout may have been applied the first time;
/// its compares then fail on the second, and the caller reads again (the
/// decisions over the store all read back what they wrote). Calls run one at
/// a time on the store's own thread, as the socket blocks.
package final class EtcdControlPlane: ControlPlaneStore {
    package let members: [String]
    /// Each member's host and port.
    let addresses: [(host: String, port: Int)]
    let timeout: Duration
    /// The member that answered last: tried first.
    let current = LockedBox(0)
    let thread = DedicatedThread(label: "limelight.control-plane.etcd")

    package init(members: [String], timeout: Duration = .seconds(2)) throws(ControlPlaneError) {
        guard !members.isEmpty else { throw ControlPlaneError(.badEndpoint, "no etcd member given") }
        var addresses: [(String, Int)] = []
        for m in members {
            guard let url = URL(string: m), url.scheme == "http", let host = url.host, let port = url.port else {
                throw ControlPlaneError(.badEndpoint, "'\(m)' is not an etcd member's URL (expected http://HOST:PORT)")
            }
            addresses.append((host, port))
        }
        self.members = members
        self.addresses = addresses
        self.timeout = timeout
    }

    deinit { thread.stop() }

    package var name: String { "etcd \(members.joined(separator: ","))" }

    package func range(_ key: String, prefix: Bool) async throws(ControlPlaneError) -> RangeResult {
        var body: [String: JSONValue] = ["key": .string(Self.b64(key))]
        if prefix { body["range_end"] = .string(Data(Self.prefixEnd(key)).base64EncodedString()) }
        let answer = try await call("/v3/kv/range", .object(body))
        let kvs = try (answer["kvs"]?.arrayValue ?? []).map { kv throws(ControlPlaneError) in try Self.keyValue(kv) }
        return RangeResult(revision: try Self.int(answer["header"]?["revision"]), values: kvs)
    }

    package func commit(_ t: Transaction) async throws(ControlPlaneError) -> TransactionResult {
        let body: JSONValue = .object([
            "compare": .array(t.compares.map(Self.compare)),
            "success": .array(t.success.map(Self.operation)),
            "failure": .array(t.failure.map(Self.operation)),
        ])
        let answer = try await call("/v3/kv/txn", body)
        return TransactionResult(succeeded: answer["succeeded"]?.boolValue ?? false, revision: try Self.int(answer["header"]?["revision"]))
    }

    package func grantLease(ttlSeconds: Int) async throws(ControlPlaneError) -> Lease {
        let answer = try await call("/v3/lease/grant", .object(["TTL": .string(String(ttlSeconds))]))
        guard let id = Int64(answer["ID"]?.stringValue ?? "") else { throw ControlPlaneError(.badResponse, "a lease grant without an ID: \(answer)") }
        return Lease(id: id, ttlSeconds: (try? Self.int(answer["TTL"])) ?? ttlSeconds)
    }

    package func keepAlive(_ lease: Int64) async throws(ControlPlaneError) -> Int {
        let answer = try await call("/v3/lease/keepalive", .object(["ID": .string(String(lease))]))
        // A lapsed lease is answered with no TTL (0).
        return (try? Self.int(answer["result"]?["TTL"])) ?? 0
    }

    package func revoke(_ lease: Int64) async throws(ControlPlaneError) {
        do { _ = try await call("/v3/lease/revoke", .object(["ID": .string(String(lease))])) } catch  where error.message.contains("lease not found")
        {
            return
        }
    }

    // MARK: HTTP

    /// POSTs `body` to `path` on a member, moving to the next one on failure.
    func call(_ path: String, _ body: JSONValue) async throws(ControlPlaneError) -> JSONValue {
        let payload = body.serialized()
        var last = ControlPlaneError(.unreachable, "no etcd member tried")
        let start = current.value
        for attempt in 0..<(members.count * 2) {
            if attempt > 0, attempt % members.count == 0 { try? await Task.sleep(for: .milliseconds(300)) }
            let index = (start + attempt) % members.count
            let (host, port) = addresses[index]
            let timeout = self.timeout
            let data: Data, status: Int
            do {
                let response = try await thread.run { () throws -> PlainHTTP.Response in
                    try PlainHTTP.post(host: host, port: port, path: path, body: payload, timeout: timeout)
                }
                data = response.body
                status = response.status
            } catch {
                last = (error as? ControlPlaneError) ?? ControlPlaneError(.unreachable, "\(members[index]): \(error)")
                continue
            }
            let answer: JSONValue
            do { answer = try JSONValue.parse(data) } catch {
                last = ControlPlaneError(.badResponse, "\(members[index])\(path) answered \(status) with no JSON")
                continue
            }
            if status == 200, answer["error"] == nil {
                current.withLock { $0 = index }
                return answer
            }
            let message = answer["message"]?.stringValue ?? answer["error"]?.stringValue ?? "HTTP \(status)"
            // gRPC's Unavailable (14): no leader, the leader changed, the member is stopping.
            if answer["code"]?.intValue == 14 || status == 503 {
                last = ControlPlaneError(.unreachable, "\(members[index]): \(message)")
                continue
            }
            throw ControlPlaneError(.refused, "\(members[index])\(path): \(message)")
        }
        throw last
    }

    // MARK: Encoding

    static func b64(_ s: String) -> String { Data(s.utf8).base64EncodedString() }

    /// The key just past every key that starts with `prefix` (etcd's `range_end`).
    static func prefixEnd(_ prefix: String) -> [UInt8] {
        var bytes = Array(prefix.utf8)
        while let last = bytes.last {
            if last < 0xff {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return [0]
    }

    static func int(_ v: JSONValue?) throws(ControlPlaneError) -> Int {
        switch v {
        case .string(let s): if let n = Int(s) { return n }
        case .number(let d): return Int(d)
        case nil: return 0  // proto3 leaves zeros out
        default: break
        }
        throw ControlPlaneError(.badResponse, "expected an integer, got \(String(describing: v))")
    }

    static func keyValue(_ kv: JSONValue) throws(ControlPlaneError) -> KeyValue {
        guard let k = kv["key"]?.stringValue, let key = Data(base64Encoded: k) else {
            throw ControlPlaneError(.badResponse, "a key-value without a key: \(kv)")
        }
        let value = kv["value"]?.stringValue.flatMap { Data(base64Encoded: $0) } ?? Data()
        return KeyValue(
            key: String(decoding: key, as: UTF8.self), value: value, createRevision: try int(kv["create_revision"]),
            modRevision: try int(kv["mod_revision"]), version: try int(kv["version"]), lease: Int64(try int(kv["lease"])))
    }

    static func compare(_ c: Compare) -> JSONValue {
        var o: [String: JSONValue] = ["key": .string(b64(c.key)), "result": .string(c.relation.rawValue)]
        switch c.target {
        case .version(let n): o["target"] = .string("VERSION"); o["version"] = .string(String(n))
        case .createRevision(let n): o["target"] = .string("CREATE"); o["create_revision"] = .string(String(n))
        case .modRevision(let n): o["target"] = .string("MOD"); o["mod_revision"] = .string(String(n))
        case .value(let v): o["target"] = .string("VALUE"); o["value"] = .string(v.base64EncodedString())
        }
        return .object(o)
    }

    static func operation(_ op: Operation) -> JSONValue {
        switch op {
        case .put(let key, let value, let lease):
            var put: [String: JSONValue] = ["key": .string(b64(key)), "value": .string(value.base64EncodedString())]
            if lease != 0 { put["lease"] = .string(String(lease)) }
            return .object(["request_put": .object(put)])
        case .delete(let key):
            return .object(["request_delete_range": .object(["key": .string(b64(key))])])
        }
    }
}
