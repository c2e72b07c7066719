import Foundation
import SystemPackage
import TestSupport
import Testing

/// `ba-sync bench --html` as a user runs it: the built binaries, a pack installed from the built mock.
@Suite("ba-sync bench --html end to end")
struct BenchHTMLEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    @Test func benchWritesOneSelfContainedPageWithTheEnvironmentAndAPanelPerCase() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let server = try RunningTool(mock, ["serve", folder.string, "--port", "0"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine())
        let appGroup = scratch.root.appending("AppGroup").string
        let ensured = try runTool(sync, ["ensure", "--server", url, "--app-group", appGroup, "Levels"])
        #expect(ensured.status == 0, "\(ensured.stderr)")

        let bench = ["bench", "--app-group", appGroup, "--pack", "Levels", "--iterations", "35", "--block", "4k"]
        let saved = try runTool(sync, bench + ["--json"])
        #expect(saved.status == 0, "\(saved.stderr)")
        let baseline = scratch.root.appending("base.json").string
        try Data(saved.stdout.utf8).write(to: URL(fileURLWithPath: baseline))

        let page = scratch.root.appending("out.html").string
        let run = try runTool(sync, bench + ["--baseline", baseline, "--tolerance", "1000", "--html", page])
        #expect(run.status == 0, "\(run.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<section id=\"environment\">"))
        let root = try parseMarkup(html)
        let environment = try #require(root.descendants("section").first { $0.attributes["id"] == "environment" })
        let names = environment.descendants("dt").map(\.text)
        for name in ["app group", "tool", "build", "kernel", "file system", "CPU", "seed", "length"] {
            #expect(names.contains(name), "\(names)")
        }
        #expect(environment.descendants("dd").map(\.text).contains(appGroup))

        // 3 methods × (sequential, random 4.0 KiB, first-byte) × cold and warm, and the lookup: 7 panels.
        let panels = root.descendants("svg").filter { $0.classes.contains("panel") }
        #expect(
            panels.map { "\($0.attributes["data-case"] ?? "") \($0.attributes["data-cache"] ?? "")" } == [
                "sequential cold", "sequential warm", "random 4.0 KiB cold", "random 4.0 KiB warm", "first-byte cold",
                "first-byte warm", "namespace lookup -",
            ]
        )
        for panel in panels {
            let lines = panel.descendants("polyline")
            // A new line and the baseline's per method, each from a measured distribution of 35 operations:
            // 0, 50, 75, 90 and 95%, then the slowest.
            #expect(lines.count == (panel.attributes["data-cache"] == "-" ? 2 : 6))
            for line in lines {
                #expect((line.attributes["points"] ?? "").split(separator: " ").count == 6, "\(line.attributes)")
            }
        }
        #expect(root.descendants("svg").filter { $0.classes.contains("bars") }.count == 2)
        #expect(root.descendants("section").contains { $0.attributes["id"] == "baseline" })
        #expect(!html.contains("<script") && !html.contains("<link"))

        // Against a baseline 1000 times as fast every case regressed: the command exits 1 and the page,
        // written all the same, marks every panel.
        var fast = try #require(try JSONSerialization.jsonObject(with: Data(saved.stdout.utf8)) as? [String: Any])
        fast["results"] = (fast["results"] as? [[String: Any]])?.map { result in
            result.merging(["seconds": (result["seconds"] as? Double ?? 1) / 1000]) { _, new in new }
        }
        try JSONSerialization.data(withJSONObject: fast).write(to: URL(fileURLWithPath: baseline))
        try FileManager.default.removeItem(atPath: page)
        let slower = try runTool(sync, bench + ["--baseline", baseline, "--html", page])
        #expect(slower.status == 1, "\(slower.stderr)")
        let marked = try parseMarkup(try String(contentsOfFile: page, encoding: .utf8))
        let markedPanels = marked.descendants("svg").filter { $0.classes.contains("panel") }
        #expect(markedPanels.count == 7)
        #expect(markedPanels.allSatisfy { $0.classes.contains("regressed") })

        // A page that cannot be written is refused before the run.
        let refused = try runTool(sync, bench + ["--html", "/nonexistent/folder/out.html"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("cannot write --html"))
    }
}
