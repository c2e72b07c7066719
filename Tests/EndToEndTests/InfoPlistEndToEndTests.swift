import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// `--info-plist` in the built binaries: `ba-mock validate` holds a folder's packs to an app's limits, and
/// `ba-sync` enforces them at the first install against `ba-mock serve`.
@Suite("Info.plist end to end", .serialized)
struct InfoPlistEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// A self-hosted plist as JSON for plistlib, with every limit roomy unless given.
    static func selfHosted(
        manifestURL: String,
        allow: [String],
        essentialMaxInstall: Int64 = 1 << 40,
        essentialAllowance: Int64 = 1 << 40
    ) -> String {
        let list = allow.map { "\"\($0)\"" }.joined(separator: ", ")
        return """
            {"BAAppGroupID": "group.com.example.game", "BAHasManagedAssetPacks": true, "BAManifestURL": "\(manifestURL)",
             "BAInitialDownloadRestrictions": {"BADownloadAllowance": \(1 << 40),
               "BAEssentialDownloadAllowance": \(essentialAllowance), "BADownloadDomainAllowList": [\(list)]},
             "BAEssentialMaxInstallSize": \(essentialMaxInstall), "BAMaxInstallSize": \(1 << 40)}
            """
    }

    @Test func validateHoldsTheFolderAndAPublishedManifestToTheLimits() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let out = scratch.root.appending("out")
        let exported = try runTool(mock, ["export", folder.string, "--out", out.string])
        #expect(exported.status == 0, "\(exported.stderr)")
        // A second version of Levels: the manifest now lists a delta from the first, as export writes it.
        try scratch.write("Assets/Levels/World1/changed.txt", "a new level")
        let reexported = try runTool(mock, ["export", folder.string, "--out", out.string])
        #expect(reexported.status == 0, "\(reexported.stderr)")
        let manifestBytes = try scratch.read(out.appending("manifest"))
        let manifest = try JSONDecoder().decode(DownloadManifest.self, from: manifestBytes)
        #expect(manifest.assetPacks.first { $0.id == "Levels" }?.deltas?.count == 1)
        let tutorial = try #require(manifest.assetPacks.first { $0.id == "Tutorial" })
        let install = try #require(tutorial.installSize)

        // The essential allowance counts the manifest's bytes, the very ones export wrote.
        for (allowance, status) in [
            (tutorial.downloadSize + Int64(manifestBytes.count), 0),
            (tutorial.downloadSize + Int64(manifestBytes.count) - 1, 1),
        ] {
            let plist = try writeInfoPlist(
                Self.selfHosted(
                    manifestURL: "https://cdn.example.com/manifest",
                    allow: ["cdn.example.com"],
                    essentialAllowance: allowance
                ),
                format: .xml,
                to: scratch.root.appending("Allowance-\(allowance).plist")
            )
            let checked = try runTool(mock, ["validate", "--info-plist", plist.string, folder.string])
            #expect(checked.status == Int32(status), "\(checked.stdout)\(checked.stderr)")
            if status == 1 {
                #expect(
                    checked.stdout.contains(
                        "with the manifest's \(ByteFormat.string(Int64(manifestBytes.count))) (\(manifestBytes.count) bytes)"
                    ),
                    "\(checked.stdout)"
                )
            }
        }

        // Over BAEssentialMaxInstallSize by one byte, from a binary plist: the packs are built as export builds them.
        let tight = try writeInfoPlist(
            Self.selfHosted(
                manifestURL: "https://cdn.example.com/manifest",
                allow: ["cdn.example.com"],
                essentialMaxInstall: install - 1
            ),
            format: .binary,
            to: scratch.root.appending("Tight.plist")
        )
        let over = try runTool(mock, ["validate", "--info-plist", tight.string, folder.string])
        #expect(over.status == 1, "\(over.stderr)")
        #expect(
            over.stdout == """
                error: \(tight): BAEssentialMaxInstallSize: the essential packs take \(ByteFormat.string(install)) \
                (\(install) bytes) installed, over the \(ByteFormat.string(install - 1)) (\(install - 1) bytes) it allows: Tutorial \
                \(ByteFormat.string(install)). Fix: raise BAEssentialMaxInstallSize to \(install) or more, or make those \
                packs smaller or fewer
                1 error(s), 0 warning(s)

                """
        )

        // Within every limit, from an XML plist.
        let roomy = try writeInfoPlist(
            Self.selfHosted(
                manifestURL: "https://cdn.example.com/manifest",
                allow: ["*.example.com", "cdn.example.com"]
            ),
            format: .xml,
            to: scratch.root.appending("Roomy.plist")
        )
        let fine = try runTool(mock, ["validate", "--info-plist", roomy.string, folder.string])
        #expect(fine.status == 0, "\(fine.stdout)\(fine.stderr)")
        #expect(fine.stdout == "ok (0 warning(s)): checked 3 manifests, 3 packs, 47 files and \(roomy)\n")

        // The published manifest, whose relative URLs resolve against BAManifestURL, outside the allow list.
        let elsewhere = try writeInfoPlist(
            Self.selfHosted(manifestURL: "https://cdn.example.com/manifest", allow: ["other.example.com"]),
            format: .xml,
            to: scratch.root.appending("Elsewhere.plist")
        )
        let published = try runTool(
            mock,
            [
                "validate", "--info-plist", elsewhere.string, "--download-manifest", out.appending("manifest").string,
                "--json",
            ]
        )
        #expect(published.status == 1, "\(published.stderr)")
        // Every key of a problem, `null` where nothing applies (the JSON contract's shape of a problem).
        struct Report: Decodable {
            var ok: Bool
            var problems: [[String: String?]]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(published.stdout.utf8))
        #expect(report.ok == false)
        #expect(
            report.problems == [
                [
                    "file": elsewhere.string,
                    "key": "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
                    "severity": "error",
                    "message": "does not allow cdn.example.com (manifest from cdn.example.com, Levels from "
                        + "cdn.example.com, Tutorial from cdn.example.com); it allows other.example.com",
                    "fix": "add cdn.example.com (or a *. wildcard over it) to the list",
                    "pack": String?.none,
                ]
            ]
        )
    }

    /// Every file and folder below `root`: its relative path, and its bytes (a link's target, a folder's "").
    static func tree(_ root: FilePath) throws -> [String: Data] {
        var found: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root.string)
        while let relative = enumerator?.nextObject() as? String {
            let path = root.appending(relative).string
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            switch attributes[.type] as? FileAttributeType {
            case .typeDirectory: found[relative + "/"] = Data()
            case .typeSymbolicLink:
                found[relative + "@"] = Data(try FileManager.default.destinationOfSymbolicLink(atPath: path).utf8)
            default: found[relative] = try Data(contentsOf: URL(fileURLWithPath: path))
            }
            found[relative + " mode"] = Data("\(attributes[.posixPermissions] ?? 0)".utf8)
        }
        return found
    }

    /// A check must not change what it checks: the packs are built in a temporary folder, so the asset folder
    /// is byte for byte what it was, a `.ba-mock` made by an earlier export included, and none is created.
    @Test func validateWithAnInfoPlistLeavesTheFolderAsItWas() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let plist = try writeInfoPlist(
            Self.selfHosted(manifestURL: "https://cdn.example.com/manifest", allow: ["cdn.example.com"]),
            format: .xml,
            to: scratch.root.appending("Info.plist")
        )
        let before = try Self.tree(folder)
        #expect(!before.keys.contains { $0.hasPrefix(".ba-mock") })
        let fresh = try runTool(mock, ["validate", "--info-plist", plist.string, folder.string])
        #expect(fresh.status == 0, "\(fresh.stdout)\(fresh.stderr)")
        #expect(try Self.tree(folder) == before, "validate wrote into \(folder)")

        // A folder an export built once: its state is read, not written.
        let exported = try runTool(mock, ["export", folder.string, "--out", scratch.root.appending("out").string])
        #expect(exported.status == 0, "\(exported.stderr)")
        try scratch.write("Assets/Levels/World1/changed.txt", "a change validate must not build into the state")
        let built = try Self.tree(folder)
        #expect(built.keys.contains(".ba-mock/state.json"))
        let again = try runTool(mock, ["validate", "--info-plist", plist.string, folder.string])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(try Self.tree(folder) == built, "validate changed \(folder)/.ba-mock")
    }

    @Test func aFolderThatDoesNotBuildSaysTheLimitsWereNotChecked() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        try scratch.write("Assets/Broken.json", #"{"assetPackID": "Broken", "fileSelectors": []}"#)
        let plist = try writeInfoPlist(
            Self.selfHosted(manifestURL: "https://cdn.example.com/manifest", allow: ["cdn.example.com"]),
            format: .binary,
            to: scratch.root.appending("Info.plist")
        )
        let checked = try runTool(mock, ["validate", "--info-plist", plist.string, folder.string])
        #expect(checked.status == 1, "\(checked.stderr)")
        #expect(
            checked.stdout.contains(
                "error: \(folder): (packs): could not be built, so the Info.plist's limits were not checked"
            ),
            "\(checked.stdout)"
        )
        #expect(
            checked.stdout.contains(
                "were not checked (its manifests have the errors above). Fix: fix them, or pass --download-manifest\n"
            ),
            "\(checked.stdout)"
        )
    }

    /// BAManifestURL is a full URL to any path on a static host: ba-sync takes it as --manifest-url (it was
    /// refused unless it ended in /manifest).
    @Test func theManifestURLOfTheInfoPlistMayBeAnyPath() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let site = scratch.root.appending("site/games/v1")
        let exported = try runTool(mock, ["export", folder.string, "--out", site.string])
        #expect(exported.status == 0, "\(exported.stderr)")
        try FileManager.default.moveItem(
            atPath: site.appending("manifest").string,
            toPath: site.appending("catalog.json").string
        )
        let (server, base) = try pythonStaticServer(scratch.root.appending("site"))
        defer { server.interrupt(signal: SIGKILL) }
        let plist = try writeInfoPlist(
            Self.selfHosted(manifestURL: base + "/games/v1/catalog.json", allow: ["127.0.0.1"]),
            format: .binary,
            to: scratch.root.appending("Info.plist")
        )
        let synced = try runTool(sync, ["sync", "--info-plist", plist.string], directory: scratch.root.string)
        #expect(synced.status == 0, "\(synced.stdout)\(synced.stderr)")
        #expect(synced.stdout.contains("installed: Levels, Tutorial"), "\(synced.stdout)")
        let installed = scratch.root.appending("group.com.example.game")
        #expect(FileManager.default.fileExists(atPath: installed.string))
    }

    @Test func syncStopsAFirstInstallOverALimitAndNotALaterOne() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let server = try RunningTool(mock, ["serve", folder.string, "--port", "0"])
        defer { server.interrupt() }
        var base = try #require(server.waitForFirstLine())
        if base.hasSuffix("/manifest") { base.removeLast("/manifest".count) }
        let plist = try writeInfoPlist(
            Self.selfHosted(manifestURL: base + "/manifest", allow: ["127.0.0.1"], essentialAllowance: 1),
            format: .xml,
            to: scratch.root.appending("Info.plist")
        )
        // No --server, no --app-group: BAManifestURL names the server, BAAppGroupID the folder ./group.com.example.game.
        let appGroup = scratch.root.appending("group.com.example.game")
        let stopped = try runTool(sync, ["sync", "--info-plist", plist.string], directory: scratch.root.string)
        #expect(stopped.status == 1, "\(stopped.stdout)\(stopped.stderr)")
        #expect(
            stopped.stderr.contains(
                "the first install stopped before downloading anything, by the Info.plist's "
                    + "BAInitialDownloadRestrictions.BAEssentialDownloadAllowance: the essential packs download "
            ),
            "\(stopped.stderr)"
        )
        #expect(stopped.stderr.contains("over the 1 B (1 bytes) it allows: Tutorial "), "\(stopped.stderr)")
        #expect(!FileManager.default.fileExists(atPath: appGroup.appending("AssetPacks/Tutorial").string))

        let json = try runTool(sync, ["sync", "--info-plist", plist.string, "--json"], directory: scratch.root.string)
        #expect(json.status == 1)
        let error = try #require(jsonLines(json.stdout).last)
        #expect(error["event"] as? String == "error")
        #expect(error["code"] as? String == "downloadWouldExceedAllowance")

        // Once a pack is installed the app group is past its first install: the same limits no longer stop it.
        let ensured = try runTool(sync, ["ensure", "Tutorial", "--server", base, "--app-group", appGroup.string])
        #expect(ensured.status == 0, "\(ensured.stderr)")
        let later = try runTool(sync, ["sync", "--info-plist", plist.string], directory: scratch.root.string)
        #expect(later.status == 0, "\(later.stderr)")
        #expect(later.stdout.contains("installed: Levels"), "\(later.stdout)")
        #expect(later.stdout.contains("already local: Tutorial"), "\(later.stdout)")

        // Before the subcommand as well, and for the commands that take a server and an app group.
        let status = try runTool(
            sync,
            ["--info-plist", plist.string, "status", "--json"],
            directory: scratch.root.string
        )
        #expect(status.status == 0, "\(status.stderr)")
        let statusResult = try #require(jsonLines(status.stdout).last)
        #expect(statusResult["online"] as? Bool == true)
        #expect(
            (statusResult["packs"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["Levels", "Tutorial"]
        )

        // A plist a device would trap on is refused before anything is fetched.
        let trap = try writeInfoPlist(
            #"{"BAAppGroupID": "group.com.example.game", "BAHasManagedAssetPacks": true, "BAManifestURL": "\#(base)/manifest"}"#,
            format: .binary,
            to: scratch.root.appending("Trap.plist")
        )
        let refused = try runTool(sync, ["sync", "--info-plist", trap.string], directory: scratch.root.string)
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "\(trap): BAInitialDownloadRestrictions: is missing; a self-hosted managed app traps without it"
            ),
            "\(refused.stderr)"
        )
    }
}
