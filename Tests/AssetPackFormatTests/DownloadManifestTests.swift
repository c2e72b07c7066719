import AssetPackFormat
import Foundation
import Testing

@Suite("Download manifests as a client receives them")
struct DownloadManifestTests {
    static func entry(
        id: String = "Pack",
        url: String = "http://127.0.0.1/assets/Pack",
        size: String = "10",
        sha: String = String(repeating: "a", count: 64)
    ) -> String {
        #"{"id": "\#(id)", "url": "\#(url)", "version": 1, "downloadSize": \#(size), "downloadPolicy": {"onDemand": {}}, "host": {"thirdParty": {}}, "sha256": "\#(sha)", "installSize": 10, "fileCount": 1, "compression": "zstd"}"#
    }

    func decode(_ text: String) throws -> DownloadManifest {
        try DownloadManifest.decode(Data(text.utf8), source: "http://127.0.0.1/manifest")
    }

    @Test func acceptsAValidManifest() throws {
        let manifest = try decode(#"{"assetPacks": [\#(Self.entry())]}"#)
        #expect(manifest.assetPacks.first?.id == "Pack")
    }

    /// Digests are compared as lower-case hex everywhere; a hand-written manifest in capitals (as some
    /// tools print them) must mean the same archive, not fail every digest check after the download.
    @Test func capitalDigestsAreReadAsLowerCase() throws {
        let upper = String(repeating: "AB", count: 32)
        var entry = Self.entry(sha: upper)
        entry.removeLast()
        entry +=
            #", "deltas": [{"fromVersion": 1, "fromSHA256": "\#(upper)", "url": "d", "downloadSize": 5, "sha256": "\#(upper)"}]}"#
        let pack = try #require(try decode(#"{"assetPacks": [\#(entry)]}"#).assetPacks.first)
        #expect(pack.sha256 == upper.lowercased())
        #expect(pack.deltas?.first?.sha256 == upper.lowercased())
        #expect(pack.deltas?.first?.fromSHA256 == upper.lowercased())
    }

    @Test func deltasThatAreNotSoundAreDroppedAndThePackStays() throws {
        let sha = String(repeating: "b", count: 64)
        func delta(from: Int = 1, base: String = sha, size: Int = 5, files: Int = 1) -> String {
            #"{"fromVersion": \#(from), "fromSHA256": "\#(base)", "url": "d", "downloadSize": \#(size), "sha256": "\#(sha)", "fileCount": \#(files)}"#
        }
        let deltas = [
            delta(files: 2), delta(files: -5), delta(from: 0), delta(size: -1), delta(base: "x"),
        ]
        var entry = Self.entry()
        entry.removeLast()
        entry += #", "deltas": [\#(deltas.joined(separator: ", "))]}"#
        let manifest = try decode(#"{"assetPacks": [\#(entry)]}"#)
        #expect(manifest.assetPacks.first?.deltas?.map(\.fileCount) == [2])
    }

    @Test(arguments: [
        (#"{"assetPacks": [\#(entry(id: "a/b"))]}"#, "contains '/'"),
        (#"{"assetPacks": [\#(entry(id: ".."))]}"#, "starts with '.'"),
        (#"{"assetPacks": [\#(entry(id: #"a\u0000b"#))]}"#, "control character"),
        (#"{"assetPacks": [\#(entry(id: #"a\u0007b"#))]}"#, "control character"),
        (#"{"assetPacks": [\#(entry(url: "file:///etc/passwd"))]}"#, "file: URL"),
        (#"{"assetPacks": [\#(entry(url: "ftp://x/y"))]}"#, "ftp: URL"),
        (#"{"assetPacks": [\#(entry(url: "http://127.0.0.1:99999/x"))]}"#, "port 99999, outside 1 to 65535"),
        (#"{"assetPacks": [\#(entry(url: "http:///x"))]}"#, "names no host"),
        (#"{"assetPacks": [\#(entry(size: "-1"))]}"#, "impossible size"),
        (#"{"assetPacks": [\#(entry(size: "9223372036854775807"))]}"#, "impossible size"),
        (#"{"assetPacks": [\#(entry(sha: "xyz"))]}"#, "64 hex digits"),
        (#"{"assetPacks": [\#(entry()), \#(entry())]}"#, "twice"),
        (#"{"assetPacks": [{"id": 5}]}"#, "is not a string"),
        (#"{"assetPacks": "#, "is not JSON"),
        ("[]", "is not an object"),
    ])
    func refusesHostileManifests(_ text: String, _ problem: String) {
        let error = #expect(throws: AssetPackFormatError.self) { try decode(text) }
        #expect(error?.message.contains(problem) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("http://127.0.0.1/manifest") == true)
    }

    /// A manifest ba-sync cannot read says where and what, in words, and how to look: never Foundation's
    /// `DecodingError.dataCorrupted(... Debug description: ...)`.
    @Test(arguments: [
        (#"{"assetPacks": [{"id": "#, "is not JSON (Unexpected end of file at line 1, column 24)"),
        ("[]", "its top level is not an object"),
        (#"{"assetPacks": [{"id": 5}]}"#, "assetPacks[0].id is not a string"),
        (#"{"packs": []}"#, #"has no "assetPacks""#),
        (#"{"assetPacks": [{"id": "P"}]}"#, #"assetPacks[0] has no ""#),
    ])
    func aManifestThatDoesNotDecodeSaysWhereAndHowToLook(_ text: String, _ problem: String) {
        let error = #expect(throws: AssetPackFormatError.self) { try decode(text) }
        let message = error?.message ?? ""
        #expect(message.contains("the download manifest at http://127.0.0.1/manifest \(problem)"), "\(message)")
        #expect(message.hasSuffix("Fix: look at what is served there (curl http://127.0.0.1/manifest)"), "\(message)")
        #expect(!message.contains("DecodingError") && !message.contains("Debug description"), "\(message)")
    }

    @Test func refusesThousandsOfPacksPastTheLimit() throws {
        let many = (0...DownloadManifest.maximumPackCount).map { Self.entry(id: "P\($0)") }
        let error = #expect(throws: AssetPackFormatError.self) {
            try decode(#"{"assetPacks": [\#(many.joined(separator: ","))]}"#)
        }
        #expect(error?.message.contains("more than the 10000 accepted") == true)
        let allowed = (0..<3000).map { Self.entry(id: "P\($0)") }
        #expect(try decode(#"{"assetPacks": [\#(allowed.joined(separator: ","))]}"#).assetPacks.count == 3000)
    }
}
