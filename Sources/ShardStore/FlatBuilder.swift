import Foundation

/// Where a derived structure's arrays grow while it is built: on the heap,
/// or in files in `directory` (``FlatBuilder``).
///
/// Why: a build reads a whole shard, and its arrays (every posting, every
/// token, every item's JSON) are as large as the shard. Grown on the heap
/// they are a query worker's peak, whatever it was told to hold; grown in
/// files they take a write buffer each, the kernel keeps what it has room
/// for in the page cache, and the finished arrays are mapped, which the
/// derived file's writer copies from.
struct BuildSpace: Sendable {
    /// A folder for the files (on the shard's file system, not a `tmpfs`
    /// that would be memory again); nil: the heap.
    let directory: String?

    static let heap = BuildSpace(directory: nil)

    /// A builder; `capacity`, when the final count is known, is reserved on
    /// the heap (no array copied as it grows), and ignored for a file.
    func builder<Element: BitwiseCopyable>(
        _: Element.Type = Element.self, capacity: Int = 0
    ) throws(DerivedFile.Failure) -> FlatBuilder<Element> {
        try FlatBuilder(directory: directory, capacity: capacity)
    }

    /// A ``Flat`` of `count` zeros that `fill` writes in any order before
    /// it is read: a heap buffer, or a file of that size mapped for writing
    /// (the kernel writes back and lets go what it has no room for).
    func filled<Element: BitwiseCopyable>(
        _: Element.Type = Element.self, count: Int, _ fill: (UnsafeMutableBufferPointer<Element>) -> Void
    ) throws(DerivedFile.Failure) -> Flat<Element> {
        let bytes = count * MemoryLayout<Element>.stride
        guard let directory, bytes > 0 else {
            let heap = FlatHeap(bytes: bytes)
            heap.pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(bytes, 1))
            let typed = heap.pointer.bindMemory(to: Element.self, capacity: count)
            fill(UnsafeMutableBufferPointer(start: typed, count: count))
            return Flat(buffer: UnsafeBufferPointer(start: typed, count: count), owner: heap)
        }
        let file = try SpillFile(directory: directory)
        let mapping = try file.map(bytes: bytes, writable: true)
        let typed = mapping.base.bindMemory(to: Element.self, capacity: count)
        fill(UnsafeMutableBufferPointer(start: typed, count: count))
        _ = madvise(mapping.base, bytes, MADV_DONTNEED)
        return Flat(buffer: UnsafeBufferPointer(start: typed, count: count), owner: mapping)
    }

    /// `array` as a ``Flat``: copied into a file when the space has a folder.
    func flat<Element: BitwiseCopyable>(_ array: [Element]) throws(DerivedFile.Failure) -> Flat<Element> {
        guard directory != nil else { return Flat(array) }
        var b = try builder(Element.self)
        b.append(contentsOf: array)
        return try b.finish()
    }
}

/// An array built by appending, then read as a ``Flat``: on the heap, or
/// written to an unlinked file (``SpillFile``) and mapped when finished. Only the last
/// element may be changed once appended (``updateLast(_:)``), which is what
/// the readers that merge an item's occurrences need.
///
/// Appending never throws: a builder is filled from callbacks that cannot
/// (a token reader's, a column read in place), so the first write that
/// fails is kept, the elements after it are counted but not kept, and
/// ``finish()`` throws it, as a stream's error is read when it is closed.
struct FlatBuilder<Element: BitwiseCopyable> {
    /// Elements not yet written (for a file), or all of them (the heap).
    private var buffer: [Element] = []
    /// The file they are written to; nil on the heap.
    private let file: SpillFile?
    private var written = 0
    /// The first write to the file that failed.
    private var failure: DerivedFile.Failure?

    /// Elements kept before a write (a file's; 1 MiB of them by default).
    private let chunk: Int

    init(directory: String?, bufferBytes: Int = 1 << 20, capacity: Int = 0) throws(DerivedFile.Failure) {
        file = try directory.map { dir throws(DerivedFile.Failure) in try SpillFile(directory: dir) }
        chunk = max(2, bufferBytes / max(1, MemoryLayout<Element>.stride))
        buffer.reserveCapacity(file != nil ? chunk : capacity)
    }

    var count: Int { written + buffer.count }
    var last: Element? { buffer.last }

