import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// `make torture` (and, smaller, `make test`): every fault rule, and random SIGKILLs of ba-sync, against the
/// built binaries; each run must end with the exact source bytes installed, or a clear error with the previous
/// state intact, and one more run must leave no temporary files.
@Suite("Torture", .serialized)
struct TortureTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    /// Runs per fault rule and SIGKILL points: `BA_TORTURE_RUNS` (default 1 and 4).
    var runs: Int { Int(ProcessInfo.processInfo.environment["BA_TORTURE_RUNS"] ?? "") ?? 1 }

    static let rules = [
        "reset-after=150000", "truncate", "corrupt=3000", "wrong-length", "status=500,times=2",
        "status=503,retry-after=1,times=1", "status=404", "latency=300", "throttle=4000000", "stall=3,times=1",
        "no-ranges", "stale-manifest,times=1", "bad-manifest,times=1",
    ]

    final class Tally: @unchecked Sendable {
        var rows: [(String, Int, Int, Int, Int)] = []
        func add(_ name: String, runs: Int, recovered: Int, failedCleanly: Int, corrupted: Int) {
            rows.append((name, runs, recovered, failedCleanly, corrupted))
        }
        var table: String {
            var lines = ["| fault | runs | recovered | failed cleanly | corrupted |", "|---|---|---|---|---|"]
            for row in rows { lines.append("| \(row.0) | \(row.1) | \(row.2) | \(row.3) | \(row.4) |") }
            return lines.joined(separator: "\n")
        }
    }

    /// SHA-256 of every file below `folder`, by relative path.
    func digests(_ folder: FilePath) throws -> [String: String] {
        var result: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: folder.string)
        while let path = enumerator?.nextObject() as? String {
            var isFolder: ObjCBool = false
            let full = folder.appending(path)
            if FileManager.default.fileExists(atPath: full.string, isDirectory: &isFolder), !isFolder.boolValue,
                !path.hasPrefix(".ba-mock"), !path.hasSuffix(".json") || path.contains("/")
            {
                result[path] = try FileDigest.sha256(of: full)
            }
        }
        return result
    }

    /// What one run left: every installed file must equal the source as it was at some point.
    enum Outcome { case recovered, failedCleanly, corrupted(String) }

    func judge(appGroup: FilePath, status: Int32, sources: [[String: String]]) throws -> Outcome {
        let verify = try runTool(sync, ["verify", "--app-group", appGroup.string])
        guard verify.status == 0 || verify.stderr.contains("is not installed") else {
            return .corrupted("verify: \(verify.stderr)")
        }
        let packs = appGroup.appending("AssetPacks")
        for id in (try? FileManager.default.contentsOfDirectory(atPath: packs.string)) ?? [] {
            for version in try FileManager.default.contentsOfDirectory(atPath: packs.appending(id).string)
            where !version.hasSuffix(".json") {
                for (path, digest) in try digests(packs.appending(id).appending(version))
                where !sources.contains(where: { $0[path] == digest }) {
                    return .corrupted("\(id)/\(version)/\(path) matches no source version")
                }
            }
        }
        return status == 0 ? .recovered : .failedCleanly
    }

    func debris(_ appGroup: FilePath) -> [String] {
        let staging =
            (try? FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/staging").string)) ?? []
        let downloads =
            (try? FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/downloads").string))
            ?? []
        let temporary =
            (try? FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync").string))?
            .filter { $0.contains(".tmp-") } ?? []
        return staging + downloads + temporary
    }

    func copyAssets(_ scratch: Scratch) throws -> FilePath {
        let folder = scratch.root.appending("Assets")
        try FileManager.default.copyItem(
            atPath: repositoryRoot().appendingPathComponent("Assets").path,
            toPath: folder.string
        )
        try? FileManager.default.removeItem(atPath: folder.appending(".ba-mock").string)
        return folder
    }

    @Test func faultsAndKillsNeverCorruptTheAppGroup() throws {
        let tally = Tally()
        for rule in Self.rules {
            var (recovered, failed, corrupted) = (0, 0, 0)
            for run in 0..<runs {
                let scratch = try Scratch()
                let folder = try copyAssets(scratch)
                let appGroup = scratch.root.appending("AppGroup")
                var sources = [try digests(folder)]
                // Half of the runs start from a half-updated app group: v1 installed, v2 on the server.
                let server = try RunningTool(
                    mock,
                    ["serve", folder.string, "--port", "0", "--fault", rule, "--seed", "\(run)"]
                )
                defer { server.interrupt() }
                let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
                let common = ["--server", url, "--app-group", appGroup.string, "--retries", "3", "--timeout", "2"]
                if run % 2 == 1 {
                    let first = try runTool(sync, ["sync", "--event", "install"] + common)
                    _ = first
                    try scratch.write("Assets/Levels/README.txt", "updated in run \(run)\n")
                    sources.append(try digests(folder))
                    Thread.sleep(forTimeInterval: 1.5)  // the server's live update picks it up
                }
                let result = try runTool(sync, ["sync", "--event", "update"] + common, timeout: 120)
                switch try judge(appGroup: appGroup, status: result.status, sources: sources) {
                case .recovered: recovered += 1
                case .failedCleanly:
                    failed += 1
                    #expect(
                        result.stderr.contains("failed") || result.stderr.contains("Error"),
                        "\(rule): \(result.stderr)"
                    )
                case .corrupted(let why):
                    corrupted += 1
                    Issue.record("\(rule): corrupted: \(why)")
                }
                // One more run without faults leaves no temporary files.
                server.interrupt()
                let clean = try RunningTool(mock, ["serve", folder.string, "--port", "0"])
                defer { clean.interrupt() }
                let cleanURL = try #require(clean.waitForFirstLine())
                // The device finishes what the faulted runs began: the install event, then the update event.
                for event in ["install", "update"] {
                    let again = try runTool(
                        sync,
                        ["sync", "--event", event, "--server", cleanURL, "--app-group", appGroup.string]
                    )
                    #expect(again.status == 0, "\(rule): \(again.stderr)")
                }
                #expect(debris(appGroup).isEmpty, "\(rule): \(debris(appGroup))")
            }
            tally.add(rule, runs: runs, recovered: recovered, failedCleanly: failed, corrupted: corrupted)
        }
        // SIGKILL at random moments of download, extraction, swap and state write.
        var (recovered, failed, corrupted) = (0, 0, 0)
        let kills = runs * 4
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<kills {
            let scratch = try Scratch()
            let folder = try copyAssets(scratch)
            let appGroup = scratch.root.appending("AppGroup")
            let sources = [try digests(folder)]
            let server = try RunningTool(mock, ["serve", folder.string, "--port", "0", "--fault", "throttle=8000000"])
            defer { server.interrupt() }
            let url = try #require(server.waitForFirstLine())
            let common = ["--server", url, "--app-group", appGroup.string]
            let victim = try RunningTool(sync, ["ensure", "HighResTextures", "Levels", "Tutorial"] + common)
            Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.6, using: &generator))
            victim.interrupt(signal: SIGKILL, timeout: 5)
            let rerun = try runTool(sync, ["ensure", "HighResTextures", "Levels", "Tutorial"] + common)
            switch try judge(appGroup: appGroup, status: rerun.status, sources: sources) {
            case .recovered: recovered += 1
            case .failedCleanly: failed += 1
            case .corrupted(let why):
                corrupted += 1
                Issue.record("SIGKILL: corrupted: \(why)")
            }
            #expect(rerun.status == 0, "after SIGKILL: \(rerun.stderr)")
            #expect(debris(appGroup).isEmpty, "after SIGKILL: \(debris(appGroup))")
        }
        tally.add(
            "SIGKILL at a random moment",
            runs: kills,
            recovered: recovered,
            failedCleanly: failed,
            corrupted: corrupted
        )
        print("\nTorture summary\n" + tally.table)
        let report = repositoryRoot().appendingPathComponent(".build/torture.md")
        try? (tally.table + "\n").write(to: report, atomically: true, encoding: .utf8)
        #expect(tally.rows.allSatisfy { $0.4 == 0 })
    }
}
