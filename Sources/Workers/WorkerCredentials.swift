import ClusterAuth
import Foundation
import ZeroMQ

/// What a worker shows the coordinator to be let in (docs/security-transport.md).
package struct WorkerCredentials: Sendable {
    /// The cluster secret's file; nil reads ``ClusterSecret/defaultPath(environment:)``.
    /// Read when the coordinator first challenges the worker, so a worker of a
    /// coordinator that asks for no proof needs none.
    package var clusterSecretFile: String?
    /// CURVE towards a coordinator that has it on: its package key and ours.
    package var curve: CurveClientKeys?

    package init(clusterSecretFile: String? = nil, curve: CurveClientKeys? = nil) {
        self.clusterSecretFile = clusterSecretFile
        self.curve = curve
    }

    /// The secret to answer a challenge with, or why there is none.
    func secret() -> Result<ClusterSecret, ClusterSecret.FileError> {
        guard let path = clusterSecretFile ?? ClusterSecret.defaultPath() else {
            return .failure(ClusterSecret.FileError(description: "no cluster secret: HOME is not set, so give --cluster-secret-file"))
        }
        do { return .success(try ClusterSecret.read(path: path)) } catch let e as ClusterSecret.FileError {
            return .failure(e)
        } catch {
            return .failure(ClusterSecret.FileError(description: "\(error)"))
        }
    }

    /// A routing id of this process's own: random, so nobody can present it to
    /// take over the worker's connection (ROUTER handover) by knowing its id.
    static func routingID(workerID: String) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        let nonce = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
        return Array("\(workerID.prefix(200))#\(nonce)".utf8)
    }
}
