import Foundation
import ZeroMQ

/// Where a client finds its endpoint and API key when it is not given them:
/// the same places for the `limelight` command, this library and the Python
/// client, so that a user of `limelight up` never copies a key by hand.
///
/// The key: the one given, then `$LIMELIGHT_KEY`, then the file named by a
/// key-file option or `$LIMELIGHT_KEY_FILE`, then `limelight.key` in the data
/// folder of `limelight up` (`$LIMELIGHT_DATA`, else `./limelight-data`),
/// where `up` writes an admin key. None of them: no key, which a cluster that
/// does not require keys serves unscoped.
public enum ClientDefaults {
    public static let endpointFallback = "tcp://127.0.0.1:7700"

    /// `$LIMELIGHT_ENDPOINT`, else `tcp://127.0.0.1:7700`.
    public static var endpoint: String {
        ProcessInfo.processInfo.environment["LIMELIGHT_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 } ?? endpointFallback
    }

    /// The key file `name` in the data folder of `limelight up`, as an absolute path.
    public static func keyFilePath(_ name: String = "limelight.key") -> String {
        let folder = ProcessInfo.processInfo.environment["LIMELIGHT_DATA"].flatMap { $0.isEmpty ? nil : $0 } ?? "limelight-data"
        let path = (folder as NSString).appendingPathComponent(name)
        return path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
    }

    /// The key to send (see the type's comment). A key file that was named
    /// (`keyFile` or `$LIMELIGHT_KEY_FILE`) and cannot be read is an error; the
    /// data folder's file is only looked for.
    public static func key(
        _ given: String? = nil, keyFile: String? = nil,
        dataFolderFile: String = "limelight.key"
    ) throws(ClientError) -> String? {
        let env = ProcessInfo.processInfo.environment
        if let given { return given }
        if let k = env["LIMELIGHT_KEY"], !k.isEmpty { return k }
        if let file = keyFile ?? env["LIMELIGHT_KEY_FILE"] {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ClientError(.keyFile, "cannot read the key file \(file)")
            }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let data = FileManager.default.contents(atPath: keyFilePath(dataFolderFile)) else { return nil }
        let k = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return k.isEmpty ? nil : k
    }

    /// What to do when a request went without a key.
    public static var missingKeyHint: String {
        "no key was sent: `limelight up` writes an admin key to DATA/limelight.key (DATA is ./limelight-data "
            + "unless `up --data DIR` said otherwise), and \(keyFilePath()) does not exist; run from the folder "
            + "that holds limelight-data, set LIMELIGHT_DATA=DIR, or pass --key KEY (or set LIMELIGHT_KEY)"
    }
}

extension LimelightClient {
    /// A client that finds its endpoint and key as the `limelight` command
    /// does (``ClientDefaults``); either may be given instead.
    public static func configured(endpoint: String? = nil, key: String? = nil, curve: CurveClientKeys? = nil) throws -> LimelightClient {
        try LimelightClient(endpoint: endpoint ?? ClientDefaults.endpoint, key: try ClientDefaults.key(key), curve: curve)
    }
}
