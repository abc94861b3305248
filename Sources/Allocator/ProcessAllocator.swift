#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which `malloc` this process runs on.
///
/// The executables link mimalloc (Debian's `libmimalloc2.0`) ahead of the C
/// library, so that `malloc` and `free`, for Swift's runtime, SQLite and
/// libzmq alike, resolve to it, as Meilisearch makes mimalloc its global
/// allocator. Why: a search's path allocates and frees small objects by the
/// thousand (JSON trees, arrays, strings), and glibc's malloc, with its
/// per-thread cache of seven chunks a size, spends ~7% of a two-word search's
/// cycles in `malloc`, `free` and their consolidations; mimalloc takes about
/// 5% off that search's latency.
///
/// The libraries (`LimelightClient` and the rest) do not link it: an app
/// keeps its own allocator. This reads which one won, by address, so that
/// a build or an install that lost it shows in the logs and fails a test.
package enum ProcessAllocator {
    /// "mimalloc 2.0.9" when `malloc` is mimalloc's, else "system malloc".
    package static let name: String = {
        #if canImport(Glibc)
            // RTLD_DEFAULT: the symbols as the process resolves them.
            let handle = UnsafeMutableRawPointer(bitPattern: 0)
            guard let malloc = dlsym(handle, "malloc"), let mi = dlsym(handle, "mi_malloc"), malloc == mi else {
                return "system malloc"
            }
            typealias Version = @convention(c) () -> Int32
            guard let v = dlsym(handle, "mi_version") else { return "mimalloc" }
            let n = Int(unsafeBitCast(v, to: Version.self)())
            return "mimalloc \(n / 100).\(n / 10 % 10).\(n % 10)"
        #else
            return "system malloc"
        #endif
    }()

    /// Whether `malloc` is mimalloc's.
    package static var isMimalloc: Bool { name.hasPrefix("mimalloc") }
}
