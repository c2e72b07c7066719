import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage
import TestSupport
import Testing

/// `download-manifest create` and `update` in the library: defaults, URLs, platforms, and the bounds a
/// published manifest's numbers are held to.
@Suite("Self-hosted manifests")
struct SelfHostedManifestTests {
    /// The test sample's Tutorial pack (for iOS) as an Apple Archive.
    func tutorial(_ scratch: Scratch) throws -> FilePath {
        try scratch.makeSampleFolder()
        let parsed = try PackagingManifest.load(from: scratch.root.appending("Tutorial.json"))
        let archive = scratch.root.appending("Tutorial.aar")
        _ = try PackBuilder.build(
            try PackSource.resolve(parsed, root: scratch.root),
            to: archive,
            options: PackBuildOptions(format: .aar)
        )
        return archive
    }

    @Test func versionsDefaultToZeroAndTheURLIsTheBasePlusTheID() throws {
        let scratch = try Scratch()
        let archive = try tutorial(scratch)
        for base in ["https://cdn.example.com/packs", "https://cdn.example.com/packs/"] {
            let result = try SelfHostedManifest.create(
                archives: [archive],
                versions: nil,
                platform: "ios",
                baseURL: base
            )
            let entry = try #require(result.manifest.assetPacks.first)
            #expect(entry.url == "https://cdn.example.com/packs/Tutorial")
            #expect(entry.version == 0)
            #expect(entry.platforms == ["iOS"])
            #expect(result.warnings.isEmpty)
        }
    }

    /// The commands' library calls: create writes the file (its folder made), update carries it forward in
    /// place; an archive that did not change keeps its version, one that did goes up by one.
    @Test func createWritesTheFileAndUpdateCarriesItForward() async throws {
        let scratch = try Scratch()
        let archive = try tutorial(scratch)
        let file = scratch.root.appending("site/v1/manifest.json")
        let created = try await SelfHostedManifest.create(
            archives: [archive],
            versions: [3],
            platform: "iOS",
            baseURL: "https://cdn.example.com/packs",
            writingTo: file
        )
        #expect(try SelfHostedManifest.load(file) == created.manifest)
        #expect(created.manifest.assetPacks.map(\.version) == [3])

        let kept = try await SelfHostedManifest.update(
            manifestAt: file,
            archives: [archive],
            platform: "iOS",
            baseURL: "https://cdn.example.com/packs"
        )
        #expect(kept.changes == ["Tutorial: version 3 kept (archive unchanged)"])
        try scratch.write("Videos/Intro.m4v", Scratch.noise(1000, seed: 9))
        _ = try PackBuilder.build(
            try PackSource.resolve(
                try PackagingManifest.load(from: scratch.root.appending("Tutorial.json")),
                root: scratch.root
            ),
            to: archive,
            options: PackBuildOptions(format: .aar)
        )
        let bumped = try await SelfHostedManifest.update(
            manifestAt: file,
            archives: [archive],
            platform: "iOS",
            baseURL: "https://cdn.example.com/packs"
        )
        #expect(bumped.changes == ["Tutorial: version 3 → 4 (archive changed)"])
        #expect(try SelfHostedManifest.load(file).assetPacks.map(\.version) == [4])
    }

    @Test func aPackForAnotherPlatformIsSkippedWithAWarning() throws {
        let scratch = try Scratch()
        let archive = try tutorial(scratch)
        let result = try SelfHostedManifest.create(
            archives: [archive],
            versions: [2],
            platform: "tvOS",
            baseURL: "https://cdn.example.com"
        )
        #expect(result.manifest.assetPacks.isEmpty)
        #expect(result.warnings == ["skipped \(archive): pack Tutorial is for iOS, not tvOS"])
    }

    /// A published version at the top of Int cannot go up: refused, never wrapped.
    @Test func aVersionThatCannotGoUpIsRefused() throws {
        let scratch = try Scratch()
        let archive = try tutorial(scratch)
        let published = DownloadManifest(assetPacks: [
            DownloadManifest.Entry(
                id: "Tutorial",
                url: "https://cdn.example.com/Tutorial",
                version: Int.max,
                downloadSize: 1,
                downloadPolicy: .onDemand,
                sha256: String(repeating: "0", count: 64),
                installSize: 1,
                fileCount: 1,
                compression: nil
            )
        ])
        let error = try #require(throws: AssetPackFormatError.self) {
            try SelfHostedManifest.update(
                published,
                archives: [archive],
                platform: "iOS",
                baseURL: "https://cdn.example.com"
            )
        }
        #expect(error.code == .invalidOption)
        #expect(error.message == "pack Tutorial is at version \(Int.max), which cannot go up")
    }

    @Test(arguments: [("m.json", true), ("M.JSON", true), ("dir.json/m", false), ("m.json.bak", false), ("m", false)])
    func theManifestPathMustEndInJSON(_ path: String, _ accepted: Bool) {
        let passed = (try? SelfHostedManifest.checkManifestPath(FilePath(path))) != nil
        #expect(passed == accepted, "\(path)")
    }
}
