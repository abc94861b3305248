import Foundation

/// An array of plain values read in place: from a heap buffer of its own, or
/// from a region of a ``DerivedFile`` mapped read-only, which it keeps mapped
/// while it lives. What the shard's derived structures (``PostingIndex``,
/// ``ForwardIndex``, ``ItemRows``, ``ItemOrder``) hold their flat arrays in,
/// so that the same code reads them whether they were just built or mapped
/// from the file beside the shard, where every process reading the shard
/// shares one copy in the page cache instead of holding its own.
///
/// `@unchecked Sendable`: the values are never written once it exists (a
/// mapping is read-only; a heap buffer is filled before it is wrapped), and
/// `owner` keeps them alive.
struct Flat<Element: BitwiseCopyable>: RandomAccessCollection, @unchecked Sendable {
    let buffer: UnsafeBufferPointer<Element>
    /// What keeps `buffer` valid: a ``FlatHeap`` or a ``DerivedFile``.
    private let owner: AnyObject?

    init(buffer: UnsafeBufferPointer<Element>, owner: AnyObject?) {
        self.buffer = buffer
        self.owner = owner
    }

    /// A heap copy of `array`.
    init(_ array: [Element]) {
        let heap = FlatHeap(bytes: array.count * MemoryLayout<Element>.stride)
        let typed = heap.pointer.bindMemory(to: Element.self, capacity: array.count)
        array.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { typed.initialize(from: base, count: source.count) }
        }
        self.init(buffer: UnsafeBufferPointer(start: typed, count: array.count), owner: heap)
    }

    init() { self.init([]) }

    var startIndex: Int { 0 }
    var endIndex: Int { buffer.count }

    @inline(__always) subscript(i: Int) -> Element { buffer[i] }

    /// Calls `body` with the values in place.
    @inline(__always)
    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Element>) throws -> R) rethrows -> R {
        try withExtendedLifetime(owner) { try body(buffer) }
    }

    /// Bytes of the values.
    var byteCount: Int { buffer.count * MemoryLayout<Element>.stride }

    /// Whether the values live on the heap (anonymous memory), not in a mapped file.
    var isOnHeap: Bool { owner is FlatHeap }
}

/// A heap buffer holding a ``Flat``'s values.
final class FlatHeap {
    let pointer: UnsafeMutableRawPointer
    init(bytes: Int) { pointer = .allocate(byteCount: max(bytes, 1), alignment: 16) }
    deinit { pointer.deallocate() }
}

/// A file of flat arrays derived from a shard's SQLite file (which stays the
/// source of truth), written once and mapped read-only by every process that
/// reads the shard: the structures of a ``PostingIndex`` live in the page
/// cache, where the kernel can drop and read them again, instead of in each
/// query worker's anonymous memory.
///
/// Layout, little-endian (the machine's): a 48-byte header (magic, format
/// ``version``, section count, key length, file length, a checksum of
/// everything after the header), the key the content was read with (the
/// word index's ``PostingIndex/key(_:)``), the section table (offset and byte
/// count of each), then the sections, each aligned to 16 bytes.
///
/// Trusted only whole: a file that is short, of another version or key, or
/// whose checksum does not match is not used (and is written again from
/// SQLite). Written to a temporary name and renamed, so a reader never sees
/// a file half written; not synced, since what a crash damages fails the checks.
///
/// `@unchecked Sendable`: the mapping is read-only and lives as long as the object.
final class DerivedFile: @unchecked Sendable {
    static let magic: UInt64 = 0x3144_5645_4449_4C4C  // "LLDIVED1" read as bytes
    /// The format of the sections; a change of any structure's sections bumps it.
    static let version: UInt32 = 1
    static let headerBytes = 48
    /// Bytes of the file checked before they are let go from the resident set.
    static let checkPiece = 64 << 20

    struct Failure: Error, CustomStringConvertible {
        enum Code { case missing, unreadable, invalid, stale, unwritable }
        let code: Code
        let message: String
        var description: String { message }
    }

    let base: UnsafeRawPointer
    let length: Int
    let key: [UInt8]
    private let sections: [(offset: Int, bytes: Int)]

