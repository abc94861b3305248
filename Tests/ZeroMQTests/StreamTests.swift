import Foundation
import Testing

@testable import ZeroMQ

#if canImport(Glibc)
    import Glibc
#endif

/// A plain blocking TCP client (no ZeroMQ): what curl is to a STREAM socket.
struct RawTCPClient: ~Copyable {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
    }

    deinit { Glibc.close(fd) }

    func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
    }

    /// One read: whatever has arrived.
    func read() -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return String(decoding: buffer.prefix(max(n, 0)), as: UTF8.self)
    }

    /// Reads until the server closes the connection (or the 3 s timeout).
    func readToEnd() -> String {
        var result = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            result += buffer[0..<n]
        }
        return String(decoding: result, as: UTF8.self)
    }
}

func port(of endpoint: String) throws -> UInt16 {
    try #require(endpoint.split(separator: ":").last.flatMap { UInt16($0) })
}

@Suite("STREAM sockets (raw TCP, such as plain HTTP)")
struct StreamTests {
    @Test func streamSocketServesAPlainHTTPClient() async throws {
        let context = try Context()
        let server = try AsyncSocket(context: context, type: .stream, name: "stats-http") { socket in
            try socket.bind("tcp://127.0.0.1:0")
        }
        defer { server.close() }
        let client = try RawTCPClient(port: try port(of: try #require(server.endpoint)))
        client.write("GET /stats HTTP/1.0\r\nHost: localhost\r\n\r\n")

        try await withTimeout {
            // A STREAM socket delivers [connection id, bytes]; an empty payload
            // announces a new connection (ZMQ_STREAM_NOTIFY, on by default).
            var peer: Data?
            var request = ""
            for await message in server.messages {
                #expect(message.count == 2)
                if peer == nil { peer = message[0] } else { #expect(message[0] == peer) }
                request += text(message[1])
                if request.contains("\r\n\r\n") { break }
            }
            #expect(request.hasPrefix("GET /stats HTTP/1.0\r\n"))
            let body = #"{"shards":8}"#
            try await server.sendRaw(
                data("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"),
                to: try #require(peer), thenClose: true)
        }
        // The empty frame closed the connection after the response: read to EOF.
        let response = client.readToEnd()
        #expect(response.hasPrefix("HTTP/1.0 200 OK\r\n"))
        #expect(response.hasSuffix("\r\n\r\n{\"shards\":8}"))
    }

    @Test func blockingStreamSocketSeesConnectDataAndDisconnect() throws {
        let context = try Context()
        let (server, endpoint) = try bound(context, .stream)
        var peer = Data()
        do {
            let client = try RawTCPClient(port: try port(of: endpoint))
            let hello = try #require(try server.receive())
            #expect(hello.count == 2 && hello[1].isEmpty)  // connection notification
            peer = hello[0]
            client.write("ping")
            let ping = try #require(try server.receive())
            #expect(ping[0] == peer && text(ping[1]) == "ping")
            try server.sendRaw(data("pong"), to: peer)
            #expect(client.read() == "pong")
        }  // the client hangs up here
        // A disconnect by the peer is announced as another empty frame.
        let bye = try #require(try server.receive())
        #expect(bye[0] == peer && bye[1].isEmpty)

        // A close initiated here (the empty frame) is not announced back. It
        // completes only when this thread next calls into the socket (ZeroMQ
        // finishes closing inside the socket's own calls), here the receive.
        let second = try RawTCPClient(port: try port(of: endpoint))
        let hello = try #require(try server.receive())
        try server.sendRaw(data("bye"), to: hello[0], thenClose: true)
        try server.set(.receiveTimeout(milliseconds: 100))
        #expect(try server.receive() == nil)
        let start = ContinuousClock.now
        #expect(second.readToEnd() == "bye")
        #expect(ContinuousClock.now - start < .seconds(1), "connection closed, not timed out")
    }
}
