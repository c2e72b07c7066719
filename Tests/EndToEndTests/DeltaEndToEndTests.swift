import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Deltas inside files, from a static server: `export` writes everything an update needs as plain files.
/// Exported as tar packs (`--format tar`): the hostile deltas below are tars written by hand, as a tar pack's are.
@Suite("Deltas from a static server")
struct DeltaEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    /// A folder of one pack, Big (`big/level.db` with `content`), exported into `site` and served from python's
    /// static server, and Big installed from it.
    struct Site {
        let folder: FilePath
        let site: FilePath
        let appGroup: FilePath
        let common: [String]
        let server: RunningTool
    }

    func serveExported(_ scratch: Scratch, content: Data, extra: [String: String] = [:]) throws -> Site {
        try scratch.write(
            "assets/Big.json",
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "big"}], "platforms": ["iOS"]}"#
        )
        try scratch.write("assets/big/level.db", content)
        for (path, text) in extra { try scratch.write("assets/big/" + path, text) }
        let folder = scratch.root.appending("assets")
        let site = scratch.root.appending("site")
        #expect(try runTool(mock, ["export", folder.string, "--out", site.string, "--format", "tar"]).status == 0)
        let (server, base) = try pythonStaticServer(site)
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--server", base, "--app-group", appGroup.string]
        let first = try runTool(sync, ["ensure", "Big"] + common)
        #expect(first.status == 0, "\(first.stderr)")
        return Site(folder: folder, site: site, appGroup: appGroup, common: common, server: server)
    }

    @Test func aFileChangedInItsMiddleUpdatesFromAStaticServerWithItsChangedBytes() throws {
        let scratch = try Scratch()
        var content = Scratch.noise(1 << 20, seed: 5)
        let served = try serveExported(scratch, content: content, extra: ["config.json": #"{"lives": 3}"#])
        defer { served.server.interrupt(signal: SIGKILL) }
        let (folder, site, appGroup, common) = (served.folder, served.site, served.appGroup, served.common)

        content.replaceSubrange(500_000..<520_000, with: Scratch.noise(20_000, seed: 6))
        try scratch.write("assets/big/level.db", content)
        #expect(try runTool(mock, ["export", folder.string, "--out", site.string, "--format", "tar"]).status == 0)
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

    /// A delta whose recipe names a file outside the base, or rebuilds bytes other than its index says, put
    /// on the static server in place of the real one (the manifest's digest and size made to match): the
    /// client refuses it before anything commits and installs the whole pack instead.
    @Test(arguments: ["outside the base", "wrong digest"])
    func aHostileRecipeFallsBackToTheWholePack(_ kind: String) throws {
        let scratch = try Scratch()
        var content = Scratch.noise(300_000, seed: 7)
        let served = try serveExported(scratch, content: content)
        defer { served.server.interrupt(signal: SIGKILL) }
        let (folder, site, appGroup, common) = (served.folder, served.site, served.appGroup, served.common)
        content.replaceSubrange(100_000..<110_000, with: Scratch.noise(10_000, seed: 8))
        try scratch.write("assets/big/level.db", content)
        #expect(try runTool(mock, ["export", folder.string, "--out", site.string, "--format", "tar"]).status == 0)

        // The hostile delta, bound to the right versions, with the new version's index.
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: try scratch.read(site.appending("manifest"))) as? [String: Any]
        )
        var entries = try #require(manifest["assetPacks"] as? [[String: Any]])
        var deltas = try #require(entries[0]["deltas"] as? [[String: Any]])
        let binding = PackDelta.Binding(
            assetPackID: "Big",
            fromSHA256: try #require(deltas[0]["fromSHA256"] as? String),
            toSHA256: try #require(entries[0]["sha256"] as? String)
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let index = try PackArchiveReader.readIndex(at: site.appending("assets/Big"))
        let recipe =
            kind == "outside the base"
            ? #"{"pieces":[{"from":"../escape.db","length":300000,"offset":0}],"size":300000}"#
            : #"{"pieces":[{"from":"big/level.db","length":300000,"offset":0}],"size":300000}"#
        let hostile = ArchiveFixture.rawTar([
            ("Delta.json", [:], try encoder.encode(binding)),
            ("Patches/big/level.db", [:], Data((recipe + "\n").utf8)),
            ("Index.json", [:], try index.encoded()),
        ])
        let deltaURL = try #require(deltas[0]["url"] as? String)
        try hostile.write(to: URL(fileURLWithPath: site.appending(deltaURL).string))
        deltas[0]["sha256"] = ArchiveFixture.sha256Hex(hostile)
        deltas[0]["downloadSize"] = hostile.count
        entries[0]["deltas"] = deltas
        manifest["assetPacks"] = entries
        try JSONSerialization.data(withJSONObject: manifest).write(
            to: URL(fileURLWithPath: site.appending("manifest").string)
        )

        // What the client will find: the hostile delta read over the installed version 1.
        let packFolder = appGroup.appending("AssetPacks/Big")
        let version = try #require(
            try FileManager.default.contentsOfDirectory(atPath: packFolder.string).first { !$0.hasSuffix(".json") }
        )
        let installedBase = PackDelta.Base(
            index: try PackIndex.load(from: packFolder.appending(version + ".index.json"))
        ) { path in
            let top = try FileDescriptor.openFolder(packFolder.appending(version))
            defer { try? top.close() }
            return try top.openFolder(path, creating: false)
        }
        let probe = scratch.root.appending("probe")
        try FileManager.default.createDirectory(atPath: probe.string, withIntermediateDirectories: true)
        let refused = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extractDelta(
                site.appending(deltaURL),
                into: probe,
                expecting: binding,
                base: installedBase
            )
        }
        let said = kind == "outside the base" ? "which the base version does not hold" : "but its index says"
        #expect(refused?.message.contains(said) == true, "\(refused?.message ?? "")")

        let updated = try runTool(sync, ["ensure", "--latest", "--delta", "Big", "--json"] + common)
        #expect(updated.status == 0, "\(updated.stderr)")
        let failed = try #require(jsonLines(updated.stdout).first { $0["event"] as? String == "deltaFailed" })
        #expect(failed["reason"] as? String == "damaged archive", "\(failed)")
        let installed = try #require(
            FileManager.default.enumerator(atPath: appGroup.appending("AssetPacks/Big").string)?
                .compactMap { $0 as? String }.first { $0.hasSuffix("big/level.db") }
        )
        #expect(try scratch.read(appGroup.appending("AssetPacks/Big").appending(installed)) == content)
        #expect(try runTool(sync, ["verify", "--app-group", appGroup.string]).status == 0)
    }
}
