import Foundation
import LimelightConcurrency
import ShardStore
import Synchronization
import WireProtocol

/// The files of shard copies under way on one indexer: the snapshot it sends
/// (it is the source) and the copy it receives (it is the target), per shard.
/// Only one copy of a shard is kept each way: a new copy id replaces the old.
final class CopyFiles: Sendable {
    struct Outgoing { var copy: String; var sequence: Int; var size: Int }
    struct Incoming { var copy: String; var received: Int }
    private struct State {
        var outgoing: [Int: Outgoing] = [:]
        var incoming: [Int: Incoming] = [:]
    }
    private let state = Mutex(State())

    func outgoing(_ shard: Int) -> Outgoing? { state.withLock { $0.outgoing[shard] } }
    func setOutgoing(_ shard: Int, _ o: Outgoing?) { state.withLock { $0.outgoing[shard] = o } }
    func incoming(_ shard: Int) -> Incoming? { state.withLock { $0.incoming[shard] } }
    func setIncoming(_ shard: Int, _ i: Incoming?) { state.withLock { $0.incoming[shard] = i } }
}

extension IndexerService {
    static func snapshotPath(data: String, shard: Int) -> String { shardPath(data: data, shard: shard) + ".copy-out" }
    static func receivedPath(data: String, shard: Int) -> String { shardPath(data: data, shard: shard) + ".copy-in" }

    /// The source's side: the first request of a copy takes the snapshot on
    /// the shard's thread (between two changes); every request is answered
    /// with the bytes asked for; the last chunk sent removes the snapshot.
    func serveCopy(_ id: String, _ r: Body.CopyRequest) async {
        guard let (box, exec) = await ownedShard(r.shard, answering: id) else { return }
        let path = Self.snapshotPath(data: configuration.data, shard: r.shard)
        do {
            var out = copies.outgoing(r.shard)
            if r.offset == 0 || out?.copy != r.copy {
                guard r.offset == 0 else {
                    throw WireError(code: "unknown_copy", message: "copy \(r.copy) of shard \(r.shard) is not under way here; start it at offset 0")
                }
                let sequence = try await exec.run { try box.value.snapshot(to: path) }
                let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
                out = CopyFiles.Outgoing(copy: r.copy, sequence: sequence, size: size)
                copies.setOutgoing(r.shard, out)
                logger.info(
                    "took a snapshot to copy",
                    metadata: [
                        "shard": "\(r.shard)", "copy": "\(r.copy)",
                        "shard.sequence": "\(sequence)", "copy.bytes": "\(size)",
                    ])
            }
            guard let out else { return }
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(min(r.offset, out.size)))
            let data = try handle.read(upToCount: max(1, r.maxBytes)) ?? Data()
            if r.offset + data.count >= out.size {
                copies.setOutgoing(r.shard, nil)
                try? FileManager.default.removeItem(atPath: path)
            }
            await link.send(
                id,
                .copyChunk(
                    Body.CopyChunk(
                        shard: r.shard, copy: r.copy, sequence: out.sequence, offset: r.offset,
                        size: out.size, data: data.base64EncodedString())))
        } catch let e as WireError {
            await link.send(id, .error(e))
        } catch {
            logger.error("copy failed", metadata: ["shard": "\(r.shard)", "copy": "\(r.copy)", "error": "\(error)"])
            await link.send(id, .error(WireError(code: "copy_failed", message: "shard \(r.shard): \(error)")))
        }
    }

    /// The target's side: chunks are written in order to a file beside the
    /// shard; the last one puts the copy in place of the shard's content, in
    /// one transaction on the shard's thread, and answers the number it holds.
    func receiveCopy(_ id: String, _ c: Body.CopyChunk) async {
        await TestHold.wait("copy")
        guard let (box, exec) = await ownedShard(c.shard, answering: id) else { return }
        let path = Self.receivedPath(data: configuration.data, shard: c.shard)
        do {
            guard let bytes = Data(base64Encoded: c.data) else {
                throw WireError(code: "invalid_message", message: "copy_chunk 'data' is not base64", field: "data")
            }
            if c.offset == 0 {
                try? FileManager.default.removeItem(atPath: path)
                guard FileManager.default.createFile(atPath: path, contents: nil) else {
                    throw WireError(code: "copy_failed", message: "cannot create \(path)")
                }
                copies.setIncoming(c.shard, CopyFiles.Incoming(copy: c.copy, received: 0))
            }
            guard let have = copies.incoming(c.shard), have.copy == c.copy, have.received == c.offset else {
                throw WireError(
                    code: "unknown_copy",
                    message: "copy \(c.copy) of shard \(c.shard): expected a chunk at offset "
                        + "\(copies.incoming(c.shard).map { String($0.received) } ?? "0 of a new copy"), got \(c.offset)")
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.seek(toOffset: UInt64(c.offset))
            try handle.write(contentsOf: bytes)
            try handle.close()
            let received = c.offset + bytes.count
            copies.setIncoming(c.shard, CopyFiles.Incoming(copy: c.copy, received: received))
            guard received >= c.size else {
                await link.send(id, .copyAck(Body.CopyAck(shard: c.shard, copy: c.copy, received: received)))
                return
            }
            copies.setIncoming(c.shard, nil)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let sequence = try await exec.run { try box.value.replaceContent(withCopyAt: path) }
            tally.changed(shard: c.shard, wrote: true)
            logger.info(
                "shard replaced by a copy",
                metadata: [
                    "shard": "\(c.shard)", "copy": "\(c.copy)",
                    "shard.sequence": "\(sequence)", "copy.bytes": "\(received)",
                ])
            // A copy taken after a split's mark carries it: its purge goes on here.
            slotPurgeWork.signal()
            await link.send(id, .copyAck(Body.CopyAck(shard: c.shard, copy: c.copy, received: received, installed: true, sequence: sequence)))
            // The changes the log sends next arrive behind this: held, the shard is caught up later.
            await TestHold.wait("catch-up")
        } catch let e as WireError {
            await link.send(id, .error(e))
        } catch {
            copies.setIncoming(c.shard, nil)
            logger.error("installing a copy failed", metadata: ["shard": "\(c.shard)", "copy": "\(c.copy)", "error": "\(error)"])
            await link.send(id, .error(WireError(code: "copy_failed", message: "shard \(c.shard): \(error)")))
        }
    }
}
