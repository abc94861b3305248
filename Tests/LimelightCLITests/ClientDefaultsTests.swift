import Foundation
import LimelightClient
import Testing

/// The key a client sends when it is not given one, found in the same
/// places by the CLI, the Swift client and the Python client.
@Suite struct ClientDefaultsTests {
    @Test func aGivenKeyWinsAndANamedKeyFileIsReadTrimmed() throws {
        #expect(try ClientDefaults.key("given", keyFile: "/nonexistent") == "given")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString)").path
        try Data("  secret-key\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        if ProcessInfo.processInfo.environment["LIMELIGHT_KEY"] == nil {
            #expect(try ClientDefaults.key(keyFile: path) == "secret-key")
        }
    }

    @Test func aNamedKeyFileThatCannotBeReadIsAnError() {
        guard ProcessInfo.processInfo.environment["LIMELIGHT_KEY"] == nil else { return }
        let error = #expect(throws: ClientError.self) { try ClientDefaults.key(keyFile: "/nonexistent/limelight.key") }
        #expect(error?.code == .keyFile)
        #expect(error?.message == "cannot read the key file /nonexistent/limelight.key")
    }

    @Test func theDataFolderKeyFileIsAnAbsolutePathAndTheHintNamesIt() {
        let path = ClientDefaults.keyFilePath()
        #expect(path.hasPrefix("/") && path.hasSuffix("/limelight.key"))
        #expect(ClientDefaults.missingKeyHint.contains(path))
    }
}
