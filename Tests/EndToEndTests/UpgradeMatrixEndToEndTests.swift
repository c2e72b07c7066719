import Foundation
import SystemPackage
import TestSupport
import Testing

/// `ba-sync upgrade-matrix` on three releases of the repository's sample assets, as a team runs it before a
/// release: the table, the JSON lines, and the HTML page in a real browser.
@Suite("ba-sync upgrade-matrix end to end", .serialized)
struct UpgradeMatrixEndToEndTests {
    let sync = builtProduct("ba-sync")

    /// Releases 1 to 3 of `Assets/`: 2 edits a level; 3 drops HighResTextures and edits the tutorial.
    func releases(_ scratch: Scratch) throws -> [String] {
        let sample = try scratch.copySampleAssets()
        var paths: [String] = []
        for number in 1...3 {
            let release = scratch.root.appending("release\(number)")
            try FileManager.default.copyItem(atPath: sample.string, toPath: release.string)
            paths.append(release.string)
        }
        try scratch.write("release2/Levels/World1/changed.json", #"{"release": 2}"#)
        try scratch.write("release3/Levels/World1/changed.json", #"{"release": 2}"#)
        try FileManager.default.removeItem(atPath: scratch.root.appending("release3/HighResTextures.json").string)
        try scratch.write("release3/Tutorial/release.txt", "release 3\n")
        return paths
    }

    @Test func threeReleasesOfTheSampleAssetsUpdateCleanly() async throws {
        let scratch = try Scratch()
        let paths = try releases(scratch)
        let text = try runTool(sync, ["upgrade-matrix"] + paths)
        #expect(text.status == 0, "\(text.stderr)")
        for row in ["first install → 3", "1 → 3", "2 → 3"] {
            #expect(text.stdout.contains(row), "\(text.stdout)")
        }
        #expect(text.stdout.contains("\n3 pairs over 3 releases, 0 failed, "), "\(text.stdout)")
        #expect(text.stderr.contains("release 3: Levels v2, Tutorial v2"), "\(text.stderr)")

        let page = scratch.root.appending("matrix.html").string
        let json = try runTool(sync, ["upgrade-matrix", "--json", "--all-pairs", "--html", page] + paths)
        #expect(json.status == 0, "\(json.stderr)")
        let lines = jsonLines(json.stdout)
        #expect(lines.filter { $0["event"] as? String == "pair" }.count == 6, "\(json.stdout)")
        let result = try #require(lines.last)
        #expect(result["event"] as? String == "result" && result["failures"] as? Int == 0, "\(json.stdout)")
        let oneToThree = try #require(lines.first { $0["from"] as? Int == 1 && $0["to"] as? Int == 3 })
        #expect((oneToThree["removed"] as? [String]) == ["HighResTextures"], "\(oneToThree)")
        let before = try #require(oneToThree["statusBefore"] as? [String: [String]])
        #expect(before["HighResTextures"]?.contains("obsolete") == true, "\(before)")
        #expect(before["Levels"]?.contains("outOfDate") == true, "\(before)")

        let bad = try runTool(sync, ["upgrade-matrix", scratch.root.appending("nothing").string])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(
            bad.stderr.contains(
                "nothing does not exist. Fix: give each release as an asset folder, a folder `ba-mock export` wrote, or a download manifest"
            ),
            "\(bad.stderr)"
        )

        guard WebDriver.unavailable == nil else { return }
        try await WebDriver.with { browser in
            try await browser.open("file://\(page)")
            let cells = try await browser.run(
                "return [...document.querySelectorAll('#grid td[data-pair]')].map(c => c.dataset.pair + ' ' + c.className)"
            )
            #expect(
                (cells as? [String]) == ["0-1 ok", "0-2 ok", "0-3 ok", "1-2 ok", "1-3 ok", "2-3 ok"],
                "\(String(describing: cells))"
            )
            let summary = try await browser.run("return document.getElementById('summary').innerText")
            #expect((summary as? String)?.hasPrefix("6 pairs over 3 releases, 0 failed") == true)
        }
    }
}
