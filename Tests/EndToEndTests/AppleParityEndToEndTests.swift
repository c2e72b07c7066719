import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// The built tools against what Apple's tools make and do: a download manifest in the shape
/// `ba-package download-manifest create` writes, served by a plain static server; localized packs,
/// platforms and the collision rule from the command line.
@Suite("Apple parity end to end", .serialized)
struct AppleParityEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    @Test func anAppleShapedManifestOnAStaticServerInstalls() throws {
        let scratch = try Scratch()
        let assets = try scratch.copySampleAssets()
        let export = scratch.root.appending("export")
        // tar packs, which carry no SH2: with no sha256 in the manifest, status says the digest is not available.
        let exported = try runTool(mock, ["export", assets.string, "--out", export.string, "--format", "tar"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let ours = try #require(
            try JSONSerialization.jsonObject(with: try scratch.read(export.appending("manifest"))) as? [String: Any]
        )
        let entries = try #require(ours["assetPacks"] as? [[String: Any]])

        // A CDN layout: archives under cdn/v7/<id>.aar, the manifest under meta/.
        let site = scratch.root.appending("site")
        try FileManager.default.createDirectory(
            atPath: site.appending("cdn/v7").string,
            withIntermediateDirectories: true
        )
        try FileManager.default.createDirectory(
            atPath: site.appending("meta").string,
            withIntermediateDirectories: true
        )
        for entry in entries {
            let id = try #require(entry["id"] as? String)
            try FileManager.default.copyItem(
                atPath: export.appending("assets/\(id)").string,
                toPath: site.appending("cdn/v7/\(id).aar").string
            )
        }
        let (server, base) = try pythonStaticServer(site)
        defer { server.interrupt(signal: SIGKILL) }  // the test process may block SIGINT and SIGTERM for its children
        // Only the keys Apple's tool writes: no sha256, installSize, fileCount or compression. One URL is
        // relative to the manifest, the others absolute.
        let apple: [[String: Any]] = entries.map { entry in
            let id = entry["id"] as! String
            return [
                "id": id, "version": entry["version"]!, "downloadSize": entry["downloadSize"]!,
                "downloadPolicy": entry["downloadPolicy"]!, "host": entry["host"]!,
                "url": id == "Tutorial" ? "../cdn/v7/\(id).aar" : "\(base)/cdn/v7/\(id).aar",
            ]
        }
        try scratch.write(
            "site/meta/manifest",
            try JSONSerialization.data(withJSONObject: ["assetPacks": apple], options: [.sortedKeys])
        )
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--server", "\(base)/meta", "--app-group", appGroup.string]

        let synced = try runTool(sync, ["sync"] + common + ["--json"])
        #expect(synced.status == 0, "\(synced.stdout)\n\(synced.stderr)")
        #expect(jsonLines(synced.stdout).last?["installed"] as? [String] == ["Levels", "Tutorial"])
        let source = try scratch.read(assets.appending("Videos/Introduction.m4v"))
        let installed = try runTool(sync, ["url", "Videos/Introduction.m4v", "--app-group", appGroup.string])
        #expect(try scratch.read(FilePath(installed.stdout.trimmingCharacters(in: .newlines))) == source)
        #expect(try runTool(sync, ["verify", "--app-group", appGroup.string]).status == 0)

        // status says that the archive's digest was not available, for people and for scripts.
        let status = try runTool(sync, ["status"] + common)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("not available"))
        #expect(status.stderr.contains("archive digest not available"), "\(status.stderr)")
        let statusJSON = try runTool(sync, ["status"] + common + ["--json"])
        let rows = try #require(jsonLines(statusJSON.stdout).last?["packs"] as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { $0["sha256"] is NSNull && $0["archiveDigestVerified"] as? Bool == false })
        let list = try runTool(sync, ["list"] + common + ["--json"])
        let listed = try #require(jsonLines(list.stdout).last?["packs"] as? [[String: Any]])
        #expect(listed.map { $0["id"] as? String } == ["HighResTextures", "Levels", "Tutorial"])
        #expect(listed.allSatisfy { $0["sha256"] is NSNull && $0["installSize"] is NSNull })

