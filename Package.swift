// swift-tools-version:6.1
import PackageDescription

// Limelight: Spotlight-style search for Linux servers.
//
// One target per concern. Executables are thin `@main` commands over library
// modules, so that tests build exactly what production runs.

/// mimalloc, linked ahead of the C library so that it serves every `malloc`
/// of the process (Debian: `libmimalloc-dev`; see ``ProcessAllocator``).
let mimalloc: [LinkerSetting] = [.linkedLibrary("mimalloc", .when(platforms: [.linux]))]
/// The modules on a search's path, built for release without the run-time
/// exclusivity checks: with them, every access to a class's or a global's
/// mutable state in the store's and the response's innermost loops calls into
/// the runtime (about 5% of a two-word search's time in process). Debug builds,
/// and so every test run, keep the checks: a conflicting access still traps there.
let hot: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "Limelight",
    platforms: [.macOS(.v15)],
    products: [
        // The Swift client, for apps: `.product(name: "LimelightClient", package: "Limelight")`.
        // Its types (requests, responses, items, query plans) come from the modules it
        // exports; every other module is the server's and not API.
        .library(name: "LimelightClient", targets: ["LimelightClient"]),
        .executable(name: "limelight", targets: ["limelight"]),
        .executable(name: "limelight-coordinator", targets: ["limelight-coordinator"]),
        .executable(name: "limelight-indexer", targets: ["limelight-indexer"]),
        .executable(name: "limelight-query", targets: ["limelight-query"]),
        .executable(name: "limelight-bench", targets: ["limelight-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The coordinator's HTTP endpoint (stats, Prometheus metrics, status page).
        // Without its default trait ConfigurationSupport, which would build swift-configuration
        // for configuration the coordinator reads from its own flags.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // C libraries, behind system-library targets (GRDB's layout). SQLite is
        // wrapped here rather than taken through GRDB.swift: the store's hot paths
        // (one transaction per batch, cached statements, FTS5 and trigram tables,
        // progress handlers and interrupts for cancelled queries)
        // need a thin layer with no record or observation machinery in the way,
        // and the build stays small on two cores. The trade-off: no migrations
        // framework; the store keeps its own format version in `meta`.
        .systemLibrary(name: "CZeroMQ", path: "Sources/CZeroMQ"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "COpenBLAS", path: "Sources/COpenBLAS"),
        // The system's libcrypto, for SHA-256 and HMAC-SHA256 only (Hashing).
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl"])]),

        // Swift faces of the C libraries: no pointers or return codes leak out.
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ", "LimelightConcurrency"], swiftSettings: hot),
        .target(name: "SQLite", dependencies: ["CSQLite"], swiftSettings: hot),
        // SHA-256 and HMAC-SHA256 for the cluster secret's registration proof (ClusterAuth)
        // and for API keys (Tenancy): two functions, for which a cryptography package
        // compiled with the project (BoringSSL) would be most of a first build.
        .target(name: "Hashing", dependencies: ["COpenSSL"]),

        // all-MiniLM-L6-v2 sentence embeddings, natively: tokenizer, encoder, pooling.
        // Optimised even in debug builds: unoptimised, its elementwise loops run
        // some fifty times slower, too slow for the reference test under `swift test`.
        .target(name: "Embedder", dependencies: ["COpenBLAS"], swiftSettings: [.unsafeFlags(["-O"])]),
        // The int8 first pass of a shard's vector search; optimised in debug builds too.
        .target(name: "CVectorKernels", cSettings: [.unsafeFlags(["-O3"])]),
        .target(name: "VectorKernels", dependencies: ["CVectorKernels"], swiftSettings: [.unsafeFlags(["-O"])]),

        // The domain: items, the shared query plan, the query languages.
        // The one concurrency toolkit: a mutex-guarded box, a condition lock, a box for a thread-confined
        // handle, dedicated threads (named apart from swift-service-lifecycle's ConcurrencyHelpers, as target names must be unique).
        .target(name: "LimelightConcurrency"),
        // JSON values, the strict reader that knows where a text stops being JSON, and the one writer.
        .target(name: "JSON", swiftSettings: hot),
        .target(name: "Items", dependencies: ["JSON"], swiftSettings: hot),
        .target(name: "QueryPlan", dependencies: ["Items"], swiftSettings: hot),
        .target(name: "SpotlightQuery", dependencies: ["QueryPlan"]),
        .target(name: "PredicateQuery", dependencies: ["QueryPlan", "Items"]),
        // Algolia's search parameters → a search plan; the shards' answers → Algolia's response.
        .target(name: "SearchParameters", dependencies: ["QueryPlan", "Items", "WireProtocol"], swiftSettings: hot),

        // Any query language → one plan; which shards must answer.
        .target(name: "Planner", dependencies: ["QueryPlan", "SpotlightQuery", "PredicateQuery", "WireProtocol", "Items"]),

        // One SQLite file per shard, evaluating query plans.
        .target(
            name: "ShardStore",
            dependencies: [
                "SQLite", "Items", "QueryPlan", "COpenBLAS", "VectorKernels", "LimelightConcurrency",
                .product(name: "Logging", package: "swift-log"),
            ], swiftSettings: hot),

        // Apps and API keys: the key store, secured keys, and the scope that
        // confines a request to its app's items (docs/security.md).
        .target(
            name: "Tenancy",
            dependencies: [
                "SQLite", "Items", "QueryPlan", "SearchParameters", "Hashing",
            ], swiftSettings: hot),

        // JSON messages on ZeroMQ frames, and the processes that exchange them.
        .target(name: "WireProtocol", dependencies: ["Items", "QueryPlan"], swiftSettings: hot),
        // Workers prove they belong to the cluster: the cluster secret and its proofs.
        .target(name: "ClusterAuth", dependencies: ["Hashing"]),
        // Which malloc the process runs on (the executables link mimalloc).
        .target(name: "Allocator"),
        .target(
            name: "Workers",
            dependencies: [
                "LimelightConcurrency", "Allocator", "ZeroMQ", "WireProtocol", "ShardStore", "SpotlightQuery", "QueryPlan", "Items", "Embedder",
                "ClusterAuth",
                .product(name: "Logging", package: "swift-log"),
            ], swiftSettings: hot),
        // The state that outlives a coordinator (shard map, in-sync sets, epoch, who is active):
        // one interface over a local file (flock) or etcd's HTTP/JSON gateway (URLSession: no gRPC, no TLS stack).
        .target(
            name: "ControlPlane",
            dependencies: ["LimelightConcurrency", "JSON", "WireProtocol", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "Coordinator",
            dependencies: [
                "LimelightConcurrency", "ControlPlane", "Allocator", "ZeroMQ", "WireProtocol", "Planner", "QueryPlan", "Items", "SearchParameters",
                "Embedder", "ClusterAuth", "Tenancy",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ], swiftSettings: hot),
        .target(name: "LimelightClient", dependencies: ["ZeroMQ", "WireProtocol", "Items", "QueryPlan"], swiftSettings: hot),
        .target(
            name: "LimelightCLI",
            dependencies: [
                "LimelightClient", "WireProtocol", "SpotlightQuery", "PredicateQuery", "Items", "QueryPlan",
                "Coordinator", "Workers", "Embedder", "ShardStore", "ClusterAuth", "ZeroMQ", "Tenancy", "ControlPlane",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        // Thin executables.
        // The executables run on mimalloc (see ``ProcessAllocator``); the
        // libraries leave an app its own allocator.
        .executableTarget(
            name: "limelight", dependencies: ["LimelightCLI"],
            path: "Sources/Executables/limelight", linkerSettings: mimalloc),
        .executableTarget(
            name: "limelight-coordinator", dependencies: ["LimelightCLI"],
            path: "Sources/Executables/limelight-coordinator", linkerSettings: mimalloc),
        .executableTarget(
            name: "limelight-indexer", dependencies: ["LimelightCLI"],
            path: "Sources/Executables/limelight-indexer", linkerSettings: mimalloc),
        .executableTarget(
            name: "limelight-query", dependencies: ["LimelightCLI"],
            path: "Sources/Executables/limelight-query", linkerSettings: mimalloc),
        .executableTarget(
            name: "limelight-bench",
            dependencies: [
                "ShardStore", "SpotlightQuery", "Items", "QueryPlan", "LimelightClient", "WireProtocol", "SearchParameters", "Embedder", "ZeroMQ",
                "Allocator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ], path: "Sources/Executables/limelight-bench", swiftSettings: hot, linkerSettings: mimalloc),

        // Tests.
        .testTarget(name: "ItemsTests", dependencies: ["Items"]),
        .testTarget(name: "AllocatorTests", dependencies: ["Allocator"]),
        .testTarget(name: "SpotlightQueryTests", dependencies: ["SpotlightQuery", "QueryPlan"]),
        // GNUstepOracle/ is the Objective-C reference the differential test builds and runs.
        .testTarget(
            name: "PredicateQueryTests", dependencies: ["PredicateQuery", "QueryPlan", "ShardStore", "Items"],
            exclude: ["GNUstepOracle"]),
        .testTarget(name: "SearchParametersTests", dependencies: ["SearchParameters", "QueryPlan", "Items", "WireProtocol"]),
        .testTarget(name: "ShardStoreTests", dependencies: ["ShardStore", "SpotlightQuery", "SQLite"]),
        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ"]),
        .testTarget(name: "WorkersTests", dependencies: ["Workers", "ShardStore", "WireProtocol", "Items"]),
        .testTarget(name: "CoordinatorTests", dependencies: ["Coordinator", "ClusterAuth", "WireProtocol", "Planner", "QueryPlan", "Items"]),
        .testTarget(name: "ControlPlaneTests", dependencies: ["ControlPlane", "WireProtocol", "ShardStore"]),
        .testTarget(name: "WireProtocolTests", dependencies: ["WireProtocol", "Items", "QueryPlan"]),
        .testTarget(name: "EmbedderTests", dependencies: ["Embedder", "Items"]),
        .testTarget(name: "IntegrationTests", dependencies: ["LimelightClient", "WireProtocol", "Items", "ZeroMQ", "ClusterAuth"]),
        .testTarget(name: "LimelightCLITests", dependencies: ["LimelightCLI", "LimelightClient", "ClusterAuth", "ZeroMQ"]),
        .testTarget(name: "TenancyTests", dependencies: ["Tenancy", "QueryPlan", "Items", "SearchParameters", "Hashing"]),
        .testTarget(name: "FuzzTests", dependencies: ["Items", "WireProtocol", "SpotlightQuery", "QueryPlan"]),
    ],
    swiftLanguageModes: [.v6]
)
