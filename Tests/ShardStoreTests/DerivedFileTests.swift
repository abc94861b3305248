import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// The shard's ``PostingIndex`` kept in a derived file beside the SQLite file
/// and mapped (``DerivedFile``): the mapped index must be the heap one array
/// for array, searches must answer the same from either and from FTS5, a
/// file that is missing, damaged or of other data must be read again from
/// SQLite, and the indexes held must stay within the memory budget.
@Suite struct DerivedFileTests {
    /// A random shard (``PostingSearchTests/store(_:seed:count:)``) with its
    /// index read on the heap, and the same index read again as a worker
    /// reads it, its arrays grown in files beside the shard (``BuildSpace``),
    /// then written and mapped back. The build's files are gone once it ends.
    static func indexes(_ dir: TempDir, seed: UInt64) throws -> (ShardStore, heap: PostingIndex, mapped: PostingIndex) {
        let s = try PostingSearchTests.store(dir, seed: seed)
        let heap = try #require(try s.db.transaction(.deferred) { try PostingIndex(db: s.db) })
        let before = try Set(FileManager.default.contentsOfDirectory(atPath: dir.url.path))
        let space = BuildSpace(directory: dir.url.path)
        let inFiles = try #require(try s.db.transaction(.deferred) { try PostingIndex(db: s.db, space: space) })
        // Its arrays are mapped from the build's files: the heap holds the vocabularies.
        #expect(inFiles.forward?.tokens.isOnHeap == false && inFiles.heapBytes < heap.heapBytes)
        let mapped = try inFiles.written(to: DerivedFile.path(forShard: s.path))
        let after = try Set(FileManager.default.contentsOfDirectory(atPath: dir.url.path))
        #expect(after.subtracting(before) == [(DerivedFile.path(forShard: s.path) as NSString).lastPathComponent])
        return (s, heap, mapped)
    }

    @Test func theMappedIndexIsTheHeapOne() throws {
        let dir = TempDir()
        let (s, heap, mapped) = try Self.indexes(dir, seed: 53)
        #expect(heap.file == nil && mapped.file != nil)
        #expect(mapped.key == heap.key && mapped.maxID == heap.maxID && mapped.entries == heap.entries)
        #expect(mapped.terms.count == heap.terms.count && heap.terms.count > 20)
        for i in 0..<heap.terms.count {
            #expect(mapped.terms.term(i) == heap.terms.term(i) && mapped.terms.docs[i] == heap.terms.docs[i])
            #expect(mapped.list(i) == heap.list(i) && mapped.masks(i) == heap.masks(i))
            let a = heap.withBitmap(i) { $0.map(Array.init) }, b = mapped.withBitmap(i) { $0.map(Array.init) }
            #expect(a == b)
        }
        // Every item's place, text tokens and row.
        let f = try #require(heap.forward), g = try #require(mapped.forward)
        #expect(Array(f.tokens) == Array(g.tokens) && Array(f.valueStart) == Array(g.valueStart) && Array(f.valueName) == Array(g.valueName))
        #expect(Array(f.termBytes) == Array(g.termBytes) && Array(f.baseMasks) == Array(g.baseMasks))
        #expect(Array(f.asciiOfWordTerm) == Array(g.asciiOfWordTerm) && Array(f.extraAscii) == Array(g.extraAscii))
        #expect(Array(f.occurrences.entries) == Array(g.occurrences.entries) && Array(f.occurrences.scanOnly) == Array(g.occurrences.scanOnly))
        #expect(g.asciiVocabulary.count == f.asciiVocabulary.count && g.extraTerms.count == f.extraTerms.count && g.wordTerms === mapped.terms)
        let rowsA = try #require(heap.rows), rowsB = try #require(mapped.rows)
        var rowsSeen = 0
        for id in Int64(-1)...Int64(heap.maxID + 2) {
            #expect(heap.uidOrder.place(of: id) == mapped.uidOrder.place(of: id))
            #expect(f.values(of: id) == g.values(of: id))
            let a = rowsA.withRow(id) { uid, json, layout in
                Array(uid) + [0] + Array(json) + (layout.map { $0.keys.map(UInt8.init(truncatingIfNeeded:)) } ?? [])
            }
            let b = rowsB.withRow(id) { uid, json, layout in
                Array(uid) + [0] + Array(json) + (layout.map { $0.keys.map(UInt8.init(truncatingIfNeeded:)) } ?? [])
            }
            #expect(a == b)
            if a != nil { rowsSeen += 1 }
        }
        let items = try s.count()
        #expect(rowsSeen == items)
        // On the heap: the vocabularies only, once mapped.
        #expect(mapped.heapBytes < heap.heapBytes / 2 && mapped.fileBytes > 0)
    }

