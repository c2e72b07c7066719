import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// The built `ba-sync` against the built `ba-mock`, as a user or a CI script runs them.
@Suite("ba-sync end to end", .serialized)
struct BASyncEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    func startServer(_ scratch: Scratch) throws -> (RunningTool, String, FilePath) {
        let folder = try scratch.copySampleAssets()
        let server = try RunningTool(mock, ["serve", folder.string, "--port", "0"])
        guard let url = server.waitForFirstLine() else { throw CancellationError() }
        return (server, url, folder)
    }

    func run(_ arguments: [String], url: String, appGroup: FilePath) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        try runTool(
            sync,
            Array(arguments.prefix(1)) + ["--server", url, "--app-group", appGroup.string] + arguments.dropFirst()
        )
    }

    /// ba-sync reads its settings as `AssetPackManager.shared` does (one rule, ``ClientSettings``): the
    /// primary language and the CA certificate from the environment too (ba-sync took them only as flags),
    /// a flag still over the environment, and a bad value named with where it came from.
    @Test func theEnvironmentGivesWhatAFlagDoesNotAsForTheSharedManager() throws {
        let scratch = try Scratch()
        let (server, url, _) = try startServer(scratch)
        defer { server.interrupt() }
        let appGroup = scratch.root.appending("AppGroup")
        let list = try runTool(
            sync,
            ["list", "--server", url, "--app-group", appGroup.string, "--json"],
            environment: ["BA_SYNC_PRIMARY_LANGUAGE": "fr"]
        )
        #expect(list.status == 0, "\(list.stderr)")
        #expect(jsonLines(list.stdout).last?["primaryLanguage"] as? String == "fr", "\(list.stdout)")
        let flagWins = try runTool(
            sync,
            ["list", "--server", url, "--app-group", appGroup.string, "--json", "--primary-language", "de"],
            environment: ["BA_SYNC_PRIMARY_LANGUAGE": "fr"]
        )
        #expect(jsonLines(flagWins.stdout).last?["primaryLanguage"] as? String == "de", "\(flagWins.stdout)")
        let missing = scratch.root.appending("no-such-ca.pem").string
        let noCA = try runTool(
            sync,
            ["list", "--server", url, "--app-group", appGroup.string],
            environment: ["BA_SYNC_CA_CERT": missing]
        )
        #expect(noCA.status == 64, "\(noCA.stderr)")
        #expect(noCA.stderr.contains("BA_SYNC_CA_CERT=\(missing) does not exist"), "\(noCA.stderr)")
        let badServer = try runTool(
            sync,
            ["list", "--app-group", appGroup.string],
            environment: ["BA_SYNC_SERVER": "ftp://127.0.0.1"]
        )
        #expect(badServer.status == 64, "\(badServer.stderr)")
        #expect(
            badServer.stderr.contains("BA_SYNC_SERVER=ftp://127.0.0.1 is not an http:// or https:// URL"),
            "\(badServer.stderr)"
        )
    }

    /// `status` of a pack the server has and the app group does not: its row and flags, and no note about
    /// archive digests, which speaks of installed packs only (it was printed for such a pack too).
    @Test func statusOfAPackNotInstalledHasNoNoteAboutDigests() throws {
        let scratch = try Scratch()
        let (server, url, _) = try startServer(scratch)
        defer { server.interrupt() }
        let status = try run(["status", "Levels"], url: url, appGroup: scratch.root.appending("AppGroup"))
        #expect(status.status == 0, "\(status.stderr)")
        let row = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("Levels ") })
        #expect(row.hasSuffix("downloadAvailable  -"), "\(row)")
        #expect(!status.stderr.contains("archive digest not available"), "\(status.stderr)")
        // The language line under the table, as list prints it too (both languages given, so each has its place).
        let languages = ["--language", "de", "--primary-language", "fr"]
        let line =
            "language: de (the app's); localized packs resolve to none (no localized pack is installed); primary fr"
        let named = try run(["status", "Levels"] + languages, url: url, appGroup: scratch.root.appending("AppGroup"))
        #expect(named.stdout.contains(line), "\(named.stdout)")
        let list = try run(["list"] + languages, url: url, appGroup: scratch.root.appending("AppGroup"))
        #expect(list.stdout.contains(line), "\(list.stdout)")
    }

    @Test func syncStatusCatAndJSONAsAScriptWouldUseThem() throws {
        let scratch = try Scratch()
        let (server, url, folder) = try startServer(scratch)
        defer { server.interrupt() }
        let appGroup = scratch.root.appending("AppGroup")

        let synced = try run(["sync", "--event", "install", "--json"], url: url, appGroup: appGroup)
        #expect(synced.status == 0, "\(synced.stderr)")
        let lines = synced.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.contains { $0["event"] as? String == "finished" && $0["pack"] as? String == "Tutorial" })
        let result = try #require(lines.last)
        #expect(result["event"] as? String == "result")
        #expect(result["installed"] as? [String] == ["Levels", "Tutorial"])

        let status = try run(["status", "Tutorial", "--json"], url: url, appGroup: appGroup)
        #expect(status.status == 0, "\(status.stderr)")
        let statusResult = try #require(jsonLines(status.stdout).last)
        #expect(statusResult["event"] as? String == "result" && statusResult["online"] as? Bool == true)
        let object = try #require((statusResult["packs"] as? [[String: Any]])?.first)
        #expect(object["version"] as? Int == 1)
        #expect((object["status"] as? [String])?.contains("downloaded") == true)
        #expect(object["statusRawValue"] as? Int == 69)

        // Without a server, status says it is offline and gives what the app group knows.
        let offline = try runTool(sync, ["status", "--app-group", appGroup.string, "--json"])
        #expect(offline.status == 0, "\(offline.stderr)")
        let offlineResult = try #require(jsonLines(offline.stdout).last)
        #expect(offlineResult["online"] as? Bool == false)
        #expect((offlineResult["offlineReason"] as? String)?.contains("no server given") == true)
        #expect((offlineResult["packs"] as? [[String: Any]])?.map { $0["id"] as? String } == ["Levels", "Tutorial"])

        let cat = try run(["cat", "Videos/Introduction.m4v"], url: url, appGroup: appGroup)
        #expect(cat.status == 0)
        let source = try scratch.read(folder.appending("Videos/Introduction.m4v"))
        #expect(Data(cat.stdout.utf8).count > 0)
        let catFile = scratch.root.appending("cat.out")
        let catProcess = Process()
        catProcess.executableURL = sync
        catProcess.arguments = ["cat", "--app-group", appGroup.string, "Videos/Introduction.m4v"]
        _ = FileManager.default.createFile(atPath: catFile.string, contents: nil)
        catProcess.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: catFile.string))
        try catProcess.run()
        catProcess.waitUntilExit()
        #expect(try scratch.read(catFile) == source)

        let missing = try run(["cat", "No/Such/File"], url: url, appGroup: appGroup)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("No/Such/File is not in any installed pack"))
        let missingJSON = try run(["cat", "No/Such/File", "--json"], url: url, appGroup: appGroup)
        let error = try #require(
            try JSONSerialization.jsonObject(with: Data(missingJSON.stdout.utf8)) as? [String: Any]
        )
        #expect(error["event"] as? String == "error")
        #expect(error["code"] as? String == "fileNotFound")

        let verify = try run(["verify"], url: url, appGroup: appGroup)
        #expect(verify.status == 0)
        #expect(verify.stdout.hasPrefix("verified 41 files"))

        let list = try run(["list", "--json"], url: url, appGroup: appGroup)
        let listResult = try #require(jsonLines(list.stdout).last)
        #expect(listResult["event"] as? String == "result")
        let packs = try #require(listResult["packs"] as? [[String: Any]])
        #expect(packs.map { $0["id"] as? String } == ["HighResTextures", "Levels", "Tutorial"])
        #expect(packs.first?["installedVersion"] is NSNull)

        // Every command ends with one result line; verify lists what differs as data.
        for command in [["url", "Levels/"], ["check-updates"], ["verify"]] {
            let output = try run(command + ["--json"], url: url, appGroup: appGroup)
            #expect(output.status == 0, "\(command): \(output.stderr)")
            #expect(jsonLines(output.stdout).last?["event"] as? String == "result", "\(command): \(output.stdout)")
        }
        let installed = try #require(
            try FileManager.default.contentsOfDirectory(atPath: appGroup.appending("AssetPacks/Tutorial").string)
                .first { !$0.hasSuffix(".json") }
        )
        try scratch.write("AppGroup/AssetPacks/Tutorial/\(installed)/Tutorial/strings/en.json", "tampered")
        let tampered = try runTool(sync, ["verify", "--app-group", appGroup.string, "--json"])
        #expect(tampered.status == 1)
        let verdict = try #require(jsonLines(tampered.stdout).last)
        #expect(verdict["event"] as? String == "result" && verdict["ok"] as? Bool == false)
        let problems = try #require(verdict["problems"] as? [[String: String]])
        #expect(problems == [["pack": "Tutorial", "path": "Tutorial/strings/en.json", "problem": "differs"]])

        // A mistyped app group has nothing to verify or read: said, never "verified 0 files" with success.
        let typo = appGroup.removingLastComponent().appending("AppGrop")
        for command in [["verify"], ["verify", "--json"], ["cat", "Levels/World1/level1.json"], ["url", "Levels/"]] {
            let output = try runTool(sync, command + ["--app-group", typo.string])
            #expect(output.status == 64, "\(command): \(output.stdout)")
            #expect(output.stderr.contains("no app group at \(typo): nothing was ever installed there"), "\(command)")
            #expect(!output.stdout.contains("verified"), "\(command)")
        }
        #expect(!FileManager.default.fileExists(atPath: typo.string))
        // Nor does a command that failed there make one: no empty app group is left to be taken for one later.
        for command in [["sync", "--server", "http://127.0.0.1:1"], ["remove", "Tutorial"]] {
            let output = try runTool(sync, command + ["--app-group", typo.string])
            #expect(output.status == 1, "\(command): \(output.stderr)")
            #expect(!FileManager.default.fileExists(atPath: typo.string), "\(command) left \(typo)")
        }

        // A pack ID a letter or a case off gets the listed one it was perhaps meant to be; another gets none.
        for (typed, meant) in [("Levle", "Levels"), ("tutorial", "Tutorial"), ("Nope", nil)] {
            let output = try run(["ensure", typed], url: url, appGroup: appGroup)
            #expect(output.status == 1)
            #expect(output.stderr.contains("no asset pack \"\(typed)\" at "), "\(output.stderr)")
            #expect(output.stderr.contains("did you mean") == (meant != nil), "\(output.stderr)")
            if let meant { #expect(output.stderr.contains("(did you mean \"\(meant)\"?)"), "\(output.stderr)") }
        }

        // remove needs no server.
        let removed = try runTool(sync, ["remove", "Tutorial", "--app-group", appGroup.string, "--json"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(jsonLines(removed.stdout).last?["removed"] as? String == "Tutorial")
    }

    /// A server gone in the middle of a resumable download: where it resumes is said once, not again before
    /// each attempt that cannot connect, and the failure says the system's words, brackets balanced.
    @Test func aServerGoneMidDownloadIsSaidOnceAndInPlainWords() throws {
        let scratch = try Scratch()
        try scratch.write("Blobs/blob.bin", Scratch.noise(8 << 20, seed: 7))
        try scratch.write(
            "Blobs.json",
            #"{"assetPackID": "Blobs", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Blobs"}], "#
                + #""platforms": ["iOS"]}"#
        )
        let server = try RunningTool(
            mock,
            ["serve", scratch.root.string, "--port", "0", "--format", "tar", "--fault", "throttle=1048576"]
        )
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "stderr: \(server.stderr)")
        let appGroup = scratch.root.appending("AppGroup")
        let ensure = try RunningTool(
            sync,
            ["ensure", "Blobs", "--resumable", "--retries", "3", "--server", url, "--app-group", appGroup.string]
        )
        let deadline = Date().addingTimeInterval(60)
        while !ensure.stderr.contains("% of"), ensure.process.isRunning, Date() < deadline { usleep(50_000) }
        #expect(server.interrupt() == 0)
        #expect(ensure.wait(timeout: 60) == 1, "\(ensure.stderr)")
        let lines = ensure.stderr.split(separator: "\n")
        #expect(lines.filter { $0.contains("resuming at byte") }.count == 1, "\(ensure.stderr)")
        let failure = try #require(lines.first { $0.contains("failed: cannot download pack Blobs") })
        #expect(failure.contains("): Connection refused"), "\(failure)")
        #expect(!failure.contains("errno"), "\(failure)")
        #expect(failure.filter { $0 == "(" }.count == failure.filter { $0 == ")" }.count, "\(failure)")
    }

    @Test func retriesSayWhyResumesSayFromWhereAndEachFailureIsPrintedOnce() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let server = try RunningTool(
            mock,
            [
                "serve", folder.string, "--port", "0", "--fault", "status=503,pack=Levels,times=1",
                "--fault", "reset-after=100000,pack=HighResTextures,times=1", "--fault", "status=404,pack=Tutorial",
            ]
        )
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine())
        let appGroup = scratch.root.appending("AppGroup")
        let ensure = try run(["ensure", "Levels", "HighResTextures", "Tutorial"], url: url, appGroup: appGroup)
        #expect(ensure.status == 1)
        #expect(ensure.stderr.contains("Levels: status 503, attempt 2 of 6, next in"), "\(ensure.stderr)")
        #expect(ensure.stderr.contains("HighResTextures: connection broke at byte"), "\(ensure.stderr)")
        #expect(ensure.stderr.contains("HighResTextures: resuming at byte"), "\(ensure.stderr)")
        // The 404 is shown once, where it happened; the summary only points at it.
        #expect(ensure.stderr.components(separatedBy: "answered 404").count - 1 == 1, "\(ensure.stderr)")
        #expect(ensure.stderr.contains("failed: Tutorial (above)"))
        #expect(ensure.stdout.contains("local: Levels, HighResTextures"))

        let json = try run(["ensure", "Tutorial", "--json"], url: url, appGroup: appGroup)
        let lines = jsonLines(json.stdout)
        let failed = try #require(lines.first { $0["event"] as? String == "failed" })
        #expect(failed["code"] as? String == "httpStatus")
        let result = try #require(lines.last)
        #expect(result["event"] as? String == "result")
        let failures = try #require(result["failures"] as? [String: [String: String]])
        #expect(failures["Tutorial"]?["code"] == "httpStatus")
    }

    @Test func twoProcessesSyncingOneAppGroupDoNotCorruptIt() throws {
        let scratch = try Scratch()
        let (server, url, _) = try startServer(scratch)
        defer { server.interrupt() }
        let appGroup = scratch.root.appending("AppGroup")
        let arguments = [
            "ensure", "--server", url, "--app-group", appGroup.string, "HighResTextures", "Levels", "Tutorial",
        ]
        let first = try RunningTool(sync, arguments)
        let second = try RunningTool(sync, arguments)
        #expect(first.wait() == 0, "\(first.stderr)")
        #expect(second.wait() == 0, "\(second.stderr)")
        let verify = try run(["verify"], url: url, appGroup: appGroup)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.hasPrefix("verified 46 files"))
        let staging = try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/staging").string)
        #expect(staging.isEmpty)
    }

    @Test func trustsASelfSignedMockThroughCACert() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let tlsDir = scratch.root.appending("tls")
        let server = try RunningTool(
            mock,
            ["serve", folder.string, "--port", "0", "--tls-self-signed", "--tls-dir", tlsDir.string]
        )
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "stderr: \(server.stderr)")
        #expect(url.hasPrefix("https://127.0.0.1:"))
        let ca = tlsDir.appending("ca.pem").string
        #expect(!FileManager.default.fileExists(atPath: folder.appending(".ba-mock/tls").string))
        let appGroup = scratch.root.appending("AppGroup")
        let refused = try run(["ensure", "Tutorial"], url: url, appGroup: appGroup)
        #expect(refused.status == 1)
        // The failure names the fix, and is not retried (a certificate does not become trusted by waiting).
        #expect(refused.stderr.contains("the TLS handshake with 127.0.0.1 failed"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--ca-cert FILE"))
        #expect(!refused.stderr.contains("attempts"))
        // The other mistake, http:// to a TLS port: the server closes without an answer, and the fix says https://.
        let plain = url.replacingOccurrences(of: "https://", with: "http://")
        let closed = try runTool(
            sync,
            ["ensure", "Tutorial", "--server", plain, "--app-group", appGroup.string, "--retries", "0"]
        )
        #expect(closed.status == 1)
        #expect(closed.stderr.contains("closed the connection without an answer"), "\(closed.stderr)")
        #expect(closed.stderr.contains("if it speaks TLS"), "\(closed.stderr)")
        #expect(closed.stderr.contains("use https://"), "\(closed.stderr)")
        let trusted = try run(["ensure", "Tutorial", "--ca-cert", ca], url: url, appGroup: appGroup)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout.contains("local: Tutorial"))
    }

    @Test func errorsNameWhatFailed() throws {
        let scratch = try Scratch()
        let port = try freeLoopbackPort()
        let appGroup = scratch.root.appending("AppGroup")
        // Options may come before the subcommand, as in `ba-sync --server URL --app-group DIR list`.
        let unreachable = try runTool(
            sync,
            ["--server", "http://127.0.0.1:\(port)", "--app-group", appGroup.string, "--retries", "0", "list"]
        )
        #expect(unreachable.status == 1)
        #expect(
            unreachable.stderr.contains("cannot connect to 127.0.0.1:\(port) for http://127.0.0.1:\(port)/manifest"),
            "\(unreachable.stderr)"
        )
        let noServer = try runTool(sync, ["list", "--app-group", appGroup.string])
        #expect(noServer.status == 64)
        #expect(noServer.stderr.contains("BA_SYNC_SERVER"))
        // With --json, a usage error is a JSON line too; a duration that is not one is a usage error, not a crash.
        let usage = try runTool(sync, ["list", "--app-group", appGroup.string, "--json"])
        #expect(usage.status == 64)
        let line = try #require(try JSONSerialization.jsonObject(with: Data(usage.stdout.utf8)) as? [String: Any])
        #expect(line["event"] as? String == "error" && line["code"] as? String == "usage")
        for value in ["inf", "nan", "1e300"] {
            let bad = try runTool(sync, ["list", "--server", "http://127.0.0.1:\(port)", "--timeout", value])
            #expect(bad.status == 64, "--timeout \(value): \(bad.stderr)")
        }
        // A damaged state is an error, not "offline".
        try scratch.write("AppGroup/.ba-sync/state.json", "{garbage")
        let damaged = try runTool(sync, ["status", "--app-group", appGroup.string])
        #expect(damaged.status == 1)
        #expect(damaged.stderr.components(separatedBy: "is damaged").count - 1 == 1, "\(damaged.stderr)")
    }

    @Test func benchMeasuresInstalledFilesAsTableJSONAndCSV() throws {
        let scratch = try Scratch()
        let (server, url, _) = try startServer(scratch)
        defer { server.interrupt() }
        let appGroup = scratch.root.appending("AppGroup")
        let ensured = try run(["ensure", "Levels", "Tutorial"], url: url, appGroup: appGroup)
        #expect(ensured.status == 0, "\(ensured.stderr)")

        let json = try run(
            ["bench", "--pack", "Levels", "--iterations", "35", "--block", "4k", "--json"],
            url: url,
            appGroup: appGroup
        )
        #expect(json.status == 0, "\(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let results = try #require(report["results"] as? [[String: Any]])
        #expect(report["files"] as? Int == 35)
        // 3 methods x (sequential, random 4 KiB, first-byte) x (warm, cold) + the namespace lookup.
        #expect(results.count == 19)
        for result in results {
            #expect(result["operations"] as? Int == 35, "\(result)")
            let latency = try #require(result["latencyMicroseconds"] as? [String: Double])
            #expect((latency["p50"] ?? 0) > 0)
            #expect((latency["p50"] ?? 0) <= (latency["p99"] ?? 0))
            #expect((latency["p99"] ?? 0) <= (latency["max"] ?? 0))
        }
        let sequential = try #require(
            results.first { $0["method"] as? String == "contents" && $0["pattern"] as? String == "sequential" }
        )
        // 35 whole-file reads over the pack's 35 files: every byte once.
        #expect(sequential["bytes"] as? Int == report["bytes"] as? Int)
        // first-byte reads the same page of each file whatever the method (copy no longer copies whole files).
        let firstPages = results.filter { $0["pattern"] as? String == "first-byte" }.map { $0["bytes"] as? Int }
        #expect(firstPages.count == 6 && Set(firstPages).count == 1, "\(firstPages)")
        #expect((firstPages.first ?? 0) ?? 0 < report["bytes"] as? Int ?? 0)

        let csv = try run(
            [
                "bench", "Levels/World1/world.json", "--method", "descriptor", "--pattern", "random", "--block", "32",
                "--cache", "cold", "--iterations", "10", "--csv",
            ],
            url: url,
            appGroup: appGroup
        )
        #expect(csv.status == 0, "\(csv.stderr)")
        let rows = csv.stdout.split(separator: "\n")
        #expect(rows.count == 2)
        #expect(rows.first?.hasPrefix("method,pattern,cache,block,threads,operations,bytes") == true)
        #expect(rows.last?.hasPrefix("descriptor,random,cold,32,1,10,320,") == true)

        let table = try run(["bench", "--pattern", "lookup", "--iterations", "20"], url: url, appGroup: appGroup)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("p99 µs"))
        #expect(table.stdout.contains("namespace lookup"))

        // --duration is time spent reading: warm-up reads and page drops come on top of it.
        let timed = try run(
            [
                "bench", "--pack", "Levels", "--method", "contents", "--pattern", "first-byte", "--duration", "0.05",
                "--json",
            ],
            url: url,
            appGroup: appGroup
        )
        #expect(timed.status == 0, "\(timed.stderr)")
        let timedReport = try #require(
            try JSONSerialization.jsonObject(with: Data(timed.stdout.utf8)) as? [String: Any]
        )
        let timedResults = try #require(timedReport["results"] as? [[String: Any]])
        #expect(timedResults.count == 2)
        for result in timedResults {
            #expect((result["seconds"] as? Double ?? 0) >= 0.05, "\(result)")
        }

        // What ran, said first; too few operations flagged.
        let environment = try #require(report["environment"] as? [String: Any])
        #if DEBUG
            let (debug, tableStart) = (true, "DEBUG BUILD: ba-sync ")
        #else
            let (debug, tableStart) = (false, "ba-sync ")
        #endif
        #expect(environment["build"] as? String == (debug ? "debug" : "release"))
        #expect((environment["kernel"] as? String)?.hasPrefix("Linux ") == true)
        #expect(![nil, "", "unknown"].contains(environment["fileSystem"] as? String), "\(environment)")
        #expect(environment["seed"] as? Int == 1 && environment["iterations"] as? Int == 35)
        #expect((report["warnings"] as? [String])?.count == 19)
        #expect(table.stdout.hasPrefix(tableStart), "\(table.stdout)")
        #expect(table.stderr.contains("a DEBUG build") == debug)

        // --repeat: the median run, and the spread of all.
        let lookups = ["bench", "--pattern", "lookup", "--iterations", "200"]
        let repeated = try run(lookups + ["--repeat", "3", "--json"], url: url, appGroup: appGroup)
        let repeatedResult = try #require(
            (try JSONSerialization.jsonObject(with: Data(repeated.stdout.utf8)) as? [String: Any])?["results"]
                as? [[String: Any]]
        ).first
        let spread = try #require(repeatedResult?["spread"] as? [String: Any], "\(repeated.stdout)")
        #expect(spread["runs"] as? Int == 3)
        let opsPerSecond = try #require(repeatedResult?["operationsPerSecond"] as? Double)
        #expect((spread["operationsPerSecondMin"] as? Double ?? .infinity) <= opsPerSecond)
        #expect(opsPerSecond <= (spread["operationsPerSecondMax"] as? Double ?? 0))

        // --baseline: a saved run ten times faster than this one is a regression (exit 1); the same run with
        // a wide tolerance is not. --histogram writes the distribution.
        let saved = scratch.root.appending("baseline.json")
        var faster = try #require(try JSONSerialization.jsonObject(with: Data(repeated.stdout.utf8)) as? [String: Any])
        faster["results"] = (faster["results"] as? [[String: Any]] ?? []).map { result in
            var result = result
            result["seconds"] = (result["seconds"] as? Double ?? 1) / 10
            return result
        }
        try JSONSerialization.data(withJSONObject: faster).write(to: URL(fileURLWithPath: saved.string))
        let histogram = scratch.root.appending("lookup.hgrm")
        let slower = try run(
            lookups + ["--baseline", saved.string, "--histogram", histogram.string],
            url: url,
            appGroup: appGroup
        )
        #expect(slower.status == 1, "\(slower.stdout)\(slower.stderr)")
        #expect(slower.stdout.contains("SLOWER"), "\(slower.stdout)")
        #expect(
            slower.stdout.contains("1 case(s) slower than the baseline by more than their gate"),
            "\(slower.stdout)"
        )
        let distribution = String(decoding: try scratch.read(histogram), as: UTF8.self)
        #expect(distribution.hasPrefix("# namespace lookup\n"))
        #expect(distribution.contains("Percentile") && distribution.contains("#[Mean"))
        let within = try run(
            lookups + ["--baseline", saved.string, "--tolerance", "1000"],
            url: url,
            appGroup: appGroup
        )
        #expect(within.status == 0, "\(within.stdout)")
        let notAReport = try run(lookups + ["--baseline", histogram.string], url: url, appGroup: appGroup)
        #expect(notAReport.status == 64)
        #expect(notAReport.stderr.contains("is not a report of `ba-sync bench --json`"))

        let badMethod = try run(["bench", "--method", "mmap"], url: url, appGroup: appGroup)
        #expect(badMethod.status == 64)
        #expect(badMethod.stderr.contains("unknown method 'mmap'"))
        let notInstalled = try run(["bench", "--pack", "HighResTextures"], url: url, appGroup: appGroup)
        #expect(notInstalled.status == 1)
        #expect(notInstalled.stderr.contains("pack HighResTextures is not installed"))
    }

    /// `make bench`'s script on tiny data, one round, with the debug build: it must keep running and
    /// writing its table (the real run is `make bench`, minutes long).
    @Test func benchScriptSmokeRunWritesTheTable() throws {
        for tool in ["/usr/bin/bsdtar", "/usr/bin/wrk", "/usr/bin/time", "/usr/sbin/nginx", "/usr/bin/rsync"] {
            guard FileManager.default.isExecutableFile(atPath: tool) else {
                Issue.record("\(tool) is not installed: run `make deps`")
                return
            }
        }
        let scratch = try Scratch()
        let out = scratch.root.appending("out")
        let tmp = scratch.root.appending("tmp")
        let (killed, live) = (try KilledBenchRun(in: tmp), try KilledBenchRun(in: tmp, running: true))
        defer { killed.release() }
        let script = repositoryRoot().appendingPathComponent("scripts/bench.sh").path
        let result = try runTool(
            URL(fileURLWithPath: "/bin/bash"),
            [script, "--smoke", "--out", out.string, sync.deletingLastPathComponent().path],
            environment: ["BENCH_TMP": tmp.string],
            timeout: 600
        )
        #expect(result.status == 0, "\(result.stderr)")
        killed.expectSwept(stderr: result.stderr)
        live.expectKept()
        let markdown = try String(contentsOfFile: out.appending("results.md").string, encoding: .utf8)
        for step in [
            "| pack | big |", "| pack | many |", "| pack | mixed |", "| pack | files1000-16k |",
            "| serve-1-stream | big |",
            "| serve-64k-32-connections | small |", "| serve-dashboard-open-100 | small |", "| ensure | big |",
            "| ensure | many |",
            "| read-contents-whole-warm | big |", "| read-descriptor-random-4k-warm | big |",
            "| contents-call-p99-warm | many |", "| hash-installed | big |", "| lookup-p99 | files1000 |",
            "| rss-serve-8-clients | big |", "| rss-pack |", "| rss-ensure |", "| update-time | update |",
            "| update-bytes | update |", "| update-bytes-vs-goal | update |", "| update-time-no-delta | update |",
            "| update-time | update-small |", "| update-bytes | update-middle |", "| update-time | update-insert |",
            "| update-time-vs-full | update-insert |", "| publish-first | 8packs |", "| publish-change | 8packs |",
            "| publish-change-bytes | 8packs |", "| publish-change-objects | 8packs |",
            "| backgroundassets-first-read | many |", "| backgroundassets-contents-call | many |",
            "| ensure-vs-limit | big-nosha |", "| pack-vs-limit | big-nosha |",
        ] {
            #expect(markdown.contains(step), "no row \(step) in:\n\(markdown)")
        }
        #expect(result.stdout.contains("SMOKE RUN"))
        let json = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: out.appending("results.json").string))
            )
                as? [String: Any]
        )
        let rows = try #require(json["rows"] as? [[String: Any]])
        #expect(rows.count >= 25)
        for row in rows where row["step"] as? String == "pack" {
            #expect((row["ours"] as? Double ?? 0) > 0, "\(row)")
            #expect((row["reference"] as? Double ?? 0) > 0, "\(row)")
        }
        #expect((json["commit"] as? String)?.isEmpty == false)

        // Two rounds give each ratio its range (a smoke run has one round, which shows none).
        let records = try scratch.write(
            "records.tsv",
            "update-time\tu\tours\t0.4\ts\t100\nupdate-time\tu\tref\t0.2\ts\t10\n"
                + "update-time\tu\tours\t0.5\ts\t100\nupdate-time\tu\tref\t0.2\ts\t10\n"
        )
        let (twoMD, twoJSON) = (scratch.root.appending("two.md"), scratch.root.appending("two.json"))
        let report = repositoryRoot().appendingPathComponent("bench/report.awk").path
        let rendered = try runTool(
            URL(fileURLWithPath: "/usr/bin/awk"),
            [
                "-F", "\t", "-v", "date=d", "-v", "commit=c", "-v", "machine=m", "-v", "rounds=2", "-v", "smoke=0",
                "-v", "md=\(twoMD.string)", "-v", "json=\(twoJSON.string)", "-f", report, records.string,
            ]
        )
        #expect(rendered.status == 0, "\(rendered.stderr)")
        #expect(
            String(decoding: try scratch.read(twoMD), as: UTF8.self).contains(
                "| 2.25 | 2.00–2.50 | ratio <= 1.2 | no |"
            )
        )
        let twoRows = try #require(
            (try JSONSerialization.jsonObject(with: try scratch.read(twoJSON)) as? [String: Any])?["rows"]
                as? [[String: Any]]
        )
        #expect(twoRows.first?["ratioMin"] as? Double == 2.0 && twoRows.first?["ratioMax"] as? Double == 2.5)

        // The README's table comes from one run's results, between its marker lines; a smoke run is refused.
        let readmeScript = repositoryRoot().appendingPathComponent("scripts/bench-readme.sh").path
        let readme = try scratch.write(
            "README.md",
            "# Title\n\nbefore\n<!-- bench-results:begin -->\nold table\n<!-- bench-results:end -->\nafter\n"
        )
        let results = out.appending("results.md")
        let smoke = try runTool(URL(fileURLWithPath: "/bin/bash"), [readmeScript, results.string, readme.string])
        #expect(smoke.status == 1)
        #expect(smoke.stderr.contains("is a smoke run"))
        let real = try scratch.write("real.md", markdown.replacingOccurrences(of: " · SMOKE RUN (tiny data)", with: ""))
        let placed = try runTool(URL(fileURLWithPath: "/bin/bash"), [readmeScript, real.string, readme.string])
        #expect(placed.status == 0, "\(placed.stderr)")
        let text = String(decoding: try scratch.read(readme), as: UTF8.self)
        #expect(text.hasPrefix("# Title\n\nbefore\n<!-- bench-results:begin -->\nGenerated by"))
        #expect(text.hasSuffix("<!-- bench-results:end -->\nafter\n"))
        #expect(!text.contains("old table") && text.contains("| pack | big |"))
    }
}

