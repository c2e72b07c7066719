import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Deltas inside files, from a static server: `export` writes everything an update needs as plain files.
@Suite("Deltas from a static server")
struct DeltaEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    @Test func aFileChangedInItsMiddleUpdatesFromAStaticServerWithItsChangedBytes() throws {
        let scratch = try Scratch()
        try scratch.write(
            "assets/Big.json",
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "big"}], "platforms": ["iOS"]}"#
        )
        var content = Scratch.noise(1 << 20, seed: 5)
        try scratch.write("assets/big/level.db", content)
        try scratch.write("assets/big/config.json", #"{"lives": 3}"#)
        let folder = scratch.root.appending("assets")
        let site = scratch.root.appending("site")
        #expect(try runTool(mock, ["export", folder.string, "--out", site.string]).status == 0)
        let (server, base) = try pythonStaticServer(site)
        defer { server.interrupt(signal: SIGKILL) }
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--server", base, "--app-group", appGroup.string]
        let first = try runTool(sync, ["ensure", "Big"] + common)
        #expect(first.status == 0, "\(first.stderr)")

        content.replaceSubrange(500_000..<520_000, with: Scratch.noise(20_000, seed: 6))
        try scratch.write("assets/big/level.db", content)
        #expect(try runTool(mock, ["export", folder.string, "--out", site.string]).status == 0)
        let updated = try runTool(sync, ["ensure", "--latest", "--delta", "Big", "--json"] + common)
        #expect(updated.status == 0, "\(updated.stderr)")
        let delta = try #require(jsonLines(updated.stdout).first { $0["event"] as? String == "delta" })
        // 20 000 new bytes and the chunks around them, not the 1 MiB file.
        #expect((delta["downloadSize"] as? Int ?? .max) < 100_000, "\(delta)")
        #expect(!updated.stdout.contains("deltaFailed"), "\(updated.stdout)")
        let installed = try #require(
            FileManager.default.enumerator(atPath: appGroup.appending("AssetPacks/Big").string)?
                .compactMap { $0 as? String }.first { $0.hasSuffix("big/level.db") }
        )
        #expect(try scratch.read(appGroup.appending("AssetPacks/Big").appending(installed)) == content)
        #expect(try runTool(sync, ["verify", "--app-group", appGroup.string]).status == 0)
    }
}
