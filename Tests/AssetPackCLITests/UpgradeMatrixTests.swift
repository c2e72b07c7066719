import AssetPackFormat
import AssetPackMatrix
import AssetPackServer
import Foundation
import SystemPackage
import TestSupport
import Testing

/// The upgrade matrix over three releases of the sample folder: a file edited, a pack dropped, a pack
/// renamed, a policy changed; and a release whose pack is damaged, which the matrix must catch.
@Suite("Upgrade matrix")
struct UpgradeMatrixTests {
    /// Three releases: 1 the sample (Tutorial essential, Levels prefetch; Textures is visionOS only);
    /// 2 a level edited; 3 Levels renamed Worlds and Tutorial made prefetch.
    func releases() throws -> [Scratch] {
        let first = try Scratch()
        try first.makeSampleFolder()
        let second = try Scratch()
        try second.makeSampleFolder()
        try second.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 4}"#)
        let third = try Scratch()
        try third.makeSampleFolder()
        try third.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 4}"#)
        let levels = try String(decoding: third.read(third.root.appending("Levels.json")), as: UTF8.self)
        try third.write(
            "Levels.json",
            levels.replacingOccurrences(of: #""assetPackID": "Levels""#, with: #""assetPackID": "Worlds""#)
        )
        let tutorial = try String(decoding: third.read(third.root.appending("Tutorial.json")), as: UTF8.self)
        try third.write(
            "Tutorial.json",
            tutorial.replacingOccurrences(of: #"{"essential": {"#, with: #"{"prefetch": {"#)
        )
        return [first, second, third]
    }

    @Test func everyOlderReleaseUpdatesToTheNewestAndIsChecked() async throws {
        let scratches = try releases()
        let html = scratches[0].root.appending("matrix.html")
        var request = UpgradeMatrix.Request(releases: scratches.map(\.root))
        request.htmlFile = html
        let report = try await UpgradeMatrix.run(request)
        #expect(
            report.releases.map(\.packs) == [
                ["Levels": 1, "Tutorial": 1], ["Levels": 2, "Tutorial": 1], ["Worlds": 1, "Tutorial": 2],
            ]
        )
        #expect(report.pairs.map { "\($0.from)>\($0.to)" } == ["0>3", "1>3", "2>3"])
        #expect(report.failures == 0, "\(report.pairs.flatMap(\.problems))")
        for pair in report.pairs {
            #expect(pair.installed == ["Worlds": 1, "Tutorial": 2], "\(pair)")
            #expect(pair.updates["Worlds"] == ["began", "downloading", "finished"], "\(pair)")
        }
        let fromFirst = report.pairs[1]
        #expect(fromFirst.statusBefore["Levels"] == ["obsolete", "downloaded"], "a pack renamed is obsolete")
        #expect(fromFirst.statusBefore["Tutorial"]?.contains("outOfDate") == true, "\(fromFirst.statusBefore)")
        #expect(fromFirst.statusBefore["Tutorial"]?.contains("updateAvailable") == true, "\(fromFirst.statusBefore)")
        #expect(fromFirst.removed == ["Levels"])
        #expect(fromFirst.bytesDownloaded > 0 && fromFirst.bytesDownloaded <= report.pairs[0].bytesDownloaded)
        // Asset folders are built as `ba-mock serve` publishes them by default, as Apple Archives: the first
        // install downloads release 3's packs in that format, byte for byte.
        let built = try ["Levels.json", "Tutorial.json"].map { manifest in
            try PackBuilder.build(
                manifest: scratches[2].root.appending(manifest),
                root: scratches[2].root,
                to: scratches[2].root.appending("built/\(manifest).aar"),
                options: PackBuildOptions(format: .aar)
            ).downloadSize
        }
        #expect(report.pairs[0].bytesDownloaded == built.reduce(0, +), "\(built)")
        let page = try parseMarkup(String(decoding: try scratches[0].read(html), as: UTF8.self))
        let cells = page.descendants("td").filter { $0.attributes["data-pair"] != nil }
        #expect(cells.map { $0.attributes["data-pair"] ?? "" } == ["0-3", "1-3", "2-3"])
        #expect(cells.allSatisfy { $0.attributes["class"] == "ok" })
    }

    @Test func deltasDownloadLessThanWholePacks() async throws {
        let scratches = try releases()
        var request = UpgradeMatrix.Request(releases: Array(scratches.prefix(2).map(\.root)))
        request.only = (from: 1, to: 2)
        let whole = try await UpgradeMatrix.run(request)
        request.deltaUpdates = true
        let delta = try await UpgradeMatrix.run(request)
        #expect(whole.failures == 0 && delta.failures == 0, "\(whole.pairs) \(delta.pairs)")
        #expect(
            delta.pairs[0].bytesDownloaded * 10 < whole.pairs[0].bytesDownloaded,
            "\(delta.pairs[0]) \(whole.pairs[0])"
        )
    }

    /// A release whose Levels archive is damaged (an export with one byte flipped): the pairs that download
    /// it fail, naming the pack and how to replay the pair; the others pass. The first release is given as
    /// a download manifest, the second as an export folder.
    @Test func aDamagedPackFailsThePairsThatNeedItAndSaysHowToReplay() async throws {
        let scratches = try releases()
        let exports = try Scratch()
        for (index, scratch) in scratches.prefix(2).enumerated() {
            // One folder exported twice, so that versions go on as a server's do.
            if index > 0 {
                try FileManager.default.removeItem(atPath: scratches[0].root.appending("Levels").string)
                try FileManager.default.copyItem(
                    atPath: scratch.root.appending("Levels").string,
                    toPath: scratches[0].root.appending("Levels").string
                )
            }
            _ = try await Exporter.export(
                Exporter.Options(folder: scratches[0].root, out: exports.root.appending("\(index + 1)"))
            ) { _ in }
        }
        let archive = exports.root.appending("2/assets/Levels")
        var bytes = try exports.read(archive)
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: archive.string))
        // Release 1 given as its download manifest under another name: its relative URLs resolve beside it.
        try FileManager.default.copyItem(
            atPath: exports.root.appending("1/manifest").string,
            toPath: exports.root.appending("1/catalog.json").string
        )
        var request = UpgradeMatrix.Request(
            releases: [exports.root.appending("1/catalog.json"), exports.root.appending("2")]
        )
        request.allPairs = true
        let report = try await UpgradeMatrix.run(request)
        #expect(report.pairs.map { "\($0.from)>\($0.to):\($0.ok)" } == ["0>1:true", "0>2:false", "1>2:false"])
        let failed = try #require(report.pairs.last)
        #expect(failed.problems.contains { $0.hasPrefix("Levels: ") && $0.contains("SHA-256") }, "\(failed.problems)")
        #expect(failed.problems.contains("Levels: version 1 installed, release 2 publishes 2"), "\(failed.problems)")
        #expect(failed.replay.hasSuffix("--only 1:2 --keep-app-groups ./matrix-app-groups"), "\(failed.replay)")
    }

    /// Two exports of the same packs from two separate states: release 2's Levels has new content under the
    /// same version 1, which a device holding version 1 never downloads. A new on-demand pack is a note.
    @Test func newContentUnderAnOldVersionFailsAndANewOnDemandPackIsANote() async throws {
        let scratches = try releases()
        try scratches[1].write("Bonus/bonus.txt", "bonus\n")
        try scratches[1].write(
            "Bonus.json",
            #"{"assetPackID": "Bonus", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Bonus"}], "platforms": ["iOS"]}"#
        )
        let exports = try Scratch()
        for (index, scratch) in scratches.prefix(2).enumerated() {
            _ = try await Exporter.export(
                Exporter.Options(folder: scratch.root, out: exports.root.appending("\(index + 1)"))
            ) { _ in }
        }
        var request = UpgradeMatrix.Request(releases: [exports.root.appending("1"), exports.root.appending("2")])
        request.only = (from: 1, to: 2)
        let pair = try #require(try await UpgradeMatrix.run(request).pairs.first)
        #expect(!pair.ok)
        #expect(
            pair.problems.contains {
                $0.hasPrefix("Levels: release 2 changed its content") && $0.contains("kept version 1")
            },
            "\(pair.problems)"
        )
        #expect(
            pair.notes == [
                "Bonus: new in release 2, and its download policy does not download it at an update: users who update "
                    + "get it when the app calls ensureLocalAvailability"
            ]
        )
    }
}
