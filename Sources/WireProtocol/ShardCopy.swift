import Foundation

/// Copying a shard's file from a replica that has every change to one that
/// cannot be caught up change by change (it was away longer than the
/// coordinator's log reaches, or it holds other changes under the same
/// numbers). Workers talk only to the coordinator, so the copy goes through
/// it, one chunk at a time: `copy_request` to the source's indexer,
/// `copy_chunk` back, the same `copy_chunk` on to the target's indexer,
/// `copy_ack` back, and the next `copy_request`. One chunk in flight bounds
/// what the coordinator holds to one chunk per copy.
extension Body {
    /// Coordinator → the source replica's indexer: send bytes from `offset` of
    /// copy `copy` of `shard`. The first request of a copy (offset 0) makes
    /// the snapshot, a consistent copy of the file taken between two changes.
    public struct CopyRequest: Sendable, Hashable, Codable {
        public var shard: Int
        /// Names the copy: a request for another copy of the shard drops the snapshot of the last one.
        public var copy: String
        public var offset: Int
        public var maxBytes: Int
        public init(shard: Int, copy: String, offset: Int, maxBytes: Int) {
            self.shard = shard; self.copy = copy; self.offset = offset; self.maxBytes = maxBytes
        }
    }

    /// Source indexer → coordinator, and coordinator → target indexer: bytes
    /// `offset..<offset + data.count` of the snapshot, which holds changes
    /// 1…`sequence` of the shard and is `size` bytes long.
    public struct CopyChunk: Sendable, Hashable, Codable {
        public var shard: Int
        public var copy: String
        public var sequence: Int
        public var offset: Int
        public var size: Int
        /// Base64 of the bytes.
        public var data: String
        public init(shard: Int, copy: String, sequence: Int, offset: Int, size: Int, data: String) {
            self.shard = shard; self.copy = copy; self.sequence = sequence; self.offset = offset; self.size = size; self.data = data
        }
    }

    /// Target indexer → coordinator: the chunk is written (`received` bytes
    /// so far); with `installed`, the last chunk was, and the shard file now
    /// holds the copy, changes 1…`sequence`.
    public struct CopyAck: Sendable, Hashable, Codable {
        public var shard: Int
        public var copy: String
        public var received: Int
        public var installed: Bool?
        public var sequence: Int?
        public init(shard: Int, copy: String, received: Int, installed: Bool? = nil, sequence: Int? = nil) {
            self.shard = shard; self.copy = copy; self.received = received; self.installed = installed; self.sequence = sequence
        }
    }
}