    /// The name of the derived file of a shard's SQLite file.
    static func path(forShard path: String) -> String { path + ".derived" }

    /// Maps `path` and checks it whole; `key`: the content it must have been
    /// read from (nil: any).
    init(path: String, key expected: [UInt8]?) throws(Failure) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw Failure(code: errno == ENOENT ? .missing : .unreadable, message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size >= Self.headerBytes else {
            throw Failure(code: .invalid, message: "\(path) is shorter than its header")
        }
        let length = Int(st.st_size)
        guard let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else {
            throw Failure(code: .unreadable, message: "cannot map \(path): \(String(cString: strerror(errno)))")
        }
        let base = UnsafeRawPointer(map)
        func fail(_ code: Failure.Code, _ why: String) -> Failure {
            munmap(map, length)
            return Failure(code: code, message: "\(path): \(why)")
        }
        let magic = base.loadUnaligned(as: UInt64.self)
        let version = base.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        let count = Int(base.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        let keyLength = Int(base.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        let fileLength = Int(base.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        let checksum = base.loadUnaligned(fromByteOffset: 32, as: UInt64.self)
        guard magic == Self.magic else { throw fail(.invalid, "not a derived file") }
        guard version == Self.version else { throw fail(.stale, "format \(version), not \(Self.version)") }
        guard fileLength == length, keyLength >= 0, count >= 0, count < 1 << 16,
            Self.headerBytes + Self.align(keyLength) + count * 16 <= length
        else { throw fail(.invalid, "truncated or of a wrong length") }
        let key = Array(UnsafeRawBufferPointer(start: base + Self.headerBytes, count: keyLength))
        if let expected, key != expected { throw fail(.stale, "read from other data than the shard holds") }
        // Read a piece at a time, each let go once read, so that checking a
        // large file does not hold it all in this process's resident set.
        var sum = Checksum()
        var at = Self.headerBytes
        while at < length {
            let n = min(Self.checkPiece, length - at)
            sum.add(UnsafeRawBufferPointer(start: base + at, count: n))
            let pageStart = (at / Self.checkPiece) * Self.checkPiece
            _ = madvise(UnsafeMutableRawPointer(mutating: base + pageStart), at + n - pageStart, MADV_DONTNEED)
            at += n
        }
        guard sum.value == checksum else { throw fail(.invalid, "checksum does not match its content") }
        var sections: [(Int, Int)] = []
        let table = Self.headerBytes + Self.align(keyLength)
        for i in 0..<count {
            let offset = Int(base.loadUnaligned(fromByteOffset: table + 16 * i, as: UInt64.self))
            let bytes = Int(base.loadUnaligned(fromByteOffset: table + 16 * i + 8, as: UInt64.self))
            guard offset >= 0, bytes >= 0, offset % 16 == 0, offset <= length, bytes <= length - offset else {
                throw fail(.invalid, "section \(i) out of the file")
            }
            sections.append((offset, bytes))
        }
        self.base = base
        self.length = length
        self.key = key
        self.sections = sections
        // The check read every page: let them go from this process's
        // resident set, so that it counts only what searches touch.
        releaseResidentPages()
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), length) }

    /// Lets every page of the mapping go from this process's resident set.
    /// The pages stay in the page cache (the mapping is shared and clean), so
    /// the next read of one maps it again without reading the disk; what the
    /// process holds of the file is then only what it reads from now on.
    func releaseResidentPages() {
        _ = madvise(UnsafeMutableRawPointer(mutating: base), length, MADV_DONTNEED)
    }

    static func align(_ n: Int) -> Int { (n + 15) & ~15 }

    /// The checksum of `bytes` (see ``Checksum``).
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var c = Checksum()
        c.add(bytes)
        return c.value
    }

    /// Reads the sections in order (see ``DerivedReader``).
    func reader() -> DerivedReader { DerivedReader(file: self) }

    fileprivate func section(_ i: Int) -> (offset: Int, bytes: Int)? { i < sections.count ? sections[i] : nil }
    var sectionCount: Int { sections.count }

