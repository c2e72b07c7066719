import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// The built tools on content as localized games have it: names in every script, both Unicode spellings of
/// one letter, spaces and emoji.
@Suite("Real content end to end", .serialized)
struct RealContentEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")
    static let names = [
        "Strings/Über/b.txt", "Strings/日本語 🎮/c.json", "Strings/\u{E9}.txt", "Strings/e\u{301}.txt",
        "Strings/ß space.txt",
    ]

    func ba(_ tool: URL, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runTool(tool, arguments)
    }

    /// The bytes `ba-sync cat` writes for `path`.
    func cat(_ path: String, appGroup: FilePath) throws -> (Int32, Data) {
        let process = Process()
        process.executableURL = sync
        process.arguments = ["cat", "--app-group", appGroup.string, path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, data)
    }

    @Test func unicodeNamesTravelByteExactFromTheFolderToCat() throws {
        let scratch = try Scratch()
        for (index, name) in Self.names.enumerated() { try scratch.write("Assets/\(name)", "file \(index)\n") }
        try scratch.write(
            "Assets/Strings.json",
            #"{"assetPackID": "Strings", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Strings"}], "platforms": ["iOS"]}"#
        )
        let folder = scratch.root.appending("Assets")
        let server = try RunningTool(mock, ["serve", folder.string, "--port", "0", "--watch-interval", "0.2"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "no URL; stderr: \(server.stderr)")
        #expect(server.stderr.contains("differ only in Unicode normalization"), "\(server.stderr)")
        let appGroup = scratch.root.appending("AppGroup")
        let base = ["--server", url, "--app-group", appGroup.string]

        let ensure = try ba(sync, ["ensure", "Strings"] + base)
        #expect(ensure.status == 0, "\(ensure.stderr)")
        for (index, name) in Self.names.enumerated() {
            let (status, data) = try cat(name, appGroup: appGroup)
            #expect(status == 0 && data == Data("file \(index)\n".utf8), "\(name)")
        }
        let verify = try ba(sync, ["verify", "--app-group", appGroup.string])
        #expect(verify.status == 0 && verify.stdout.contains("verified 5 files"), "\(verify.stdout)\(verify.stderr)")

        // A name that appears while serving is packed too, and the update installs it.
        try scratch.write("Assets/Strings/Straße/🎮 level.json", "new\n")
        var updated = false
        for _ in 0..<100 where !updated {
            usleep(100_000)
            updated = server.stderr.contains("updated Strings: version 1 -> 2")
        }
        #expect(updated, "\(server.stderr)")
        let latest = try ba(sync, ["ensure", "Strings", "--latest"] + base)
        #expect(latest.status == 0, "\(latest.stderr)")
        let (status, data) = try cat("Strings/Straße/🎮 level.json", appGroup: appGroup)
        #expect(status == 0 && data == Data("new\n".utf8))

        // export writes the same packs, names included (as a tar, whose entry names libarchive lists).
        let out = scratch.root.appending("export")
        let exported = try ba(mock, ["export", folder.string, "--out", out.string, "--format", "tar"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let names = try ArchiveFixture.entryNames(out.appending("assets/Strings")).map { Array($0.utf8) }
        for name in Self.names {  // as bytes: String's == would take either spelling of é for the other
            #expect(names.contains(Array("Contents/\(name)".utf8)), "\(name)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.appending(".ba-mock/packs").string)
        #expect(!leftovers.contains { $0.contains(".tmp-") || $0.hasSuffix(".building") }, "\(leftovers)")
    }
}
