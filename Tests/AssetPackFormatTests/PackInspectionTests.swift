import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// `ba-mock inspect` as a library call, and the JSON it prints (part of the JSON contract).
@Suite("inspect as a library call")
struct PackInspectionTests {
    /// A pack of two files (one of them named as real content is) built from a manifest file, as `package`
    /// builds one, in `format`.
    func pack(_ scratch: Scratch, format: PackFormat, carryManifest: Bool = true) throws -> FilePath {
        try scratch.write("src/Levels/Über/日本語 🎮.json", #"{"level": 1}"#)
        try scratch.write("src/Levels/tiles.bin", Scratch.noise(10_000, seed: 4))
        let manifest = try scratch.write(
            "src/Levels.json",
            #"{"assetPackID": "Levels", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Levels"}], "platforms": ["iOS"]}"#
        )
        let archive = scratch.root.appending("out/Levels.\(format == .aar ? "aar" : "pack")")
        _ = try PackBuilder.build(
            manifest: manifest,
            root: scratch.root.appending("src"),
            to: archive,
            options: PackBuildOptions(format: format)
        )
        return archive
    }

    func object(_ inspection: PackInspection) throws -> [String: Any] {
        let data = try JSONOutput.data(inspection)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func aTarPackIsShownByItsIndex() throws {
        let scratch = try Scratch()
        let archive = try pack(scratch, format: .tar)
        let inspection = try PackArchiveReader.inspect(at: archive, verify: true)
        guard case .tar(let index, let verified) = inspection else {
            Issue.record("a tar pack was not inspected as one: \(inspection)")
            return
        }
        #expect(verified)
        #expect(index.files.map(\.path) == ["Levels/tiles.bin", "Levels/Über/日本語 🎮.json"])
        let json = try object(inspection)
        #expect(json["assetPackID"] as? String == "Levels")
        #expect((json["files"] as? [[String: Any]])?.count == 2)
        #expect(json["verified"] == nil)
    }

    @Test func anAppleArchiveIsShownEntryByEntryWithWhatWasVerified() throws {
        let scratch = try Scratch()
        let archive = try pack(scratch, format: .aar)
        var warnings: [String] = []
        let listed = try PackArchiveReader.inspect(at: archive, verify: false) { warnings.append($0) }
        let verified = try PackArchiveReader.inspect(at: archive, verify: true) { warnings.append($0) }
        #expect(warnings.isEmpty)
        guard case .appleArchive(let shown) = verified, case .appleArchive(let unverified) = listed else {
            Issue.record("an .aar was not inspected as one")
            return
        }
        #expect(shown.verifiedFiles == 2 && unverified.verifiedFiles == nil)
        #expect(shown.carriesManifest && shown.summary.assetPackID == "Levels")
        #expect(shown.files.map(\.path).sorted() == ["Contents/Levels/tiles.bin", "Contents/Levels/Über/日本語 🎮.json"])
        let json = try object(verified)
        #expect(Set(json.keys) == ["compression", "entries", "format", "manifest", "verified"])
        #expect(json["verified"] as? Bool == true)
        #expect(try object(listed)["verified"] as? Bool == false)
        #expect((json["manifest"] as? [String: Any])?["assetPackID"] as? String == "Levels")
    }
}
