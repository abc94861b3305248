import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP client for etcd's JSON gateway: one POST per connection,
/// HTTP/1.0 (so the answer is never chunked and ends when the server closes
/// the connection), over a blocking POSIX socket with a deadline on every
/// step.
///
/// Why not `URLSession`: FoundationNetworking's (libcurl) traps in its task
/// registry when an `async` request is cancelled as it completes, which a
/// coordinator stopping mid-renewal does; and the control plane's calls are
/// few and small. Why not AsyncHTTPClient: it brings a TLS stack into the
/// build. Called only on ``EtcdControlPlane``'s own thread: it blocks.
enum PlainHTTP {
    struct Response {
        var status: Int
        var body: Data
    }

    static func post(host: String, port: Int, path: String, body: Data, timeout: Duration) throws(ControlPlaneError) -> Response {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let where_ = "\(host):\(port)"
        let fd = try connect(host: host, port: port, deadline: deadline)
        defer { close(fd) }
        var request = Data(
            "POST \(path) HTTP/1.0\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        request.append(body)
        let bytes = [UInt8](request)
        var sent = 0
        while sent < bytes.count {
            try wait(fd, for: Int16(POLLOUT), until: deadline, doing: "send to \(where_)")
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw ControlPlaneError(.unreachable, "\(where_): send failed: \(String(cString: strerror(errno)))")
            }
            sent += n
        }
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            try wait(fd, for: Int16(POLLIN), until: deadline, doing: "read from \(where_)")
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw ControlPlaneError(.unreachable, "\(where_): read failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            answer.append(contentsOf: buffer[0..<n])
        }
        return try parse(answer, from: where_)
    }

    /// A non-blocking connect, waited for until `deadline`.
    static func connect(host: String, port: Int, deadline: ContinuousClock.Instant) throws(ControlPlaneError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw ControlPlaneError(.unreachable, "\(host):\(port): cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        var failure = "no address"
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let ai = next {
            next = ai.pointee.ai_next
            let fd = socket(
                ai.pointee.ai_family, ai.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), ai.pointee.ai_protocol)
            if fd < 0 { continue }
            if Glibc.connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 { return fd }
            guard errno == EINPROGRESS else {
                failure = String(cString: strerror(errno))
                close(fd)
                continue
            }
            do throws(ControlPlaneError) {
                try wait(fd, for: Int16(POLLOUT), until: deadline, doing: "connect to \(host):\(port)")
            } catch {
                close(fd)
                throw error
            }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err == 0 { return fd }
            failure = String(cString: strerror(err))
            close(fd)
        }
        throw ControlPlaneError(.unreachable, "\(host):\(port): cannot connect: \(failure)")
    }

    /// Waits until `fd` is ready for `events`, or throws at `deadline`.
    static func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant, doing what: String) throws(ControlPlaneError) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw ControlPlaneError(.unreachable, "\(what): timed out") }
            let ms = Int32(min(Int64(Int32.max), left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&p, 1, ms)
            if n > 0 { return }
            if n < 0, errno != EINTR { throw ControlPlaneError(.unreachable, "\(what): \(String(cString: strerror(errno)))") }
        }
    }

    /// The status and body of a whole HTTP/1.x answer.
    static func parse(_ answer: Data, from where_: String) throws(ControlPlaneError) -> Response {
        let separator = Data("\r\n\r\n".utf8)
        guard let end = answer.range(of: separator) else {
            throw ControlPlaneError(.badResponse, "\(where_): an answer without a complete HTTP header (\(answer.count) bytes)")
        }
        let head = String(decoding: answer[answer.startIndex..<end.lowerBound], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw ControlPlaneError(.badResponse, "\(where_): not an HTTP status line: \(lines.first ?? "")")
        }
        var body = Data(answer[end.upperBound...])
        for line in lines.dropFirst() {
            let pair = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "content-length", let n = Int(pair[1]), n <= body.count {
                body = body.prefix(n)
            }
        }
        return Response(status: status, body: body)
    }
}