    /// Random plans answer the same with the heap index, the mapped one, and
    /// none (FTS5 and SQLite).
    @Test func searchesAgreeMappedHeapAndPlain() throws {
        for seed in [59, 61] as [UInt64] {
            let dir = TempDir()
            let (_, heap, mapped) = try Self.indexes(dir, seed: seed)
            let reader = try openStore(dir, mode: .readOnly)
            let plain = try openStore(dir, mode: .readOnly)
            plain.searchCache.searchesUsePostingIndex = false
            defer { PostingIndexes.shared.forget(path: reader.path) }
            var found = 0
            for plan in PostingSearchTests.randomPlans(100, seed: seed) {
                PostingIndexes.shared.publish(path: reader.path, index: heap)
                let a = try reader.search(plan)
                PostingIndexes.shared.publish(path: reader.path, index: mapped)
                let b = try reader.search(plan)
                let c = try plain.search(plan)
                #expect(a == b && b == c, "\(plan.words) \(plan.searchableAttributes)")
                found += b.hits.count
            }
            #expect(found > 300 && reader.searchCache.postingSearches == 200)
        }
    }

    /// What a shard's readers answer, searched with its index and without.
    static func answers(_ dir: TempDir, seed: UInt64) throws -> [ShardSearchResult] {
        let reader = try openStore(dir, mode: .readOnly)
        let plans = PostingSearchTests.randomPlans(40, seed: seed)
        let plain = try openStore(dir, mode: .readOnly)
        plain.searchCache.searchesUsePostingIndex = false
        let expected = try plans.map { try plain.search($0) }
        let stats = try reader.buildSuggestionIndex()
        #expect(stats.ids > 0)
        defer { PostingIndexes.shared.forget(path: reader.path) }
        let got = try plans.map { plan in
            if try PostingIndexTests.held(reader) == nil { try reader.buildSuggestionIndex() }
            return try reader.search(plan)
        }
        #expect(got == expected)
        #expect(reader.searchCache.postingSearches == plans.count)
        return got
    }

    /// The file's identity: its inode and length.
    static func identity(_ path: String) -> (ino_t, off_t)? {
        var st = stat()
        return stat(path, &st) == 0 ? (st.st_ino, st.st_size) : nil
    }

