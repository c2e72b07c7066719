import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// Apple's tool names and flags on the built tools, for scripts written against Apple's: `--version`,
/// `ba-package download-manifest create` and `update`, per-platform manifests, `BAManifestURL` as
/// `--manifest-url`, and the rule that downloads are HTTPS.
@Suite("Apple names end to end", .serialized)
struct AppleNamesEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    /// Three packaging manifests over small content, packaged as Apple Archives by `ba-mock package`:
    /// Alpha (iOS, with userInfo), Beta (macOS only), Gamma (essential, iOS and tvOS).
    func archives(_ scratch: Scratch, alpha: String = "alpha") throws -> [String: FilePath] {
        try scratch.write("content/a.txt", alpha)
        try scratch.write("content/b.txt", "beta")
        try scratch.write("content/g.txt", "gamma")
        try scratch.write(
            "Alpha.json",
            #"{"assetPackID": "Alpha", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "content/a.txt"}], "platforms": ["iOS"], "userInfo": {"tier": "gold"}}"#
        )
        try scratch.write(
            "Beta.json",
            #"{"assetPackID": "Beta", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "content/b.txt"}], "platforms": ["macOS"]}"#
        )
        try scratch.write(
            "Gamma.json",
            #"{"assetPackID": "Gamma", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}}, "fileSelectors": [{"file": "content/g.txt"}], "platforms": ["iOS", "tvOS"]}"#
        )
        var paths: [String: FilePath] = [:]
        for id in ["Alpha", "Beta", "Gamma"] {
            let packed = try runTool(
                mock,
                ["package", "\(id).json", "-o", "\(id).aar"],
                directory: scratch.root.string
            )
            #expect(packed.status == 0, "\(packed.stderr)")
            paths[id] = scratch.root.appending("\(id).aar")
        }
        return paths
    }

    func size(_ path: FilePath) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path.string)[.size] as? Int)
    }

    func digest(_ path: FilePath) throws -> String {
        FileDigest.sha256(of: try Data(contentsOf: URL(fileURLWithPath: path.string)))
    }

    @Test func bothToolsPrintTheSameVersion() throws {
        let mockVersion = try runTool(mock, ["--version"])
        let syncVersion = try runTool(sync, ["--version"])
        #expect(mockVersion.status == 0 && syncVersion.status == 0)
        #expect(!mockVersion.stdout.isEmpty)
        #expect(mockVersion.stdout == syncVersion.stdout, "\(mockVersion.stdout) vs \(syncVersion.stdout)")
    }

    /// `download-manifest create` as Apple's: the manifest's exact bytes (Apple's fields and ours), a pack for
    /// another platform skipped with a warning; then ba-sync installs from it, served by a static server at a
    /// path of its own (`--manifest-url`).
    @Test func downloadManifestCreateWritesAManifestBASyncInstallsFromASubPath() throws {
        let scratch = try Scratch()
        let paths = try archives(scratch)
        let site = scratch.root.appending("site")
        try FileManager.default.createDirectory(
            atPath: site.appending("packs").string,
            withIntermediateDirectories: true
        )
        let (server, base) = try pythonStaticServer(site)
        defer { server.interrupt(signal: SIGKILL) }
        let output = site.appending("catalog/ios.json")
        let created = try runTool(
            mock,
            [
                "download-manifest", "create", paths["Alpha"]!.string, paths["Beta"]!.string, paths["Gamma"]!.string,
                "--asset-pack-versions", "3", "1", "7", "--ios", "--download-base-url", base + "/packs",
                "--output-path", output.string,
            ]
        )
        #expect(created.status == 0, "\(created.stderr)")
        #expect(
            created.stderr.contains("warning: skipped \(paths["Beta"]!): pack Beta is for macOS, not iOS"),
            "\(created.stderr)"
        )
        let alpha = paths["Alpha"]!
        let gamma = paths["Gamma"]!
        let expected = """
            {
              "assetPacks" : [
                {
                  "compression" : "lzfse",
                  "downloadPolicy" : {
                    "onDemand" : {}
                  },
                  "downloadSize" : \(try size(alpha)),
                  "fileCount" : 1,
                  "host" : {
                    "thirdParty" : {}
                  },
                  "id" : "Alpha",
                  "installSize" : 5,
                  "platforms" : [
                    "iOS"
                  ],
                  "sha256" : "\(try digest(alpha))",
                  "url" : "\(base)/packs/Alpha",
                  "userInfo" : {
                    "tier" : "gold"
                  },
                  "version" : 3
                },
                {
                  "compression" : "lzfse",
                  "downloadPolicy" : {
                    "essential" : {
                      "installationEventTypes" : [
                        "firstInstallation"
                      ]
                    }
                  },
                  "downloadSize" : \(try size(gamma)),
                  "fileCount" : 1,
                  "host" : {
                    "thirdParty" : {}
                  },
                  "id" : "Gamma",
                  "installSize" : 5,
                  "platforms" : [
                    "iOS",
                    "tvOS"
                  ],
                  "sha256" : "\(try digest(gamma))",
                  "url" : "\(base)/packs/Gamma",
                  "version" : 7
                }
              ]
            }
            """
        #expect(String(decoding: try scratch.read(output), as: UTF8.self) == expected)

        // Published as Apple's tool expects: the archives at base URL + "/" + ID, no extension.
        for id in ["Alpha", "Gamma"] {
            try FileManager.default.copyItem(atPath: paths[id]!.string, toPath: site.appending("packs/\(id)").string)
        }
        let group = scratch.root.appending("group").string
        let manifestURL = base + "/catalog/ios.json"
        let synced = try runTool(
            sync,
            ["sync", "--event", "install", "--manifest-url", manifestURL, "--app-group", group, "--platform", "iOS"]
        )
        #expect(synced.status == 0, "\(synced.stderr)")
        let ensured = try runTool(sync, ["ensure", "Alpha", "--manifest-url", manifestURL, "--app-group", group])
        #expect(ensured.status == 0, "\(ensured.stderr)")
        let read = try runTool(sync, ["cat", "content/a.txt", "--app-group", group])
        #expect(read.stdout == "alpha")
        let status = try runTool(sync, ["status", "--json", "--app-group", group])
        let packs = try #require(jsonLines(status.stdout).last?["packs"] as? [[String: Any]])
        #expect(packs.compactMap { $0["id"] as? String }.sorted() == ["Alpha", "Gamma"])
        // The environment variable names the manifest too.
        let listed = try runTool(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["BA_SYNC_MANIFEST_URL=\(manifestURL)", sync.path, "list", "--json", "--app-group", group]
        )
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("\"Alpha\""), "\(listed.stdout)")
    }

    /// An export published at a sub-path of a static server installs by its manifest's URL: the relative pack
    /// URLs (`assets/<id>`) resolve against it, for the manifest of every pack and for a platform's.
    @Test func anExportAtASubPathInstallsByItsManifestURL() throws {
        let scratch = try Scratch()
        let assets = try scratch.copySampleAssets()
        let site = scratch.root.appending("site")
        let exported = try runTool(
            mock,
            ["export", assets.string, "--out", site.appending("games/v1").string, "--platform", "tvOS"]
        )
        #expect(exported.status == 0, "\(exported.stderr)")
        let (server, base) = try pythonStaticServer(site)
        defer { server.interrupt(signal: SIGKILL) }
        let group = scratch.root.appending("group").string
        let synced = try runTool(
            sync,
            [
                "sync", "--event", "install", "--manifest-url", base + "/games/v1/manifest-tvOS.json", "--app-group",
                group,
            ]
        )
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(synced.stdout.contains("installed: Levels"), "\(synced.stdout)")
        let ensured = try runTool(
            sync,
            ["ensure", "Tutorial", "--manifest-url", base + "/games/v1/manifest", "--app-group", group]
        )
        #expect(ensured.status == 0, "\(ensured.stderr)")
        let verified = try runTool(sync, ["verify", "--app-group", group])
        #expect(verified.status == 0, "\(verified.stderr)")
    }

    /// What Apple's tool refuses is refused with exit 64 and what to fix.
    @Test func downloadManifestCreateRefusesWhatAppleRefuses() throws {
        let scratch = try Scratch()
        let paths = try archives(scratch)
        let alpha = paths["Alpha"]!.string
        let gamma = paths["Gamma"]!.string
        let out = scratch.root.appending("m.json").string
        let base = "https://cdn.example.com/packs"
        let cases: [([String], String)] = [
            (
                [alpha, gamma, "--asset-pack-versions", "1", "--ios", "--download-base-url", base, "-o", out],
                "--asset-pack-versions gives 1 version(s) for 2 archive(s); give one per archive, in their order"
            ),
            (
                [alpha, "--ios", "--download-base-url", base, "-o", scratch.root.appending("m.txt").string],
                "path extension isn’t “json”"
            ),
            (
                [alpha, alpha, "--ios", "--download-base-url", base, "-o", out],
                "\(alpha) and \(alpha) are both pack Alpha"
            ),
            (
                [alpha, "--ios", "--download-base-url", "ftp://cdn.example.com/packs", "-o", out],
                "--download-base-url ftp://cdn.example.com/packs is not an http:// or https:// URL"
            ),
            (
                [alpha, "--download-base-url", base, "-o", out],
                "give one platform: --ios, --macos, --tvos or --visionos"
            ),
            (
                [alpha, "--ios", "--macos", "--download-base-url", base, "-o", out],
                "give one platform: --ios, --macos, --tvos or --visionos"
            ),
        ]
        for (arguments, message) in cases {
            let result = try runTool(mock, ["download-manifest", "create"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    /// `download-manifest update` as third-party scripts use it: the packs handed to it whose archive changed
    /// go up one version, an unchanged one and the packs not handed keep theirs, a new pack starts at 0; an
    /// entry of Apple's (no sha256) is bumped, as Apple's tool bumps whatever it is handed.
    @Test func downloadManifestUpdateCarriesVersionsForward() throws {
        let scratch = try Scratch()
        let old = try archives(scratch)
        let manifest = scratch.root.appending("published.json")
        let base = "https://cdn.example.com/packs/"
        let created = try runTool(
            mock,
            [
                "download-manifest", "create", old["Alpha"]!.string, old["Gamma"]!.string,
                "--asset-pack-versions", "3", "7", "--ios", "--download-base-url", base, "-o", manifest.string, "-q",
            ]
        )
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.isEmpty && created.stderr.isEmpty, "\(created.stdout)\(created.stderr)")
        // Beta, as Apple's tool writes entries: no sha256.
        var object = try #require(try JSONSerialization.jsonObject(with: try scratch.read(manifest)) as? [String: Any])
        var entries = try #require(object["assetPacks"] as? [[String: Any]])
        entries.append([
            "id": "Beta", "url": base + "Beta", "version": 5, "downloadSize": 1, "downloadPolicy": ["onDemand": [:]],
            "host": ["thirdParty": [:]],
        ])
        object["assetPacks"] = entries
        try scratch.write("published.json", try JSONSerialization.data(withJSONObject: object))

        // Alpha's content changes; Gamma's does not; Delta is new.
        let changed = try Scratch()
        let new = try archives(changed, alpha: "alpha, second edition")
        try changed.write(
            "Delta.json",
            #"{"assetPackID": "Delta", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "content/g.txt"}], "platforms": ["iOS"]}"#
        )
        let packed = try runTool(mock, ["package", "Delta.json", "-o", "Delta.aar"], directory: changed.root.string)
        #expect(packed.status == 0, "\(packed.stderr)")
        let updated = try runTool(
            mock,
            [
                "download-manifest", "update", manifest.string, "--asset-pack-paths", new["Alpha"]!.string,
                new["Gamma"]!.string, "--asset-pack-paths", changed.root.appending("Delta.aar").string, "--ios",
                "--download-base-url", base,
            ]
        )
        #expect(updated.status == 0, "\(updated.stderr)")
        let result = try JSONDecoder().decode(DownloadManifest.self, from: try scratch.read(manifest))
        let versions = Dictionary(uniqueKeysWithValues: result.assetPacks.map { ($0.id, $0.version) })
        #expect(versions == ["Alpha": 4, "Beta": 5, "Delta": 0, "Gamma": 7])
        let alpha = try #require(result.assetPacks.first { $0.id == "Alpha" })
        #expect(alpha.sha256 == (try digest(new["Alpha"]!)))
        #expect(alpha.downloadSize == Int64(try size(new["Alpha"]!)))
        #expect(alpha.url == base + "Alpha")
        #expect(result.assetPacks.map(\.id) == ["Alpha", "Beta", "Delta", "Gamma"])
        #expect(updated.stdout.contains("Alpha: version 3 → 4 (archive changed)"), "\(updated.stdout)")
        #expect(updated.stdout.contains("Gamma: version 7 kept (archive unchanged)"), "\(updated.stdout)")
        #expect(updated.stdout.contains("Delta: added at version 0"), "\(updated.stdout)")

        // A missing manifest says to create one.
        let missing = try runTool(
            mock,
            [
                "download-manifest", "update", scratch.root.appending("none.json").string, "--asset-pack-paths",
                new["Alpha"]!.string, "--ios", "--download-base-url", base,
            ]
        )
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("download-manifest create"), "\(missing.stderr)")
    }

    /// `export --platform` writes a manifest per platform beside the manifest of every pack; `serve` answers
    /// `/manifest?platform=` with that platform's packs, and 400 for a platform it does not know.
    @Test func manifestsPerPlatform() throws {
        let scratch = try Scratch()
        let assets = try scratch.copySampleAssets()
        let out = scratch.root.appending("out")
        let exported = try runTool(
            mock,
            ["export", assets.string, "--out", out.string, "--platform", "tvOS", "--platform", "visionOS"]
        )
        #expect(exported.status == 0, "\(exported.stderr)")
        func ids(_ data: Data) throws -> [String] {
            try JSONDecoder().decode(DownloadManifest.self, from: data).assetPacks.map(\.id)
        }
        #expect(try ids(scratch.read(out.appending("manifest"))) == ["HighResTextures", "Levels", "Tutorial"])
        #expect(try ids(scratch.read(out.appending("manifest-tvOS.json"))) == ["Levels"])
        #expect(try ids(scratch.read(out.appending("manifest-visionOS.json"))) == ["HighResTextures", "Levels"])
        #expect(!FileManager.default.fileExists(atPath: out.appending("manifest-iOS.json").string))
        // A platform dropped from a later export has its manifest removed, as a pack no longer published is.
        let again = try runTool(mock, ["export", assets.string, "--out", out.string, "--platform", "TVOS"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try ids(scratch.read(out.appending("manifest-tvOS.json"))) == ["Levels"])
        #expect(!FileManager.default.fileExists(atPath: out.appending("manifest-visionOS.json").string))
        let wrong = try runTool(mock, ["export", assets.string, "--out", out.string, "--platform", "Android"])
        #expect(wrong.status == 64)
        #expect(wrong.stderr.contains("--platform Android is not one of iOS, macOS, tvOS, visionOS"), "\(wrong.stderr)")

        let server = try RunningTool(mock, ["serve", assets.string, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        let all = try runTool(curl, ["-sf", url + "/manifest"])
        #expect(try ids(Data(all.stdout.utf8)) == ["HighResTextures", "Levels", "Tutorial"])
        let tv = try runTool(curl, ["-sf", url + "/manifest?platform=tvos"])
        #expect(try ids(Data(tv.stdout.utf8)) == ["Levels"])
        let unknown = try runTool(curl, ["-s", "-w", "\n%{http_code}", url + "/manifest?platform=Android"])
        #expect(unknown.stdout.hasSuffix("\n400"), "\(unknown.stdout)")
        #expect(
            unknown.stdout.contains("platform Android is not one of iOS, macOS, tvOS, visionOS"),
            "\(unknown.stdout)"
        )
    }

    /// Plain http to a host that is not this machine is refused before any connection, saying why and how to
    /// allow it; `--allow-http` lets the request go (and `.invalid` never resolves).
    @Test func plainHTTPIsForLoopbackOnly() throws {
        let scratch = try Scratch()
        let site = scratch.root.appending("site")
        try scratch.write(
            "site/manifest.json",
            #"{"assetPacks": [{"id": "Remote", "url": "http://example.invalid/x", "version": 1, "downloadSize": 10, "downloadPolicy": {"onDemand": {}}, "host": {"thirdParty": {}}}]}"#
        )
        let (server, base) = try pythonStaticServer(site)
        defer { server.interrupt(signal: SIGKILL) }
        let group = scratch.root.appending("group").string
        let manifestURL = base + "/manifest.json"
        let refused = try runTool(
            sync,
            ["ensure", "Remote", "--manifest-url", manifestURL, "--app-group", group, "--json", "--retries", "0"]
        )
        #expect(refused.status == 1, "\(refused.stderr)")
        // Refused before it began: no download was started.
        #expect(!refused.stdout.contains(#""event":"began""#), "\(refused.stdout)")
        let error = try #require(jsonLines(refused.stdout).first { $0["event"] as? String == "failed" })
        #expect(error["code"] as? String == "insecureHTTP", "\(refused.stdout)")
        let message = try #require(error["message"] as? String)
        #expect(message.contains("http://example.invalid/x"), "\(message)")
        #expect(message.contains("Background Assets uses HTTPS for all downloads"), "\(message)")
        #expect(message.contains("--allow-http"), "\(message)")

        let allowed = try runTool(
            sync,
            [
                "ensure", "Remote", "--manifest-url", manifestURL, "--app-group", group, "--json", "--retries", "0",
                "--allow-http",
            ]
        )
        #expect(allowed.status == 1)
        let failure = try #require(jsonLines(allowed.stdout).first { $0["event"] as? String == "failed" })
        #expect(failure["code"] as? String == "network", "\(allowed.stdout)")

        // The manifest's own URL is held to the rule before anything is fetched: a usage error.
        let manifestRefused = try runTool(
            sync,
            ["list", "--manifest-url", "http://example.invalid/manifest.json", "--app-group", group, "--json"]
        )
        #expect(manifestRefused.status == 64, "\(manifestRefused.stderr)")
        let usage = try #require(jsonLines(manifestRefused.stdout).first)
        #expect(usage["code"] as? String == "usage")
        #expect((usage["message"] as? String ?? "").contains("--allow-http"), "\(manifestRefused.stdout)")
        let both = try runTool(
            sync,
            ["list", "--manifest-url", manifestURL, "--server", base, "--app-group", group]
        )
        #expect(both.status == 64)
        #expect(both.stderr.contains("--server and --manifest-url"), "\(both.stderr)")
    }
}