    /// Writes `sections` as a derived file at `path` with `key`: to a
    /// temporary name beside it, then renamed over it.
    static func write(path: String, key: [UInt8], sections: DerivedWriter) throws(Failure) {
        let temp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(code: .unwritable, message: "cannot create \(temp): \(String(cString: strerror(errno)))") }
        var ok = false
        defer {
            close(fd)
            if !ok { unlink(temp) }
        }
        let parts = sections.parts
        let table = headerBytes + align(key.count)
        var offset = align(table + parts.count * 16)
        // The key, the table and the header, in one buffer; the header last,
        // once the checksum of what follows it is known.
        let head = UnsafeMutableRawBufferPointer.allocate(byteCount: offset, alignment: 16)
        defer { head.deallocate() }
        head.initializeMemory(as: UInt8.self, repeating: 0)
        key.withUnsafeBytes { k in if !k.isEmpty { (head.baseAddress! + headerBytes).copyMemory(from: k.baseAddress!, byteCount: k.count) } }
        var placed: [(Int, Int)] = []
        for p in parts {
            placed.append((offset, p.bytes.count))
            offset = align(offset + p.bytes.count)
        }
        let length = offset
        for (i, (o, n)) in placed.enumerated() {
            head.storeBytes(of: UInt64(o), toByteOffset: table + 16 * i, as: UInt64.self)
            head.storeBytes(of: UInt64(n), toByteOffset: table + 16 * i + 8, as: UInt64.self)
        }
        var sum = Checksum()
        func put(_ bytes: UnsafeRawBufferPointer, at: Int) throws(Failure) {
            sum.add(bytes)
            var written = 0
            while written < bytes.count {
                let n = pwrite(fd, bytes.baseAddress! + written, bytes.count - written, off_t(at + written))
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw Failure(code: .unwritable, message: "cannot write \(temp): \(String(cString: strerror(errno)))") }
                written += n
            }
        }
        try put(UnsafeRawBufferPointer(rebasing: head[headerBytes...]), at: headerBytes)
        let zeros = UnsafeRawBufferPointer(rebasing: head[0..<16])  // the header, zero until written last
        for (p, (o, n)) in zip(parts, placed) where n > 0 {
            try put(p.bytes, at: o)
            let pad = align(o + n) - (o + n)
            if pad > 0 { try put(UnsafeRawBufferPointer(rebasing: zeros[0..<pad]), at: o + n) }
        }
        head.storeBytes(of: magic, toByteOffset: 0, as: UInt64.self)
        head.storeBytes(of: version, toByteOffset: 8, as: UInt32.self)
        head.storeBytes(of: UInt32(parts.count), toByteOffset: 12, as: UInt32.self)
        head.storeBytes(of: UInt64(key.count), toByteOffset: 16, as: UInt64.self)
        head.storeBytes(of: UInt64(length), toByteOffset: 24, as: UInt64.self)
        head.storeBytes(of: sum.value, toByteOffset: 32, as: UInt64.self)
        try put(UnsafeRawBufferPointer(rebasing: head[0..<headerBytes]), at: 0)
        guard ftruncate(fd, off_t(length)) == 0 else {
            throw Failure(code: .unwritable, message: "cannot size \(temp): \(String(cString: strerror(errno)))")
        }
        // Not synced: a file that a crash leaves short or stale fails its
        // length or checksum and is read again from SQLite.
        guard rename(temp, path) == 0 else {
            throw Failure(code: .unwritable, message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        ok = true
    }
}

/// A fast checksum of 8-byte words in four lanes, fed in pieces (a torn or
/// damaged file, not an adversary, is what it detects).
struct Checksum {
    private var h: (UInt64, UInt64, UInt64, UInt64) = (0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0x27D4_EB2F_1656_67C5)
    /// Bytes not yet folded in (less than a block of 32).
    private var pending: [UInt8] = []
    private var total = 0
    private static let m: UInt64 = 0x0000_0100_0000_01B3