    mutating func append(_ e: Element) {
        if file != nil, buffer.count == chunk { flush(keepingLast: true) }
        buffer.append(e)
    }

    mutating func append<S: Sequence>(contentsOf s: S) where S.Element == Element {
        for e in s { append(e) }
    }

    /// Appends `elements`, copied a buffer's room at a time.
    mutating func append(contentsOf elements: UnsafeBufferPointer<Element>) {
        guard file != nil else { return buffer.append(contentsOf: elements) }
        var rest = elements[...]
        while !rest.isEmpty {
            if buffer.count == chunk { flush(keepingLast: true) }
            let n = min(rest.count, chunk - buffer.count)
            buffer.append(contentsOf: rest.prefix(n))
            rest = rest.dropFirst(n)
        }
    }

    mutating func append(contentsOf elements: [Element]) {
        elements.withUnsafeBufferPointer { append(contentsOf: $0) }
    }

    /// Changes the last element appended.
    mutating func updateLast(_ change: (inout Element) -> Void) {
        change(&buffer[buffer.count - 1])
    }

    /// Writes the buffer to the file but for its last element when
    /// `keepingLast` (so that ``last`` and ``updateLast(_:)`` keep working).
    private mutating func flush(keepingLast: Bool) {
        guard let file else { return }
        let n = keepingLast ? buffer.count - 1 : buffer.count
        guard n > 0 else { return }
        if failure == nil {
            failure = buffer.withUnsafeBytes { raw in
                file.write(UnsafeRawBufferPointer(rebasing: raw[0..<n * MemoryLayout<Element>.stride]))
            }
        }
        written += n
        buffer.removeFirst(n)
    }

    /// The array, read in place: the heap buffer, or the file mapped
    /// read-only (its pages let go from the resident set, as a derived
    /// file's are). The builder is spent.
    mutating func finish() throws(DerivedFile.Failure) -> Flat<Element> {
        guard let file else { return Flat(buffer) }
        flush(keepingLast: false)
        buffer = []
        if let failure { throw failure }
        guard written > 0 else { return Flat() }
        let mapping = try file.map(bytes: written * MemoryLayout<Element>.stride)
        let typed = UnsafeRawPointer(mapping.base).assumingMemoryBound(to: Element.self)
        return Flat(buffer: UnsafeBufferPointer(start: typed, count: written), owner: mapping)
    }
}

/// A ``FlatBuilder``'s file: created unlinked (a build that dies leaves
/// nothing behind), closed when the builder goes, finished or not.
private final class SpillFile {
    let fd: Int32
    let path: String

    init(directory: String) throws(DerivedFile.Failure) {
        path = directory + "/.limelight-build-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw DerivedFile.Failure(code: .unwritable, message: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        unlink(path)
        self.fd = fd
    }

    deinit { close(fd) }

    /// Appends `bytes`; the failure, if the write failed.
    func write(_ bytes: UnsafeRawBufferPointer) -> DerivedFile.Failure? {
        var done = 0
        while done < bytes.count {
            let w = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if w < 0, errno == EINTR { continue }
            guard w > 0 else { return DerivedFile.Failure(code: .unwritable, message: "cannot write \(path): \(String(cString: strerror(errno)))") }
            done += w
        }
        return nil
    }

    /// The first `bytes` of the file, mapped; the mapping outlives the
    /// descriptor. Read-only, its pages let go from the resident set; or
    /// `writable`, the file first made that long (of zeros).
    func map(bytes: Int, writable: Bool = false) throws(DerivedFile.Failure) -> FlatMapping {
        if writable, ftruncate(fd, off_t(bytes)) != 0 {
            throw DerivedFile.Failure(code: .unwritable, message: "cannot size \(path): \(String(cString: strerror(errno)))")
        }
        guard let map = mmap(nil, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else {
            throw DerivedFile.Failure(code: .unreadable, message: "cannot map \(path): \(String(cString: strerror(errno)))")
        }
        if !writable { _ = madvise(map, bytes, MADV_DONTNEED) }
        return FlatMapping(base: map, length: bytes)
    }
}

/// A finished ``FlatBuilder``'s file, mapped while a ``Flat`` holds it.
final class FlatMapping {
    let base: UnsafeMutableRawPointer
    let length: Int
    init(base: UnsafeMutableRawPointer, length: Int) {
        self.base = base
        self.length = length
    }
    deinit { munmap(base, length) }
}
