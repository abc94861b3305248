import ArgumentParser
import Foundation
import Synchronization

/// Reads `HOST:PORT` (or `[IPv6]:PORT`) as an option value; port 0 means any free port.
///
/// The host is taken as given (a name or an address: the HTTP server resolves
/// it); a missing or out-of-range port is an error naming the option and value.
func parseHostPort(_ s: String, option: String) throws -> (host: String, port: Int) {
    var host: Substring
    var port: Substring
    if s.hasPrefix("[") {
        guard let close = s.firstIndex(of: "]"), s[s.index(after: close)...].hasPrefix(":") else {
            throw ValidationError("\(option) '\(s)': expected [ADDRESS]:PORT for an IPv6 address")
        }
        host = s[s.index(after: s.startIndex)..<close]
        port = s[s.index(close, offsetBy: 2)...]
    } else {
        guard let colon = s.lastIndex(of: ":") else {
            throw ValidationError("\(option) '\(s)': expected HOST:PORT, e.g. 127.0.0.1:7780 or 0.0.0.0:7780")
        }
        host = s[..<colon]
        port = s[s.index(after: colon)...]
    }
    guard !host.isEmpty else { throw ValidationError("\(option) '\(s)': the host is missing (0.0.0.0 listens on every address)") }
    guard let p = Int(port), (0...65535).contains(p) else {
        throw ValidationError("\(option) '\(s)': '\(port)' is not a port (0-65535)")
    }
    return (String(host), p)
}

/// Why a command failed inside a task, for it to exit non-zero afterwards.
final class FailureBox: Sendable {
    private let failure = Mutex<String?>(nil)
    func set(_ s: String) { failure.withLock { $0 = s } }
    var value: String? { failure.withLock { $0 } }
}
