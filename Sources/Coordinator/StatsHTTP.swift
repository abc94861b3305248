import Foundation

/// Just enough HTTP/1.1 for an ops dashboard to read `GET /stats`.
///
/// Served over a ZeroMQ `STREAM` socket, which exchanges raw TCP bytes, so
/// the coordinator needs no HTTP framework and no second event loop. Each
/// request is answered and the connection closed (`Connection: close`).
struct StatsHTTP {
    /// Bytes received so far per connection, until the header is complete.
    var pending: [Data: Data] = [:]

    enum Route {
        case stats
        case health
        case notFound(String)
        case badRequest
    }

    /// Feeds bytes from a connection; returns the route once a full request head has arrived.
    mutating func receive(connection: Data, bytes: Data) -> Route? {
        if bytes.isEmpty {
            // A STREAM socket signals connect and disconnect with an empty frame.
            pending.removeValue(forKey: connection)
            return nil
        }
        var buffer = pending[connection, default: Data()]
        buffer.append(bytes)
        guard let end = buffer.range(of: Data("\r\n\r\n".utf8)) else {
            if buffer.count > 16 * 1024 { pending.removeValue(forKey: connection); return .badRequest }
            pending[connection] = buffer
            return nil
        }
        pending.removeValue(forKey: connection)
        let head = String(decoding: buffer[buffer.startIndex..<end.lowerBound], as: UTF8.self)
        let requestLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = requestLine.split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" || parts[0] == "HEAD" else { return .badRequest }
        let path = parts[1].split(separator: "?").first.map(String.init) ?? "/"
        switch path {
        case "/stats", "/": return .stats
        case "/health", "/healthz": return .health
        default: return .notFound(path)
        }
    }

    static func response(status: String, contentType: String = "application/json", body: Data) -> Data {
        var head = "HTTP/1.1 \(status)\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\n"
        head += "Cache-Control: no-store\r\n"
        head += "Connection: close\r\n\r\n"
        var out = Data(head.utf8)
        out.append(body)
        return out
    }
}
