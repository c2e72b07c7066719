import Foundation
import SystemPackage
import TestSupport
import Testing

/// Item 12 of the attack run: with 10 000 packs, `serve` built for 110 s before it listened, saved nothing
/// until the last, and a restart began again. It listens first now, serves each pack once built, saves as it
/// goes.
@Suite("ba-mock end to end: a folder that takes long to build", .serialized)
struct ManyPacksEndToEndTests {
    let tool = builtProduct("ba-mock")

    /// `Alpha` (one small file) and `Zulu` (a 2 GiB sparse file: reading and hashing it takes seconds, and
    /// it compresses to almost nothing), built in that order.
    func folder(_ scratch: Scratch) throws -> FilePath {
        try scratch.write("Assets/Alpha/a.txt", "first")
        let huge = try scratch.write("Assets/Zulu/huge.bin", Data())
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: huge.string))
        try handle.truncate(atOffset: 2 << 30)
        try handle.close()
        for id in ["Alpha", "Zulu"] {
            try scratch.write(
                "Assets/\(id).json",
                #"{"assetPackID": "\#(id)", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "\#(id)"}], "platforms": ["iOS"]}"#
            )
        }
        return scratch.root.appending("Assets")
    }

    /// Waits for a line on the server's stderr that starts with `prefix`, and returns it.
    func line(_ server: RunningTool, startingWith prefix: String, timeout: Double = 60) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = server.stderr.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line)
            }
            usleep(20_000)
        }
        return nil
    }

    func get(_ url: String) throws -> (status: Int, retryAfter: String?, body: String) {
        let result = try runTool(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-s", "-D", "-", "--max-time", "10", url]
        )
        let text = result.stdout
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let retryAfter = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("retry-after:") }
            .map { $0.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" }
        return (status, retryAfter, text)
    }

    /// A restart over packs built before listens as a first start does, before it looks at the folder again:
    /// it said nothing until it had scanned and fingerprinted every pack (65 s at 10 000 packs), so a user
    /// waited on a silent terminal and scripts on a port nobody knew. The URL on stdout still comes once the
    /// folder is checked, as scripts expect.
    @Test func aRestartOverManyBuiltPacksListensBeforeItLooksAtThemAgain() throws {
        let scratch = try Scratch()
        for number in 0..<150 {
            let id = "P\(number)"
            try scratch.write("Assets/\(id)/a.txt", "pack \(number)")
            try scratch.write(
                "Assets/\(id).json",
                #"{"assetPackID": "\#(id)", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "\#(id)"}], "platforms": ["iOS"]}"#
            )
        }
        let assets = scratch.root.appending("Assets")
        let first = try RunningTool(tool, ["serve", assets.string, "--port", "0", "--watch-interval", "0"])
        #expect(first.waitForFirstLine(timeout: 600) != nil, "stderr: \(first.stderr)")
        #expect(first.interrupt() == 0)

        let again = try RunningTool(tool, ["serve", assets.string, "--port", "0", "--watch-interval", "0"])
        defer { again.interrupt() }
        let listening = try #require(line(again, startingWith: "listening at ", timeout: 600), "\(again.stderr)")
        let stdoutThen = again.stdout
        let url = try #require(listening.split(separator: " ").dropFirst(2).first?.dropLast())
        #expect(listening.contains("150 packs built before"), "\(listening)")
        #expect(!stdoutThen.contains(String(url)), "the URL came on stdout before the listening line: \(stdoutThen)")
        // Served from what was built before while the folder is looked at again.
        #expect(try get("\(url)/assets/P7").status == 200)
        #expect(again.waitForFirstLine(timeout: 600) == String(url))
        #expect(!again.stderr.contains("building P"), "nothing is built again: \(again.stderr)")
    }

    @Test func itListensFirstServesEachPackOnceBuiltAndARestartKeepsWhatWasBuilt() throws {
        let scratch = try Scratch()
        let assets = try folder(scratch)
        let server = try RunningTool(tool, ["serve", assets.string, "--port", "0", "--watch-interval", "0"])
        defer { server.interrupt(signal: SIGKILL) }
        let listening = try #require(line(server, startingWith: "listening at "), "stderr: \(server.stderr)")
        let url = try #require(listening.split(separator: " ").dropFirst(2).first?.dropLast())
        #expect(listening.contains("building 2 packs"), "\(listening)")

        // Alpha is served once built, while Zulu is still being built: 503 with Retry-After, not 404.
        let deadline = Date().addingTimeInterval(60)
        var alpha = 0
        while alpha != 200 && Date() < deadline {
            alpha = try get("\(url)/assets/Alpha").status
            usleep(20_000)
        }
        #expect(alpha == 200)
        let zulu = try get("\(url)/assets/Zulu")
        #expect(zulu.status == 503, "\(zulu.body)")
        #expect(zulu.retryAfter == "1")
        #expect(zulu.body.contains("packBuilding"))
        // The manifest waits for every pack: one that listed Alpha alone would tell a client Zulu is gone (an
        // attack run found check-updates removing installed packs as obsolete).
        let manifest = try get("\(url)/manifest")
        #expect(manifest.status == 503, "\(manifest.body)")
        #expect(manifest.retryAfter == "1")
        #expect(manifest.body.contains("1 of 2 are"), "\(manifest.body)")
        // The URL comes on stdout once every pack is built, as before: scripts that wait for it get them all.
        #expect(!server.stdout.contains(String(url)))

        // Killed now, a restart does not build Alpha again: it was saved once built.
        server.interrupt(signal: SIGKILL)
        let again = try RunningTool(tool, ["serve", assets.string, "--port", "0", "--watch-interval", "0"])
        defer { again.interrupt() }
        let first = try #require(again.waitForFirstLine(timeout: 120), "stderr: \(again.stderr)")
        #expect(first.hasPrefix("http://127.0.0.1:"))
        #expect(!again.stderr.contains("building Alpha"), "\(again.stderr)")
        #expect(again.stderr.contains("building Zulu"), "\(again.stderr)")
        #expect(try get("\(first)/assets/Zulu").status == 200)
    }
}
