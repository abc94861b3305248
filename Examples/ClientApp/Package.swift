// swift-tools-version:6.0
import PackageDescription

/// An app that uses Limelight's Swift client as any app would: through the
/// `LimelightClient` library product. `scripts/test` builds it, so the
/// product stays usable from outside the repository's own targets.
let package = Package(
    name: "ClientApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Limelight", path: "../..")
    ],
    targets: [
        .executableTarget(name: "ClientApp", dependencies: [.product(name: "LimelightClient", package: "Limelight")])
    ],
    swiftLanguageModes: [.v6]
)
