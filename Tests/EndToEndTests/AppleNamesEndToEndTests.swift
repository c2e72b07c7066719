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

    func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// `python3 -m http.server` over `folder` on 127.0.0.1, port 0; returns it and its base URL.
    func staticServer(_ folder: FilePath) throws -> (RunningTool, String) {
        let debian = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
        let server = try RunningTool(
            URL(fileURLWithPath: debian ? "/usr/bin/python3" : "/usr/bin/env"),
            (debian ? [] : ["python3"])
                + ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", folder.string]
        )
        guard let line = server.waitForFirstLine(), let range = line.range(of: "http://127.0.0.1:"),
            let port = Int(line[range.upperBound...].prefix { $0.isNumber })
        else {
            server.interrupt(signal: SIGKILL)
            throw CancellationError()
        }
        return (server, "http://127.0.0.1:\(port)")
    }

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

    /// Plain http to a host that is not this machine is refused before any connection, saying why and how to
    /// allow it; `--allow-http` lets the request go (and `.invalid` never resolves).
    @Test func plainHTTPIsForLoopbackOnly() throws {
        let scratch = try Scratch()
        let site = scratch.root.appending("site")
        try scratch.write(
            "site/manifest.json",
            #"{"assetPacks": [{"id": "Remote", "url": "http://example.invalid/x", "version": 1, "downloadSize": 10, "downloadPolicy": {"onDemand": {}}, "host": {"thirdParty": {}}}]}"#
        )
        let (server, base) = try staticServer(site)
        defer { server.interrupt(signal: SIGKILL) }
        let group = scratch.root.appending("group").string
        let manifestURL = base + "/manifest.json"
        let refused = try runTool(
            sync,
            ["ensure", "Remote", "--manifest-url", manifestURL, "--app-group", group, "--json", "--retries", "0"]
        )
        #expect(refused.status == 1, "\(refused.stderr)")
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
