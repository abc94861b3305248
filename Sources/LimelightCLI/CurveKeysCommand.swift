import ArgumentParser
import Foundation
import ZeroMQ

/// `limelight keys curve [NAME]`: a new CURVE key pair, for a coordinator
/// (`--curve-secret-key`), a worker or a client; its package half goes on a
/// coordinator's `--worker-keys` / `--client-keys` list.
struct CurveKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "curve",
        abstract: "Make a CURVE key pair: print it, or write NAME.key (public) and NAME.key_secret (mode 0600).",
        discussion: """
            The files are ZeroMQ certificates, as CZMQ's zcert and pyzmq's zmq.auth write them. \
            Give NAME.key_secret to the process that owns the pair (--curve-secret-key), and copy NAME.key \
            into the coordinator's --client-keys or --worker-keys folder. See docs/security-transport.md.
            """)

    @Argument(help: "Write NAME.key and NAME.key_secret (NAME may include a folder) instead of printing; existing files are never overwritten.")
    var name: String?
    @Flag(help: "Print only the package key, then the secret key, one Z85 text a line.") var bare = false

    func run() async throws {
        guard Context.has("curve") else {
            printError("limelight: this libzmq was built without CURVE")
            throw ExitCode(1)
        }
        let pair = try CurveKeyPair.generate()
        guard let name else {
            if bare {
                printLine(pair.publicKey.z85)
                printLine(pair.secretKey.z85)
            } else {
                FileHandle.standardOutput.write(Data(CurveCertificate.text(pair, includeSecret: true).utf8))
            }
            return
        }
        do { try CurveCertificate.write(pair, base: name) } catch {
            printError("limelight: \(error)")
            throw ExitCode(ExitCodes.badInput)
        }
        printLine("public-key = \"\(pair.publicKey.z85)\"")
        printError("wrote \(name).key (public) and \(name).key_secret (secret, mode 0600)")
    }
}
