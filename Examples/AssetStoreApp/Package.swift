// swift-tools-version: 6.2
// An app's asset-pack layer, written from Apple's BackgroundAssets documentation only, and its tests against
// ba-mock. On Linux `BackgroundAssets` and `System` come from this repository; the code is the same on a device.
import PackageDescription

let package = Package(
    name: "AssetStoreApp",
    dependencies: [
        // A team writes `.package(url: "https://…/ba-mock.git", from: "0.1.0")`; the example builds against the
        // working tree it sits in.
        .package(name: "ba-mock", path: "../..")
    ],
    targets: [
        .target(
            name: "AssetStore",
            dependencies: [.product(name: "BackgroundAssets", package: "ba-mock")]
        ),
        // The downloader extension: on a device its own extension target, run by the system.
        .executableTarget(
            name: "GameDownloader",
            dependencies: ["AssetStore", .product(name: "BackgroundAssets", package: "ba-mock")]
        ),
        .testTarget(
            name: "AssetStoreTests",
            dependencies: [
                "AssetStore",
                .product(name: "BackgroundAssets", package: "ba-mock"),
                .product(name: "BackgroundAssetsTesting", package: "ba-mock"),
            ]
        ),
    ]
)
