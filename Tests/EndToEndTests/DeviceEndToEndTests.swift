import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

/// `ba-sync` plays a device by default: one platform, whole packs, an app that launches without an essential
/// pack that failed, and the App Store setting that turns in-app content off.
@Suite("ba-sync plays a device", .serialized)
struct DeviceEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    /// The sample assets served, plus a pack for tvOS only; `faults` are given to `serve`.
    func startServer(_ scratch: Scratch, faults: [String] = []) throws -> (RunningTool, String) {
        let folder = try scratch.copySampleAssets()
        try scratch.write("Assets/TV/remote.txt", "a tvOS-only file\n")
        try scratch.write(
            "Assets/TV.json",
            #"{"assetPackID": "TV", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "TV"}], "platforms": ["tvOS"]}"#
        )
        let server = try RunningTool(
            mock,
            ["serve", folder.string, "--port", "0"] + faults.flatMap { ["--fault", $0] }
        )
        guard let url = server.waitForFirstLine() else { throw CancellationError() }
        return (server, url)
    }

    func ids(_ stdout: String) -> [String] {
        (jsonLines(stdout).last?["packs"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
    }

    @Test func theDefaultPlatformIsIOSAndAnySeesEveryPack() throws {
        let scratch = try Scratch()
        let (server, url) = try startServer(scratch)
        defer { server.interrupt() }
        let common = ["--server", url, "--app-group", scratch.root.appending("AppGroup").string]

        let listed = try runTool(sync, ["list", "--json"] + common)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(ids(listed.stdout) == ["HighResTextures", "Levels", "Tutorial"])
        #expect(jsonLines(listed.stdout).last?["platform"] as? String == "iOS")
        let table = try runTool(sync, ["list"] + common)
        #expect(table.stdout.contains("platform: iOS"), "\(table.stdout)")

        let every = try runTool(sync, ["list", "--json", "--platform", "any"] + common)
        #expect(ids(every.stdout) == ["HighResTextures", "Levels", "TV", "Tutorial"], "\(every.stderr)")
        let tv = try runTool(sync, ["list", "--json"] + common, environment: ["BA_SYNC_PLATFORM": "tvOS"])
        #expect(ids(tv.stdout) == ["Levels", "TV"], "\(tv.stderr)")
        let refused = try runTool(sync, ["ensure", "TV"] + common)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("not iOS"), "\(refused.stderr)")

        let help = try runTool(sync, ["list", "--help"])
        #expect(help.stdout.contains("default: iOS"), "\(help.stdout)")
        #expect(help.stdout.contains("BA_SYNC_PLATFORM"), "\(help.stdout)")
    }

    @Test func updatesDownloadWholePacksUnlessDeltasAreAskedFor() throws {
        let scratch = try Scratch()
        let (server, url) = try startServer(scratch)
        defer { server.interrupt() }
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--server", url, "--app-group", appGroup.string]
        #expect(try runTool(sync, ["ensure", "Levels"] + common).status == 0)
        let atVersion1 = scratch.root.appending("AppGroup-v1")
        try FileManager.default.copyItem(atPath: appGroup.string, toPath: atVersion1.string)
        try scratch.write("Assets/Levels/README.txt", "changed\n")
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let listed = try runTool(sync, ["list", "--json"] + common)
            let levels = (jsonLines(listed.stdout).last?["packs"] as? [[String: Any]])?.first {
                $0["id"] as? String == "Levels"
            }
            if levels?["version"] as? Int == 2 { break }
            Thread.sleep(forTimeInterval: 0.2)
        }

        let whole = try runTool(sync, ["ensure", "--latest", "Levels", "--json"] + common)
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(!whole.stdout.contains(#""event":"delta""#), "\(whole.stdout)")
        #expect(whole.stdout.contains(#""deltaFrom":null"#), "\(whole.stdout)")

        // Our deltas when asked for, by flag or by environment, from copies of the app group at version 1.
        let viaEnvironment = scratch.root.appending("AppGroup-v1-env")
        try FileManager.default.copyItem(atPath: atVersion1.string, toPath: viaEnvironment.string)
        let viaFlag = try runTool(
            sync,
            ["ensure", "--latest", "Levels", "--json", "--delta", "--server", url, "--app-group", atVersion1.string]
        )
        #expect(viaFlag.stdout.contains(#""event":"delta""#), "\(viaFlag.stdout) \(viaFlag.stderr)")
        let environment = try runTool(
            sync,
            ["ensure", "--latest", "Levels", "--json", "--server", url, "--app-group", viaEnvironment.string],
            environment: ["BA_SYNC_DELTA": "1"]
        )
        #expect(environment.stdout.contains(#""event":"delta""#), "\(environment.stdout) \(environment.stderr)")
    }

    @Test func anEssentialPackThatFailsForGoodLetsTheAppLaunchWithoutIt() async throws {
        let scratch = try Scratch()
        let (server, url) = try startServer(scratch, faults: ["status=500,pack=Tutorial"])
        defer { server.interrupt() }
        let common = ["--server", url, "--app-group", scratch.root.appending("AppGroup").string]

        let install = try runTool(sync, ["sync", "--event", "install", "--retries", "0"] + common)
        #expect(install.status == 2, "\(install.stderr)")
        #expect(install.stderr.contains("the app launches without Tutorial"), "\(install.stderr)")
        #expect(install.stderr.contains("ensureLocalAvailability"), "\(install.stderr)")
        #expect(install.stdout.contains("installed: Levels"), "\(install.stdout)")

        let json = try runTool(sync, ["sync", "--event", "install", "--retries", "0", "--json"] + common)
        let result = try #require(jsonLines(json.stdout).last)
        #expect(result["launchesWithout"] as? [String] == ["Tutorial"], "\(json.stdout)")

        var request = HTTPClientRequest(url: url + "/_mock/faults")
        request.method = .DELETE
        let cleared = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(cleared.status == .ok)
        // The app, once launched, makes the pack local itself.
        let ensured = try runTool(sync, ["ensure", "Tutorial"] + common)
        #expect(ensured.status == 0, "\(ensured.stderr)")
        #expect(ensured.stdout.contains("local: Tutorial"))
    }

    @Test func withInAppContentOffNothingIsDownloadedAtInstall() throws {
        let scratch = try Scratch()
        let (server, url) = try startServer(scratch)
        defer { server.interrupt() }
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--server", url, "--app-group", appGroup.string]

        let install = try runTool(sync, ["sync", "--event", "install", "--in-app-content", "off", "--json"] + common)
        #expect(install.status == 0, "\(install.stderr)")
        let result = try #require(jsonLines(install.stdout).last)
        #expect(result["installed"] as? [String] == [], "\(install.stdout)")
        let packs =
            (try? FileManager.default.contentsOfDirectory(atPath: appGroup.appending("AssetPacks").string)) ?? []
        #expect(packs.isEmpty, "\(packs)")
        // In text, why nothing came, not silence that reads as "did not run".
        let text = try runTool(sync, ["sync", "--event", "install", "--in-app-content", "off"] + common)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("nothing downloaded: in-app content is off"), "\(text.stdout)")

        let ensured = try runTool(sync, ["ensure", "Tutorial", "Levels"] + common)
        #expect(ensured.status == 0, "\(ensured.stderr)")
        let bad = try runTool(sync, ["sync", "--in-app-content", "maybe"] + common)
        #expect(bad.status == 64)
    }

    /// `--free-space`, `--network offline` and `--network-drop`: each said first, and what a user sees.
    @Test func theDevicesConditionsArePlayedAndSaid() throws {
        let scratch = try Scratch()
        let (server, url) = try startServer(scratch)
        defer { server.interrupt() }
        let common = ["--server", url, "--app-group", scratch.root.appending("AppGroup").string]
        let full = try runTool(sync, ["ensure", "Levels", "--free-space", "100KB"] + common)
        #expect(full.status == 1, "\(full.stderr)")
        #expect(full.stderr.hasPrefix("device: network wifi; free space 100000 bytes (simulated)\n"), "\(full.stderr)")
        #expect(full.stderr.contains("no space left on the device for pack Levels: it needs "), "\(full.stderr)")
        #expect(full.stderr.contains("Fix: free space"), "\(full.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("AppGroup/AssetPacks/Levels").string))
        let offline = try runTool(sync, ["ensure", "Levels", "--network", "offline", "--json"] + common)
        #expect(offline.status == 1, "\(offline.stderr)")
        let lines = jsonLines(offline.stdout)
        #expect(lines.first?["event"] as? String == "conditions", "\(offline.stdout)")
        #expect(lines.first?["network"] as? String == "offline", "\(offline.stdout)")
        #expect(lines.last?["event"] as? String == "error", "\(offline.stdout)")
        #expect((lines.last?["message"] as? String)?.contains("the device is offline") == true, "\(offline.stdout)")
        let dropped = try runTool(sync, ["ensure", "Levels", "--network-drop", "64KiB:0.3", "--json"] + common)
        #expect(dropped.status == 0, "\(dropped.stderr)")
        let events = jsonLines(dropped.stdout).compactMap { $0["event"] as? String }.filter { $0 != "progress" }
        #expect(
            events == ["conditions", "began", "retrying", "paused", "began", "resuming", "finished", "result"],
            "\(dropped.stdout)"
        )
        let bad = try runTool(sync, ["ensure", "Levels", "--network", "cellular"] + common)
        #expect(
            bad.status == 64 && bad.stderr.contains("--network cellular is not one of wifi, offline"),
            "\(bad.stderr)"
        )
    }
}