/// What a `make bench` killed past its traps leaves in its temporary folder (bench.sh's `sweep_leftovers`): its
/// work folder, the mark naming its process (gone), a server still holding a file in the folder and, where this
/// runs as root with loop devices, its loop file system mounted in the folder. With `running`, the mark names
/// this test's own process: a run still going, whose folder the next run must leave alone.
private struct KilledBenchRun {
    let folder: FilePath
    let image: FilePath
    let holder: RunningTool?
    /// The loop device, when one could be made here.
    let loop: String?

    init(in tmp: FilePath, running: Bool = false) throws {
        folder = tmp.appending(running ? "ba-bench.live" : "ba-bench.killed")
        image = FilePath(folder.string + ".img")
        let clients = folder.appending("clients").string
        try FileManager.default.createDirectory(atPath: clients, withIntermediateDirectories: true)
        try Data(count: 4096).write(to: URL(fileURLWithPath: folder.appending("data.bin").string))
        // PIDs stay below pid_max (at most 2^22): the killed run's is one no process can have.
        let mark = running ? "\(getpid()) \(Self.startTicks(of: "self"))\n" : "4194304 1\n"
        try Data(mark.utf8).write(to: URL(fileURLWithPath: folder.string + ".run"))
        guard !running else { (holder, loop) = (nil, nil); return }
        holder = try RunningTool(URL(fileURLWithPath: "/bin/sleep"), ["300"], directory: folder.string)
        loop = Self.mountLoop(image: image, at: folder.appending("clients"))
    }