        // Without a digest, a damaged archive of the right size is still caught, by the files' digests.
        let archive = site.appending("cdn/v7/HighResTextures.aar")
        var bytes = try scratch.read(archive)
        for offset in stride(from: bytes.count / 3, to: bytes.count - 1024, by: 4096) { bytes[offset] ^= 0xFF }
        try bytes.write(to: URL(fileURLWithPath: archive.string))
        let damaged = try runTool(sync, ["ensure", "HighResTextures", "--retries", "0"] + common)
        #expect(damaged.status == 1, "\(damaged.stdout)\n\(damaged.stderr)")
        #expect(damaged.stderr.contains("HighResTextures"))
        #expect(!FileManager.default.fileExists(atPath: appGroup.appending("AssetPacks/HighResTextures").string))
    }

    /// The embedded assets plus voice lines: an unlocalized pack, French and English ones at the same paths,
    /// and a pack that collides with Tutorial on purpose.
    func localizedAssets(_ scratch: Scratch) throws -> FilePath {
        let assets = try scratch.copySampleAssets()
        try scratch.write("Assets/Voices/default/hello.txt", "hello (default)")
        try scratch.write("Assets/Voices/fr/hello.txt", "bonjour")
        try scratch.write("Assets/Voices/en/hello.txt", "hello")
        try scratch.write("Assets/Other/intro.txt", "another intro")
        let prefetch = #"{"prefetch": {"installationEventTypes": ["firstInstallation"]}}"#
        for (id, language, folder) in [
            ("VoicesBase", nil, "default"), ("VoicesFR", "fr", "fr"), ("VoicesEN", "en", "en"),
        ] {
            let languageKey = language.map { #""language": "\#($0)", "# } ?? ""
            try scratch.write(
                "Assets/\(id).json",
                #"{"assetPackID": "\#(id)", \#(languageKey)"downloadPolicy": \#(prefetch), "fileSelectors": [{"directorySource": "Voices/\#(folder)", "directoryDestination": "Voices"}], "platforms": ["iOS"]}"#
            )
        }
        try scratch.write(
            "Assets/Zoo.json",
            #"{"assetPackID": "Zoo", "downloadPolicy": \#(prefetch), "fileSelectors": [{"fileSource": "Other/intro.txt", "fileDestination": "Voices/hello.txt"}], "platforms": ["tvOS"]}"#
        )
        return assets
    }

    /// A CI runner with `LANG=en_GB.UTF-8` gets the English pack (only `en_US` did when languages had to be
    /// equal), and a language no pack has gets the primary language's.
    @Test(arguments: [
        (["LANG": "en_GB.UTF-8"], [String](), "hello"), (["LANG": "ja_JP.UTF-8"], [], "hello"),
        (["LANG": "ja_JP.UTF-8"], ["--primary-language", "fr"], "bonjour"),
        (["LANG": "C.UTF-8", "BA_SYNC_LANGUAGE": "fr-CA"], [], "bonjour"),
    ])
    func theResolvedLanguageIsABestMatch(environment: [String: String], options: [String], hello: String) throws {
        let scratch = try Scratch()
        let assets = try localizedAssets(scratch)
        let server = try RunningTool(mock, ["serve", assets.string, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine())
        let appGroup = scratch.root.appending("AppGroup")
        var environment: [String: String?] = environment
        environment["LC_ALL"] = .some(nil)
        environment["LANGUAGE"] = .some(nil)
        if environment["BA_SYNC_LANGUAGE"] == nil { environment["BA_SYNC_LANGUAGE"] = .some(nil) }
        let synced = try runTool(
            sync,
            ["sync", "--platform", "iOS", "--server", url, "--app-group", appGroup.string] + options,
            environment: environment
        )
        #expect(synced.status == 0, "\(synced.stderr)")
        let cat = try runTool(sync, ["cat", "Voices/hello.txt", "--app-group", appGroup.string] + options)
        #expect(cat.stdout == hello, "\(synced.stdout) \(cat.stderr)")
    }

    @Test func languagesPlatformsAndCollisionsFromTheCommandLine() throws {
        let scratch = try Scratch()
        let assets = try localizedAssets(scratch)
        let server = try RunningTool(mock, ["serve", assets.string, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine())
        try #require(url.hasPrefix("http://"), "\(server.stderr)")
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--server", url, "--app-group", appGroup.string]

        // Zoo is for tvOS: an iOS device never sees it.
        let synced = try runTool(sync, ["sync", "--language", "fr_FR", "--platform", "iOS", "--json"] + common)
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(
            jsonLines(synced.stdout).last?["installed"] as? [String] == [
                "Levels", "Tutorial", "VoicesBase", "VoicesFR",
            ]
        )
        let french = try runTool(sync, ["cat", "Voices/hello.txt", "--language", "fr", "--app-group", appGroup.string])
        #expect(french.stdout == "bonjour", "\(french.stderr)")
        let german = try runTool(sync, ["cat", "Voices/hello.txt", "--language", "de", "--app-group", appGroup.string])
        #expect(german.stdout == "hello (default)")
        // The app group keeps the language of the sync: cat reads French without being told again, whatever
        // the environment says.
        let remembered = try runTool(
            sync,
            ["cat", "Voices/hello.txt", "--app-group", appGroup.string],
            environment: ["LANG": "de_DE.UTF-8", "LC_ALL": nil, "LANGUAGE": nil, "BA_SYNC_LANGUAGE": nil]
        )
        #expect(remembered.stdout == "bonjour", "\(remembered.stderr)")
        let list = try runTool(sync, ["list", "--language", "fr", "--json"] + common)
        let listed = try #require(jsonLines(list.stdout).last)
        #expect(listed["availableLanguages"] as? [String] == ["en", "fr"])
        #expect(listed["resolvedLanguage"] as? String == "fr")

        let reconciled = try runTool(sync, ["reconcile", "--language", "en", "--platform", "iOS", "--json"] + common)
        #expect(reconciled.status == 0, "\(reconciled.stderr)")
        let result = try #require(jsonLines(reconciled.stdout).last)
        #expect(result["downloaded"] as? [String] == ["VoicesEN"])
        #expect(result["removed"] as? [String] == ["VoicesFR"])
        #expect(result["locallyAvailableLanguages"] as? [String] == ["en"])
        let english = try runTool(
            sync,
            ["cat", "Voices/hello.txt", "--language", "en-US", "--app-group", appGroup.string]
        )
        #expect(english.stdout == "hello")

        // A pack ensured by hand stays through a language switch (Apple: reconciling "won't remove any
        // localized asset packs that you've downloaded manually"); BA_SYNC_LANGUAGE is --language's default.
        // German with no German pack, and German the primary language too: no language is resolved.
        let byHand = try runTool(sync, ["ensure", "VoicesFR", "--platform", "iOS"] + common)
        #expect(byHand.status == 0, "\(byHand.stderr)")
        let toGerman = try runTool(
            sync,
            ["reconcile", "--platform", "iOS", "--primary-language", "de", "--json"] + common,
            environment: ["BA_SYNC_LANGUAGE": "de"]
        )
        #expect(toGerman.status == 0, "\(toGerman.stderr)")
        let german2 = try #require(jsonLines(toGerman.stdout).last)
        #expect(german2["language"] as? String == "none")
        #expect(german2["removed"] as? [String] == ["VoicesEN"])
        #expect(german2["locallyAvailableLanguages"] as? [String] == ["fr"])
        // status says how a localized pack came: for the language (a switch may remove it) or by hand.
        let byHandStatus = try runTool(sync, ["status", "VoicesFR", "--json", "--app-group", appGroup.string])
        let row = try #require((jsonLines(byHandStatus.stdout).last?["packs"] as? [[String: Any]])?.first)
        #expect(row["installedFor"] as? String == "ensure", "\(byHandStatus.stdout)")

        // A platform that is not one, and a language that is not one, are usage errors that say why.
        let tvos = try runTool(sync, ["list", "--platform", "tvos"] + common)
        #expect(tvos.status == 64)
        #expect(tvos.stderr.contains("did you mean tvOS?"), "\(tvos.stderr)")
        let badLanguage = try runTool(
            sync,
            ["cat", "Voices/hello.txt", "--language", "english", "--app-group", appGroup.string]
        )
        #expect(badLanguage.status == 64)
        #expect(badLanguage.stderr.contains("--language english"), "\(badLanguage.stderr)")

        // url of a path nothing holds: exit 1, and "exists": false for scripts.
        let missing = try runTool(sync, ["url", "No/Such/file", "--json", "--app-group", appGroup.string])
        #expect(missing.status == 1)
        let lines = jsonLines(missing.stdout)
        #expect(lines.first?["exists"] as? Bool == false)
        #expect(lines.last?["code"] as? String == "fileNotFound")

        // With every platform (`any`; iOS is the default), Zoo collides with the voice packs at Voices/hello.txt
        // (unlocalized, both).
        let everything = try runTool(sync, ["ensure", "Zoo", "--platform", "any"] + common)
        #expect(everything.status == 0, "\(everything.stderr)")
        let cat = { (rule: String) in
            try runTool(
                sync,
                ["cat", "Voices/hello.txt", "--language", "de", "--collisions", rule, "--app-group", appGroup.string]
            )
        }
        let strict = try cat("fail")
        #expect(strict.status == 1)
        #expect(strict.stderr.contains("VoicesBase, Zoo"), "\(strict.stderr)")
        #expect(try cat("first").stdout == "hello (default)")  // "VoicesBase" < "Zoo"
        let shuffled = try cat("shuffle")
        #expect(shuffled.status == 0)
        let seedText = try #require(shuffled.stderr.split(separator: "shuffle=").last?.prefix { $0.isNumber })
        let replay = try cat("shuffle=\(seedText)")
        #expect(replay.stdout == shuffled.stdout)
        #expect(!replay.stderr.contains("seed"))
        // With --json, cat's stdout is still the file's bytes alone; url gives the seed as a string (a JSON
        // number would round a 64-bit seed).
        let jsonCat = try runTool(
            sync,
            [
                "cat", "Voices/hello.txt", "--json", "--language", "de", "--collisions", "shuffle=\(seedText)",
                "--app-group", appGroup.string,
            ]
        )
        #expect(jsonCat.stdout == shuffled.stdout)
        let jsonRandomCat = try runTool(
            sync,
            [
                "cat", "Voices/hello.txt", "--json", "--language", "de", "--collisions", "shuffle", "--app-group",
                appGroup.string,
            ]
        )
        #expect(["hello (default)", "another intro"].contains(jsonRandomCat.stdout), "\(jsonRandomCat.stdout)")
        let jsonURL = try runTool(
            sync,
            ["url", "Voices/hello.txt", "--json", "--collisions", "shuffle", "--app-group", appGroup.string]
        )
        let seedLine = try #require(jsonLines(jsonURL.stdout).first)
        #expect(seedLine["event"] as? String == "collisions")
        #expect(UInt64(try #require(seedLine["seed"] as? String)) != nil)
        let winners = Set(try (0..<16).map { try cat("shuffle=\($0)").stdout })
        #expect(winners == ["hello (default)", "another intro"])
    }
}
