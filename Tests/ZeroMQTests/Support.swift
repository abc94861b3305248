import Foundation
import Synchronization
import Testing

@testable import ZeroMQ

/// Every test socket gives up on a blocking receive after this, so a broken
/// test fails instead of hanging the suite.
let receiveTimeout: Int32 = 3000

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
func data(_ text: String) -> Data { Data(text.utf8) }
func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }
func texts(_ frames: [Data]?) -> [String]? { frames?.map(text) }

/// A fresh socket with a receive timeout, bound to an ephemeral loopback port
/// (or an inproc name); returns it with the resolved endpoint.
func bound(
    _ context: Context, _ type: SocketType, _ endpoint: String = "tcp://127.0.0.1:*",
    options: [SocketOption] = []
) throws -> (Socket, String) {
    let socket = try Socket(context: context, type: type)
    try socket.set(.receiveTimeout(milliseconds: receiveTimeout))
    try socket.set(options)
    try socket.bind(endpoint)
    return (socket, try socket.lastEndpoint)
}

func connected(
    _ context: Context, _ type: SocketType, to endpoint: String,
    options: [SocketOption] = []
) throws -> Socket {
    let socket = try Socket(context: context, type: type)
    try socket.set(.receiveTimeout(milliseconds: receiveTimeout))
    try socket.set(options)
    try socket.connect(endpoint)
    return socket
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out: \(what)" }
}

/// Runs `operation` but fails after `seconds`; keeps a broken test from
/// hanging the whole suite.
/// The default is generous: the whole suite runs in parallel on two cores,
/// and a hang still fails, only later.
func withTimeout<T: Sendable>(
    _ seconds: Double = 60, _ what: String = "operation",
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut(what: what)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// Reads `count` messages from an AsyncSocket.
func collect(_ socket: AsyncSocket, count: Int) async -> [[Data]] {
    var result: [[Data]] = []
    for await message in socket.messages {
        result.append(message)
        if result.count == count { break }
    }
    return result
}

final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)
    func increment() { atomic.add(1, ordering: .relaxed) }
    var value: Int { atomic.load(ordering: .relaxed) }
}

/// The ZMQError code a throwing expression failed with, or nil.
func zmqCode(_ body: () throws -> Void) -> ZMQError.Code? {
    do { try body(); return nil } catch let error as ZMQError { return error.code } catch { return nil }
}

func zmqCode(_ body: () async throws -> Void) async -> ZMQError.Code? {
    do { try await body(); return nil } catch let error as ZMQError { return error.code } catch { return nil }
}

/// Unique inproc endpoint names, since tests run in parallel.
func inprocName(_ base: String = #function) -> String {
    "inproc://\(base.filter(\.isLetter))-\(UUID().uuidString)"
}