    /// The process's start time in clock ticks after boot (field 22 of `/proc/PID/stat`), as bench.sh reads it.
    static func startTicks(of pid: String) -> String {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        return fields.count > 19 ? String(fields[19]) : ""
    }

    /// A 16 MiB ext4 image on a loop device mounted at `point`, or `nil` where that cannot be done (not root, no
    /// loop devices in this container).
    static func mountLoop(image: FilePath, at point: FilePath) -> String? {
        let tool = { (path: String, arguments: [String]) in try? runTool(URL(fileURLWithPath: path), arguments) }
        guard tool("/usr/bin/truncate", ["-s", "16M", image.string])?.status == 0,
            tool("/sbin/mkfs.ext4", ["-q", "-F", image.string])?.status == 0,
            let attached = tool("/sbin/losetup", ["-f", "--show", image.string]), attached.status == 0
        else { return nil }
        let device = attached.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard tool("/bin/mount", [device, point.string])?.status == 0 else {
            _ = tool("/sbin/losetup", ["-d", device])
            return nil
        }
        return device
    }

    /// Everything is gone: the folder, its image and mark, the server holding a file in it (killed), the mount
    /// and the loop device; and the run said so.
    func expectSwept(stderr: String) {
        #expect(stderr.contains("removing what an earlier run left (it was killed): \(folder)"), "\(stderr)")
        for path in [folder.string, image.string, folder.string + ".run"] {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path) is left")
        }
        if let holder {
            #expect(holder.wait(timeout: 5) == SIGKILL && holder.process.terminationReason == .uncaughtSignal)
        }
        if let loop {
            let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
            #expect(!mounts.contains(folder.string), "\(folder) is still mounted")
            #expect(!FileManager.default.fileExists(atPath: Self.backingFile(of: loop)), "\(loop) is still attached")
        }
    }

    /// Where the kernel says which file a loop device reads; absent once the device is detached.
    static func backingFile(of loop: String) -> String {
        "/sys/block/\(FilePath(loop).lastComponent?.string ?? "")/loop/backing_file"
    }

    /// Undoes what the sweep should have undone, when it did not (a failing test leaves no mount behind).
    func release() {
        holder?.interrupt(signal: SIGKILL, timeout: 5)
        guard let loop, FileManager.default.fileExists(atPath: Self.backingFile(of: loop)) else { return }
        _ = try? runTool(URL(fileURLWithPath: "/bin/umount"), ["-l", folder.appending("clients").string])
        _ = try? runTool(URL(fileURLWithPath: "/sbin/losetup"), ["-d", loop])
    }

    /// A live run's folder and mark are where they were.
    func expectKept() {
        #expect(FileManager.default.fileExists(atPath: folder.appending("data.bin").string))
        #expect(FileManager.default.fileExists(atPath: folder.string + ".run"))
    }
}
