// swift-tools-version: 6.2
// Linux only (Debian with Swift 6.3): the code uses Linux calls (syncfs, mallopt, posix_fadvise), so no other
// platform is claimed.
//
// Usable as a versioned dependency (`.package(url: ..., from: "0.1.0")`): no target has unsafe flags, which
// SwiftPM refuses in a package depended on by version. An app links `BackgroundAssets` (Apple's face, the
// client and nothing of the server); its tests link `BackgroundAssetsTesting` (installation events, and
// ba-mock started in-process on port 0).
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]
// The sources build without warnings, held so: a warning there is an error. SwiftPM suppresses the warnings
// of a dependency fetched by URL, so an app that depends on this package is not held to it. Not the tests:
// Swift Testing's own macro expansions warn on this toolchain ("'@const' value should be initialized with a
// compile-time value").
let sourceSettings = swiftSettings + [.treatAllWarnings(as: .error)]

let package = Package(
    name: "ba-mock",
    products: [
        .executable(name: "ba-mock", targets: ["ba-mock"]),
        .executable(name: "ba-sync", targets: ["ba-sync"]),
        .library(name: "AssetPackFormat", targets: ["AssetPackFormat"]),
        .library(name: "AssetPackServer", targets: ["AssetPackServer"]),
        .library(name: "AssetPackClient", targets: ["AssetPackClient"]),
        .library(name: "AssetPackBench", targets: ["AssetPackBench"]),
        // Apple's `BackgroundAssets` declarations over the client, and `import System` (swift-system's
        // `FilePath` and `FileDescriptor`, as Apple's System module has them), so that an app's own
        // asset-pack code compiles unchanged on Linux.
        .library(name: "BackgroundAssets", targets: ["BackgroundAssets", "System"]),
        // What the system does that an app cannot call, for an app's tests: installation events through the
        // app's extension, ba-mock in-process, a manager configured in code.
        .library(name: "BackgroundAssetsTesting", targets: ["BackgroundAssetsTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.30.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        // xxHash's XXH3-128: the identity of a content-defined chunk for deltas (not a check: see ChunkDigest).
        .systemLibrary(
            name: "CXXHash",
            pkgConfig: "libxxhash",
            providers: [.apt(["libxxhash-dev"])]
        ),
        // zstd, called directly for a tar's compression so that it runs on a thread of its own (ArchiveSink).
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // Apple Archive's block codecs: LZFSE written here, LZ4, LZMA and zlib through Debian's libraries.
        .target(
            name: "CAppleCompression",
            linkerSettings: [.linkedLibrary("lz4"), .linkedLibrary("lzma"), .linkedLibrary("z")]
        ),
        // The Linux calls that are not POSIX (syncfs, mallopt, posix_fadvise's advice, O_DIRECT), in one place.
        .target(name: "CLinux"),
        .target(
            name: "AssetPackFormat",
            dependencies: [
                "CAppleCompression",
                "CLibArchive",
                "CLinux",
                "CXXHash",
                "CZstd",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "AssetPackServer",
            dependencies: [
                "AssetPackFormat",
                // Links System wherever Hummingbird's file system module is linked, should a build dir have
                // compiled that module after System (an incremental rebuild of swift-nio): see System above.
                "System",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
                // publish: requests to an S3-compatible store, archives streamed from disk.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "AssetPackClient",
            dependencies: [
                "AssetPackFormat",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        // Apple's System module on Linux: swift-system's types under the name Apple's SDK gives them, and a
        // FilePath of its own. swift-nio's file system modules `#if canImport(System)`: built after our System
        // they would call into it, and every binary that links them would then have to link System too (ba-mock
        // did not: undefined references at link time in a fresh clone). Depending on them builds them first, so
        // they never see it.
        .target(
            name: "System",
            dependencies: [
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "BackgroundAssets",
            dependencies: [
                "System",
                "AssetPackClient",
                "AssetPackFormat",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "BackgroundAssetsTesting",
            dependencies: [
                "BackgroundAssets",
                "System",
                "AssetPackClient",
                "AssetPackFormat",
                "AssetPackServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "AssetPackBench",
            dependencies: [
                "AssetPackClient",
                "BackgroundAssets",
                "System",
                "AssetPackFormat",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "AssetPackCLI",
            dependencies: [
                "AssetPackClient",
                "AssetPackMatrix",
                "AssetPackServer",
                "AssetPackFormat",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "AssetPackMatrix",
            dependencies: [
                "AssetPackClient",
                "AssetPackServer",
                "AssetPackFormat",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .executableTarget(
            name: "ba-sync",
            dependencies: [
                "AssetPackCLI",
                "AssetPackBench",
                "AssetPackMatrix",
                "AssetPackClient",
                "AssetPackFormat",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .executableTarget(
            name: "ba-mock",
            dependencies: [
                "AssetPackCLI",
                "AssetPackServer",
                "AssetPackFormat",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: sourceSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "AssetPackFormat",
                "AssetPackServer",
                "CLibArchive",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: sourceSettings
        ),
        .testTarget(
            name: "AssetPackFormatTests",
            dependencies: ["AssetPackFormat", "CAppleCompression", "CLibArchive", "TestSupport"],
            exclude: ["Corpus", "BlockVectors"],  // read from the source tree by the tests, not bundled
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AssetPackServerTests",
            dependencies: [
                "AssetPackServer",
                "AssetPackFormat",
                "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AssetPackClientTests",
            dependencies: [
                "AssetPackClient",
                "AssetPackBench",
                "AssetPackServer",
                "AssetPackFormat",
                "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AssetPackCLITests",
            dependencies: [
                "AssetPackCLI", "AssetPackClient", "AssetPackMatrix", "AssetPackServer", "TestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BackgroundAssetsTests",
            dependencies: ["BackgroundAssets", "BackgroundAssetsTesting", "System"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "AssetPackFormat",
                "AssetPackServer",
                "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
