import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// Apple Archives through the built tools, held to an independent tool (scripts/aar_tool.py, written from the
/// format's description and compressing LZFSE with Apple's reference implementation): what it writes, ba-mock
/// inspects and serves and ba-sync installs; what ba-mock writes, it reads.
@Suite("Apple Archive end to end", .serialized)
struct AppleArchiveEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")
    let tool = repositoryRoot().appendingPathComponent("scripts/aar_tool.py").path

    /// Runs the independent tool; a missing reference library is a failure that says how to fix it.
    func independent(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["python3", tool] + arguments)
        if result.stderr.contains("No module named") || result.stderr.contains("lzfse is not installed") {
            Issue.record("the independent tool needs the lzfse and lz4 Python packages: run `make deps`")
        }
        return result
    }

    /// A content folder with names that are not ASCII, an empty file, and one file larger than a block.
    func content(_ scratch: Scratch) throws -> FilePath {
        try scratch.write("content/Über/日本語 🎮.json", #"{"level": "🎮", "enemies": 3}"#)
        try scratch.write("content/empty.bin", Data())
        try scratch.write("content/Videos/big.bin", Scratch.noise(5 << 20, seed: 11))
        var text = Data()
        while text.count < 3 << 20 { text += Data("the quick brown fox jumps over the lazy dog \(text.count)\n".utf8) }
        try scratch.write("content/Levels/map.txt", text)
        try scratch.write(
            "Manifest.json",
            """
            {"assetPackID": "Levels", "downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstallation"]}},
             "fileSelectors": [{"directory": "content"}], "platforms": ["iOS", "macOS"]}
            """
        )
        return scratch.root.appending("content")
    }

    @Test(arguments: ["lzfse", "lzma", "zlib", "lz4", "none"])
    func archivesTheIndependentToolWritesAreInspectedServedAndInstalled(_ algorithm: String) throws {
        let scratch = try Scratch()
        _ = try content(scratch)
        let archive = scratch.root.appending("Levels.aar")
        // Written as ba-package lays a pack out: the manifest at the root, files under Contents/ (the tool puts
        // its ROOT argument's files there), with SH2 digests, in 1 MiB blocks so that files span blocks.
        let written = try independent([
            "write", archive.string, "--algorithm", algorithm, "--block-size", "1048576", "--sha256", "--root-entry",
            "--manifest", scratch.root.appending("Manifest.json").string, scratch.root.string + "/content",
        ])
        #expect(written.status == 0, "\(written.stderr)")

        let inspected = try runTool(mock, ["inspect", archive.string, "--verify"])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(inspected.stdout.contains("Levels: prefetch, 4 files"), "\(inspected.stdout)")
        #expect(inspected.stdout.contains("Contents/Über/日本語 🎮.json"))
        #expect(
            inspected.stdout.contains("verified: 4 files read whole; 4 checked against the SHA-256 the archive carries")
        )

        let server = try RunningTool(mock, ["serve", archive.string, "--port", "0", "--asset-pack-versions", "7"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        // Served byte for byte, with ranges.
        let fetched = try runTool(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-sf", "-o", scratch.root.appending("got.aar").string, url + "/assets/Levels"]
        )
        #expect(fetched.status == 0)
        #expect(try scratch.read(scratch.root.appending("got.aar")) == scratch.read(archive))
        let ranged = try runTool(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-sf", "-r", "100-4195", "-o", scratch.root.appending("range.bin").string, url + "/assets/Levels"]
        )
        #expect(ranged.status == 0)
        #expect(try scratch.read(scratch.root.appending("range.bin")) == scratch.read(archive).subdata(in: 100..<4196))
        let appGroup = scratch.root.appending("AppGroup")
        let ensured = try runTool(sync, ["ensure", "Levels", "--server", url, "--app-group", appGroup.string])
        #expect(ensured.status == 0, "\(ensured.stderr)")
        #expect(ensured.stderr.contains("Levels: installed version 7"), "\(ensured.stderr)")
        for path in ["Über/日本語 🎮.json", "Videos/big.bin", "Levels/map.txt", "empty.bin"] {
            let out = scratch.root.appending("cat.out")
            let cat = try runTool(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "\"$0\" cat \"$1\" --app-group \"$2\" > \"$3\"", sync.path, path, appGroup.string, out.string]
            )
            #expect(cat.status == 0, "\(path): \(cat.stderr)")
            #expect(try scratch.read(out) == scratch.read(scratch.root.appending("content/\(path)")), "\(path)")
        }
        let verified = try runTool(sync, ["verify", "--app-group", appGroup.string])
        #expect(verified.status == 0, "\(verified.stderr)")
    }

    // A public Apple Archive library writes the whole archive as one pbz block (9 MiB raw under a header block
    // size of 4 MiB): each block's own sizes are honoured within the 64 MiB bound, in inspect, serve and ba-sync.
    @Test(arguments: ["lzfse", "zlib"])
    func anArchiveWrittenAsOneBlockLargerThanItsHeaderSaysIsRead(_ algorithm: String) throws {
        let scratch = try Scratch()
        _ = try content(scratch)
        try scratch.write("content/Videos/more.bin", Scratch.noise(1_500_000, seed: 12))  // 9.5 MiB in all
        let archive = scratch.root.appending("Levels.aar")
        let written = try independent([
            "write", archive.string, "--algorithm", algorithm, "--block-size", "4194304", "--single-block",
            "--sha256", "--root-entry", "--manifest", scratch.root.appending("Manifest.json").string,
            scratch.root.string + "/content",
        ])
        #expect(written.status == 0, "\(written.stderr)")
        let listed = try independent(["list", archive.string, "--json"])
        #expect(listed.stdout.contains("\"blocks\": 1"), "\(listed.stdout.prefix(400))")

        let inspected = try runTool(mock, ["inspect", archive.string, "--verify"])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(inspected.stdout.contains("verified: 5 files read whole"), "\(inspected.stdout)")

        let server = try RunningTool(mock, ["serve", archive.string, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        let appGroup = scratch.root.appending("AppGroup")
        let ensured = try runTool(sync, ["ensure", "Levels", "--server", url, "--app-group", appGroup.string])
        #expect(ensured.status == 0, "\(ensured.stderr)")
        let verified = try runTool(sync, ["verify", "--app-group", appGroup.string])
        #expect(verified.status == 0, "\(verified.stderr)")
    }

    // An archive whose files carry no SH2: the note is said once, at install; status keeps it in a column, and
    // shows the app's language under its table, as list does (issue 34).
    @Test func aNoteOnFilesWithoutDigestsIsSaidOnceAndStatusKeepsIt() throws {
        let scratch = try Scratch()
        _ = try content(scratch)
        let archive = scratch.root.appending("Levels.aar")
        let written = try independent([
            "write", archive.string, "--algorithm", "lzfse", "--root-entry",
            "--manifest", scratch.root.appending("Manifest.json").string, scratch.root.string + "/content",
        ])
        #expect(written.status == 0, "\(written.stderr)")
        let server = try RunningTool(mock, ["serve", archive.string, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        let appGroup = scratch.root.appending("AppGroup").string
        let ensured = try runTool(sync, ["ensure", "Levels", "--server", url, "--app-group", appGroup])
        #expect(ensured.status == 0, "\(ensured.stderr)")
        let note = "note: Levels came as an Apple Archive that carries no SHA-256 (SH2) for 4 of its 4 files"
        #expect(ensured.stderr.components(separatedBy: note).count == 2, "\(ensured.stderr)")
        let again = try runTool(sync, ["ensure", "Levels", "--server", url, "--app-group", appGroup])
        #expect(!again.stderr.contains("note:"), "\(again.stderr)")
        let status = try runTool(sync, ["status", "--server", url, "--app-group", appGroup, "--language", "fr"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(!status.stderr.contains("note:"), "\(status.stderr)")
        #expect(status.stdout.contains("FILE DIGESTS") && status.stdout.contains("0 of 4 carried"), "\(status.stdout)")
        #expect(status.stdout.contains("language: fr (the app's)"), "\(status.stdout)")
        let list = try runTool(sync, ["list", "--server", url, "--app-group", appGroup, "--language", "fr"])
        #expect(list.stdout.contains("language: fr (the app's)"), "\(list.stdout)")
    }

    @Test(arguments: ["lzfse", "lzma", "zlib", "lz4", "none"])
    func archivesBAMockWritesAreReadByTheIndependentTool(_ compression: String) throws {
        let scratch = try Scratch()
        _ = try content(scratch)
        let archive = scratch.root.appending("Levels.aar")
        let packed = try runTool(
            mock,
            ["package", "Manifest.json", "--output-path", archive.string, "--compression", compression],
            directory: scratch.root.string
        )
        #expect(packed.status == 0, "\(packed.stderr)")
        #expect(packed.stdout.contains("aar \(compression)"), "\(packed.stdout)")
        let listed = try independent(["list", archive.string, "--json"])
        #expect(listed.status == 0, "\(listed.stderr) \(listed.stdout.suffix(2000))")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
        let container = try #require(report["container"] as? [String: Any])
        #expect(container["algorithm"] as? String == compression)
        let entries = try #require(report["entries"] as? [[String: Any]])
        let files = entries.filter { $0["type"] as? String == "F" }.compactMap { $0["path"] as? String }
        #expect(
            files == [
                "Manifest.json", "Contents/content/Levels/map.txt", "Contents/content/Videos/big.bin",
                "Contents/content/empty.bin", "Contents/content/Über/日本語 🎮.json",
            ]
        )
        #expect(entries.allSatisfy { $0["digest_ok"] as? Bool != false })
        #expect(entries.filter { $0["type"] as? String == "F" }.allSatisfy { $0["sh2"] != nil })
        // Extracted by it, byte for byte.
        let out = scratch.root.appending("extracted")
        let extracted = try independent(["extract", archive.string, out.string])
        #expect(extracted.status == 0, "\(extracted.stderr)")
        #expect(
            try scratch.read(out.appending("Contents/content/Videos/big.bin"))
                == scratch.read(scratch.root.appending("content/Videos/big.bin"))
        )
        #expect(
            try scratch.read(out.appending("Manifest.json")) == scratch.read(scratch.root.appending("Manifest.json"))
        )
        // Reproducible: the same input gives the same bytes.
        let again = scratch.root.appending("again.aar")
        _ = try runTool(
            mock,
            ["package", "Manifest.json", "-o", again.string, "--compression", compression],
            directory: scratch.root.string
        )
        #expect(try scratch.read(again) == scratch.read(archive))
    }

    @Test func aTarIsNeverWrittenUnderAnAARName() throws {
        let scratch = try Scratch()
        _ = try content(scratch)
        let refused = try runTool(
            mock,
            ["package", "Manifest.json", "-o", "Levels.aar", "--format", "tar"],
            directory: scratch.root.string
        )
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("names an Apple Archive (.aar), but --format tar was given"))
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("Levels.aar").string))
        let wrongCompression = try runTool(
            mock,
            ["package", "Manifest.json", "-o", "Levels.aar", "--compression", "zstd"],
            directory: scratch.root.string
        )
        #expect(wrongCompression.status == 64)
        #expect(wrongCompression.stderr.contains("does not go with --format aar"), "\(wrongCompression.stderr)")
    }

    @Test func anArchiveWithoutItsManifestIsNamedByItsFileWithAWarning() throws {
        let scratch = try Scratch()
        _ = try content(scratch)
        let archive = scratch.root.appending("Bonus.aar")
        _ = try independent(["write", archive.string, "--algorithm", "lzfse", scratch.root.string + "/content"])
        let inspected = try runTool(mock, ["inspect", archive.string])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(inspected.stderr.contains("carries no packaging manifest"), "\(inspected.stderr)")
        #expect(inspected.stdout.hasPrefix("Bonus: onDemand, 4 files"), "\(inspected.stdout)")
        #expect(inspected.stdout.contains("------------"))  // no SH2: shown as such

        let server = try RunningTool(mock, ["serve", archive.string, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine())
        #expect(server.stderr.contains("it is served as pack Bonus (from its file name)"))
        let appGroup = scratch.root.appending("AppGroup")
        let ensured = try runTool(sync, ["ensure", "Bonus", "--server", url, "--app-group", appGroup.string])
        #expect(ensured.status == 0, "\(ensured.stderr)")
        let cat = try runTool(sync, ["cat", "Über/日本語 🎮.json", "--app-group", appGroup.string])
        #expect(cat.stdout == #"{"level": "🎮", "enemies": 3}"#)
    }

    /// ba-serve's form mixed with an asset folder: both published in one manifest; an archive that is a pack
    /// the folder also builds, or two archives of one pack, are refused with the reason.
    @Test func archivesAndAFolderAreServedTogether() throws {
        let scratch = try Scratch()
        _ = try content(scratch)
        try scratch.write(
            "Bonus.json",
            #"{"assetPackID": "Bonus", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "content"}], "platforms": ["iOS"]}"#
        )
        let folder = try scratch.copySampleAssets()
        for (manifest, archive) in [("Bonus.json", "Bonus.aar"), ("Manifest.json", "Levels.aar")] {
            let packed = try runTool(mock, ["package", manifest, "-o", archive], directory: scratch.root.string)
            #expect(packed.status == 0, "\(packed.stderr)")
        }
        let bonus = scratch.root.appending("Bonus.aar").string
        let levels = scratch.root.appending("Levels.aar").string
        let server = try RunningTool(mock, ["serve", folder.string, bonus, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        let manifest = try runTool(URL(fileURLWithPath: "/usr/bin/curl"), ["-sf", url + "/manifest"]).stdout
        for id in ["Bonus", "Levels", "Tutorial"] {
            #expect(manifest.contains("\"id\" : \"\(id)\""), "\(manifest)")
        }
        // Levels.aar is pack Levels (its Manifest.json says so), which the folder builds too.
        let clash = try runTool(mock, ["serve", folder.string, levels, "--port", "0"])
        #expect(clash.status != 0)
        #expect(clash.stderr.contains("which a manifest of"), "\(clash.stderr)")
        let twice = try runTool(mock, ["serve", bonus, bonus, "--port", "0"])
        #expect(twice.status == 64)
        #expect(twice.stderr.contains("are both pack Bonus"), "\(twice.stderr)")
        let versions = try runTool(mock, ["serve", bonus, "--asset-pack-versions", "1", "2", "--port", "0"])
        #expect(versions.status == 64)
        #expect(versions.stderr.contains("gives 2 versions for 1 archive(s)"), "\(versions.stderr)")
    }

    /// A folder served as Apple Archives: installed, then updated through a delta between two .aar versions.
    @Test func aFolderServedAsAppleArchivesUpdatesThroughADelta() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let server = try RunningTool(
            mock,
            ["serve", folder.string, "--port", "0", "--format", "aar", "--watch-interval", "0.2"]
        )
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        let fetched = try runTool(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-sf", url + "/assets/Levels", "-o", scratch.root.appending("l.aar").string]
        )
        #expect(fetched.status == 0)
        #expect(Array(try scratch.read(scratch.root.appending("l.aar")).prefix(4)) == Array("pbze".utf8))
        let appGroup = scratch.root.appending("AppGroup")
        let first = try runTool(sync, ["ensure", "Levels", "--server", url, "--app-group", appGroup.string])
        #expect(first.status == 0, "\(first.stderr)")
        let changed = folder.appending("Levels/README.txt")
        try Data("changed for version 2\n".utf8).write(to: URL(fileURLWithPath: changed.string))
        // Wait for version 2 to be published.
        let deadline = Date().addingTimeInterval(60)
        var manifest = ""
        while Date() < deadline {
            manifest = (try? runTool(URL(fileURLWithPath: "/usr/bin/curl"), ["-sf", url + "/manifest"]).stdout) ?? ""
            if manifest.contains("\"deltas\"") { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(manifest.contains("\"deltas\""), "\(manifest)")
        let updated = try runTool(
            sync,
            ["ensure", "--latest", "--delta", "Levels", "--json", "--server", url, "--app-group", appGroup.string]
        )
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(updated.stdout.contains("\"deltaFrom\":1"), "\(updated.stdout) \(updated.stderr)")
        let cat = try runTool(sync, ["cat", "Levels/README.txt", "--app-group", appGroup.string])
        #expect(cat.stdout == "changed for version 2\n")
    }
}