    @inline(__always)
    private mutating func block(_ b: UnsafeRawBufferPointer, _ at: Int) {
        h.0 = (h.0 ^ b.loadUnaligned(fromByteOffset: at, as: UInt64.self)) &* Self.m
        h.1 = (h.1 ^ b.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self)) &* Self.m
        h.2 = (h.2 ^ b.loadUnaligned(fromByteOffset: at + 16, as: UInt64.self)) &* Self.m
        h.3 = (h.3 ^ b.loadUnaligned(fromByteOffset: at + 24, as: UInt64.self)) &* Self.m
    }

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        total += bytes.count
        var i = 0
        if !pending.isEmpty {
            while pending.count < 32, i < bytes.count {
                pending.append(bytes[i])
                i += 1
            }
            guard pending.count == 32 else { return }
            let full = pending
            full.withUnsafeBytes { block($0, 0) }
            pending = []
        }
        while i + 32 <= bytes.count {
            block(bytes, i)
            i += 32
        }
        if i < bytes.count { pending.append(contentsOf: bytes[i...]) }
    }

    var value: UInt64 {
        var tail = h.0 &+ h.1.rotatedLeft(17) &+ h.2.rotatedLeft(31) &+ h.3.rotatedLeft(47)
        for b in pending { tail = (tail ^ UInt64(b)) &* Self.m }
        return tail ^ (tail >> 29) ^ UInt64(total)
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(_ n: UInt64) -> UInt64 { self << n | self >> (64 - n) }
}

/// The sections of a derived file being made, in order: each a byte copy of
/// a flat array, or of one value.
struct DerivedWriter {
    fileprivate final class Part {
        let bytes: UnsafeRawBufferPointer
        let owner: Any
        init(bytes: UnsafeRawBufferPointer, owner: Any) {
            self.bytes = bytes
            self.owner = owner
        }
    }
    fileprivate var parts: [Part] = []

    /// Adds `flat`'s values (not copied: it must live until the file is written).
    mutating func put<T>(_ flat: Flat<T>) {
        parts.append(Part(bytes: UnsafeRawBufferPointer(flat.buffer), owner: flat))
    }

    mutating func put<T: BitwiseCopyable>(_ array: [T]) { put(Flat(array)) }

    mutating func put(_ value: Int) { put([Int64(value)]) }
}

/// Reads a ``DerivedFile``'s sections in the order they were put, each as
/// a ``Flat`` in place or a copy; a section of the wrong size for its type
/// fails the read.
struct DerivedReader {
    let file: DerivedFile
    private var next = 0

    init(file: DerivedFile) { self.file = file }

    /// The next section's values, in place.
    mutating func flat<T: BitwiseCopyable>(_: T.Type = T.self) throws(DerivedFile.Failure) -> Flat<T> {
        guard let (offset, bytes) = file.section(next) else {
            throw DerivedFile.Failure(code: .invalid, message: "section \(next) is missing")
        }
        guard bytes % MemoryLayout<T>.stride == 0, MemoryLayout<T>.alignment <= 16 else {
            throw DerivedFile.Failure(code: .invalid, message: "section \(next) does not hold whole values of \(T.self)")
        }
        next += 1
        let count = bytes / MemoryLayout<T>.stride
        let typed = (file.base + offset).assumingMemoryBound(to: T.self)
        return Flat(buffer: UnsafeBufferPointer(start: typed, count: count), owner: file)
    }

    /// The next section's values, copied onto the heap.
    mutating func array<T: BitwiseCopyable>(_: T.Type = T.self) throws(DerivedFile.Failure) -> [T] {
        Array(try flat(T.self))
    }

    /// The next section's one value.
    mutating func int() throws(DerivedFile.Failure) -> Int {
        let f = try flat(Int64.self)
        guard f.count == 1 else { throw DerivedFile.Failure(code: .invalid, message: "section \(next - 1) is not one value") }
        return Int(f[0])
    }

    /// Fails the read unless `condition` holds (a check of the sections'
    /// consistency: counts that index each other).
    func check(_ condition: Bool, _ what: @autoclosure () -> String) throws(DerivedFile.Failure) {
        guard condition else { throw DerivedFile.Failure(code: .invalid, message: "inconsistent sections: \(what())") }
    }

    /// Whether every section was read.
    var isAtEnd: Bool { next == file.sectionCount }
}
