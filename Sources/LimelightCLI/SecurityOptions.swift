import ArgumentParser
import ClusterAuth
import Coordinator
import Foundation
import Workers
import ZeroMQ

/// CURVE for a client command: `--curve-server-key` (or
/// `$LIMELIGHT_CURVE_SERVER_KEY`) turns it on; `--curve-secret-key` (or
/// `$LIMELIGHT_CURVE_SECRET_KEY`) names this client's key pair, which a
/// coordinator with `--client-keys` must know. Without one the client makes a
/// throwaway pair: enough for a coordinator that checks no client keys.
struct ClientCurveOptions: ParsableArguments {
    @Option(
        help:
            "The coordinator's CURVE package key (40 characters of Z85, or a key file; write --curve-server-key=KEY when the key begins with '-'); turns encryption on (also $LIMELIGHT_CURVE_SERVER_KEY)."
    )
    var curveServerKey: String?
    @Option(help: "This client's CURVE key pair (a NAME.key_secret file from `limelight keys curve`; also $LIMELIGHT_CURVE_SECRET_KEY).")
    var curveSecretKey: String?

    func keys(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> CurveClientKeys? {
        try curveClientKeys(
            serverKey: curveServerKey ?? environment["LIMELIGHT_CURVE_SERVER_KEY"],
            secretKeyFile: curveSecretKey ?? environment["LIMELIGHT_CURVE_SECRET_KEY"], flag: "--curve-server-key")
    }
}

/// The CURVE client keys of a server key and a key-pair file, with errors that name the flag.
func curveClientKeys(serverKey: String?, secretKeyFile: String?, flag: String) throws -> CurveClientKeys? {
    guard let serverKey else {
        if secretKeyFile != nil { throw ValidationError("--curve-secret-key needs \(flag) (the coordinator's package key) too") }
        return nil
    }
    do {
        let server = try CurveCertificate.publicKey(textOrPath: serverKey)
        let pair = try secretKeyFile.map { try CurveCertificate.readKeyPair(path: $0) } ?? CurveKeyPair.generate()
        return CurveClientKeys(serverKey: server, keyPair: pair)
    } catch let e as CurveCertificate.FileError {
        throw ValidationError("\(flag): \(e.description)")
    }
}

/// The coordinator's security flags (docs/security-transport.md).
struct CoordinatorSecurityOptions: ParsableArguments {
    @Option(
        help:
            "File of the secret workers must prove they hold to register; made (mode 0600) if missing. Default: ~/.config/limelight/cluster.secret, unless --worker-keys is given."
    )
    var clusterSecretFile: String?
    @Option(help: "The coordinator's CURVE key pair (NAME.key_secret from `limelight keys curve`): encrypts the client and worker sockets.")
    var curveSecretKey: String?
    @Option(help: "With CURVE: the client package keys allowed (a folder of NAME.key files, or a file); others are refused. Default: any key.")
    var clientKeys: String?
    @Option(
        help:
            "With CURVE: the worker package keys allowed (a folder of NAME.key files, or a file); others are refused. Alone, it replaces the cluster secret."
    )
    var workerKeys: String?

    func validate() throws {
        if curveSecretKey == nil, clientKeys != nil || workerKeys != nil {
            throw ValidationError("--client-keys and --worker-keys check CURVE keys: give --curve-secret-key too")
        }
    }

    /// The secret (nil when CURVE worker keys alone guard the worker socket).
    func clusterSecret() throws -> ClusterSecret? {
        if clusterSecretFile == nil, workerKeys != nil { return nil }
        guard let path = clusterSecretFile ?? ClusterSecret.defaultPath() else {
            throw ValidationError("no cluster secret: HOME is not set, so give --cluster-secret-file (or --worker-keys)")
        }
        do { return try ClusterSecret.readOrCreate(path: path) } catch let e as ClusterSecret.FileError {
            throw ValidationError("--cluster-secret-file: \(e.description)")
        }
    }

    func curve() throws -> CurveServerSettings? {
        guard let curveSecretKey else { return nil }
        guard Context.has("curve") else { throw ValidationError("--curve-secret-key: this libzmq was built without CURVE") }
        do {
            return CurveServerSettings(
                keyPair: try CurveCertificate.readKeyPair(path: curveSecretKey),
                clientKeys: try clientKeys.map { try CurveCertificate.allowList(path: $0) },
                workerKeys: try workerKeys.map { try CurveCertificate.allowList(path: $0) })
        } catch let e as CurveCertificate.FileError {
            throw ValidationError(e.description)
        }
    }
}

/// A worker's security flags.
struct WorkerSecurityOptions: ParsableArguments {
    @Option(help: "File of the cluster's secret, read when the coordinator asks for proof (default: ~/.config/limelight/cluster.secret).")
    var clusterSecretFile: String?
    @Option(
        help:
            "The coordinator's CURVE package key (Z85 text, or a key file; write --curve-server-key=KEY when the key begins with '-'); turns encryption on."
    )
    var curveServerKey: String?
    @Option(help: "This worker's CURVE key pair (NAME.key_secret), which a coordinator with --worker-keys must know; default: a throwaway pair.")
    var curveSecretKey: String?

    func credentials() throws -> WorkerCredentials {
        WorkerCredentials(
            clusterSecretFile: clusterSecretFile,
            curve: try curveClientKeys(serverKey: curveServerKey, secretKeyFile: curveSecretKey, flag: "--curve-server-key"))
    }
}