    @Test func aMissingDamagedOrStaleFileIsReadAgainFromSQLite() throws {
        let dir = TempDir()
        let s = try PostingSearchTests.store(dir, seed: 67)
        let path = DerivedFile.path(forShard: s.path)
        let key = try PostingIndex.key(s.db)
        let first = try Self.answers(dir, seed: 67)
        let written = try #require(Self.identity(path))
        _ = try DerivedFile(path: path, key: key)
        // Read again from a file that is whole: not written again.
        #expect(try Self.answers(dir, seed: 67) == first)
        #expect(Self.identity(path)?.0 == written.0)

        // Deleted.
        #expect(unlink(path) == 0)
        #expect(try Self.answers(dir, seed: 67) == first)
        #expect(Self.identity(path) != nil)

        // A byte changed in the middle of the lists.
        let length = Int(try #require(Self.identity(path)).1)
        let fd = open(path, O_RDWR)
        var byte: UInt8 = 0
        #expect(pread(fd, &byte, 1, off_t(length / 2)) == 1)
        byte ^= 0x5A
        #expect(pwrite(fd, &byte, 1, off_t(length / 2)) == 1)
        close(fd)
        #expect(throws: DerivedFile.Failure.self) { try DerivedFile(path: path, key: key) }
        let damaged = try #require(Self.identity(path))
        #expect(try Self.answers(dir, seed: 67) == first)
        #expect(Self.identity(path)?.0 != damaged.0)
        _ = try DerivedFile(path: path, key: key)

        // Cut short.
        #expect(truncate(path, off_t(length - 100)) == 0)
        #expect(throws: DerivedFile.Failure.self) { try DerivedFile(path: path, key: key) }
        #expect(try Self.answers(dir, seed: 67) == first)
        #expect(Self.identity(path)?.1 == off_t(length))

        // Of other data: a write changes the word index's key.
        try s.put(PostingSearchTests.randomItems(30, seed: 71, prefix: "n"))
        let newKey = try PostingIndex.key(s.db)
        #expect(newKey != key)
        #expect(throws: DerivedFile.Failure.self) { try DerivedFile(path: path, key: newKey) }
        let after = try Self.answers(dir, seed: 67)
        #expect(after != first)
        #expect(try DerivedFile(path: path, key: newKey).key == newKey)
    }

    /// The indexes a process holds stay within its budget: the least
    /// recently used go, and one that does not fit alone is not held (its
    /// shard is then answered from SQLite).
    @Test func heldIndexesStayWithinTheBudget() throws {
        let dirs = (0..<3).map { _ in TempDir() }
        let built = try dirs.enumerated().map { i, d in try Self.indexes(d, seed: 73 + UInt64(i)) }
        let mappedBytes = built.map(\.mapped.heapBytes), heapBytes = built.map(\.heap.heapBytes)
        let budget = mappedBytes.max()! * 2 + mappedBytes.min()! / 2
        #expect(heapBytes.min()! > budget)
        let held = PostingIndexes(budget: budget)
        for (s, _, mapped) in built {
            held.publish(path: s.path, index: mapped)
            #expect(held.accountedBytes <= budget)
            #expect(held.index(path: s.path, key: mapped.key) != nil)
        }
        // Three did not fit: the first went.
        #expect(held.index(path: built[0].0.path, key: built[0].mapped.key) == nil)
        #expect(held.index(path: built[2].0.path, key: built[2].mapped.key) != nil)
        // A heap index larger than the budget is not held, and pushes none out.
        held.publish(path: built[0].0.path, index: built[0].heap)
        #expect(held.index(path: built[0].0.path, key: built[0].heap.key) == nil)
        #expect(held.accountedBytes <= budget && held.accountedBytes >= mappedBytes[1] + mappedBytes[2])
        #expect(held.overBudget >= 2)
        // A budget of nothing holds nothing.
        let none = PostingIndexes(budget: 0)
        none.publish(path: built[1].0.path, index: built[1].mapped)
        #expect(none.accountedBytes == 0 && none.index(path: built[1].0.path, key: built[1].mapped.key) == nil)
    }

    /// The resident bytes of the mapping that starts at `base`, from
    /// `/proc/self/smaps` (the process's own count, not the page cache's).
    static func residentBytes(ofMappingAt base: UnsafeRawPointer) throws -> Int {
        let start = String(UInt(bitPattern: base), radix: 16)
        // Read to the end with read(2): Foundation stops at the first chunk
        // of a /proc file, whose size reads as 0.
        let fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 1 << 16)
        while case let n = read(fd, &chunk, chunk.count), n > 0 { bytes += chunk[0..<n] }
        let smaps = String(decoding: bytes, as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), line[..<dash].allSatisfy(\.isHexDigit) {
                inside = line[..<dash].drop { $0 == "0" } == start[...].drop { $0 == "0" }
            } else if inside, line.hasPrefix("Rss:") {
                return Int(line.split(separator: " ")[1])! * 1024
            }
        }
        struct NoMapping: Error { let start: String }
        throw NoMapping(start: start)
    }

    /// The pages of a mapped index's file that are read become resident, and
    /// ``ShardStore/releaseMappedPages()`` lets them go again (a query
    /// worker does so past its budget) while the index still answers from
    /// the page cache.
    @Test func mappedPagesLeaveTheResidentSetUntilReadAndWhenLetGo() throws {
        let dir = TempDir()
        let (s, heap, mapped) = try Self.indexes(dir, seed: 79)
        let file = try #require(mapped.file)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        #expect(file.length > 16 * page)
        // Every byte read: every page resident.
        var sum: UInt64 = 0
        for o in stride(from: 0, to: file.length, by: page) { sum &+= UInt64(file.base.load(fromByteOffset: o, as: UInt8.self)) }
        #expect(try Self.residentBytes(ofMappingAt: file.base) >= file.length - page)
        PostingIndexes.shared.publish(path: s.path, index: mapped)
        defer { PostingIndexes.shared.forget(path: s.path) }
        #expect(ShardStore.releaseMappedPages() >= file.length)
        #expect(try Self.residentBytes(ofMappingAt: file.base) <= 2 * page)
        // Still the same index, read again from the page cache.
        for i in 0..<heap.terms.count { #expect(mapped.list(i) == heap.list(i)) }
        #expect(try Self.residentBytes(ofMappingAt: file.base) > 0)
        _ = sum
    }

    /// A build of new data starts once the data is quiet (the same key asked
    /// for) for the quiet time and the last build's duration, never while
    /// it keeps changing; data already read waits four times the last
    /// build's duration; without a key, only that interval counts.
    @Test func aBuildStartsOnceTheDataIsQuiet() throws {
        let held = PostingIndexes()
        let path = "/nonexistent/quiet-\(UInt32.random(in: 0...UInt32.max)).sqlite"
        #expect(held.claim(path: path, key: [1]))  // the first, at once
        #expect(!held.claim(path: path, key: [1]))  // one build at a time
        held.finish(path: path, index: nil, took: .seconds(2))
        // The data keeps changing: no build.
        #expect(!held.claim(path: path, key: [2]))
        Thread.sleep(forTimeInterval: 2.2)
        #expect(!held.claim(path: path, key: [3]))
        // Quiet for the last build's duration (longer than the quiet time): a build.
        Thread.sleep(forTimeInterval: 2.2)
        #expect(held.claim(path: path, key: [3]))
        held.finish(path: path, index: nil, took: .milliseconds(500))
        // The same data again (the build found no index): after 4 x 500 ms.
        #expect(!held.claim(path: path, key: [3]))
        #expect(!held.claim(path: path))
        Thread.sleep(forTimeInterval: 2.2)
        #expect(held.claim(path: path, key: [3]))
    }

    @Test func checksumsSeeEveryByteFedInAnyPieces() {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        let whole = bytes.withUnsafeBytes { DerivedFile.checksum($0) }
        var pieces = Checksum()
        bytes.withUnsafeBytes { b in
            for r in [0..<5, 5..<40, 40..<41, 41..<700, 700..<1000] { pieces.add(UnsafeRawBufferPointer(rebasing: b[r])) }
        }
        #expect(pieces.value == whole)
        var changed = bytes
        changed[999] ^= 1
        #expect(changed.withUnsafeBytes { DerivedFile.checksum($0) } != whole)
        #expect(bytes.dropLast().withUnsafeBytes { DerivedFile.checksum($0) } != whole)
    }
}
