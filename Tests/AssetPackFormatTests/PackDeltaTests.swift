import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("Delta archives")
struct PackDeltaTests {
    /// Builds a pack of the folder as it is now (by default the sample folder's Levels).
    func build(_ scratch: Scratch, _ name: String, manifest: String = "Levels.json") throws
        -> (archive: FilePath, index: PackIndex)
    {
        let parsed = try PackagingManifest.load(from: scratch.root.appending(manifest))
        let archive = scratch.root.appending("\(name).pack")
        let (_, index) = try PackBuilder.buildIndexed(try PackSource.resolve(parsed, root: scratch.root), to: archive)
        return (archive, index)
    }

    /// The delta from `base` to `target` (whose archive is `full`), written to `output`.
    func buildDelta(
        _ full: FilePath,
        from base: PackIndex,
        to target: PackIndex,
        _ binding: PackDelta.Binding,
        output: FilePath
    ) throws -> BuiltPack {
        try PackDelta.build(
            full: full,
            target: target,
            base: base,
            binding: binding,
            to: output,
            options: PackBuildOptions()
        )
    }

    /// Extracts a delta from `base` (whose files are in `baseFolder`) to `target` into `folder`, expecting
    /// `binding`.
    func extractDelta(
        _ delta: FilePath,
        into folder: FilePath,
        from base: PackIndex,
        to target: PackIndex,
        expecting binding: PackDelta.Binding,
        baseFolder: FilePath? = nil
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        try PackArchiveReader.extractDelta(
            delta,
            into: folder,
            limit: target.installSize,
            expecting: binding,
            base: PackDelta.Base(index: base) { path in
                guard let baseFolder else { throw Errno.noSuchFileOrDirectory }
                let top = try FileDescriptor.openFolder(baseFolder)
                defer { try? top.close() }
                return try top.openFolder(path, creating: false)
            }
        )
    }

    @Test func aDeltaCarriesWhatChangedAndTheBaseGivesTheRest() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Levels/World2/über 🎮.json", "kept across versions")
        let (_, v1) = try build(scratch, "v1")
        // One file changed, one added, one removed; the rest kept.
        try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 7}"#)
        try scratch.write("Levels/World3/level1.json", #"{"name": "3-1"}"#)
        try FileManager.default.removeItem(atPath: scratch.root.appending("Levels/World2/level1.json").string)
        let (full, v2) = try build(scratch, "v2")

        let plan = PackDelta.plan(from: v1, to: v2)
        #expect(plan.carried.map(\.path) == ["Levels/World1/level1.json", "Levels/World3/level1.json"])
        #expect(plan.kept.map(\.path) == ["Levels/World1/deep/nested/tiles.bin", "Levels/World2/über 🎮.json"])
        #expect(plan.removed == ["Levels/World2/level1.json"])

        let delta = scratch.root.appending("v1-v2.delta")
        let binding = PackDelta.Binding(assetPackID: "Levels", fromSHA256: "1111", toSHA256: "2222")
        let built = try buildDelta(full, from: v1, to: v2, binding, output: delta)
        #expect(built.downloadSize < 2_000)  // the 30 KB of tiles stay home
        #expect(built.sha256 == FileDigest.sha256(of: try scratch.read(delta)))
        // Reproducible: the same inputs give the same bytes.
        let again = scratch.root.appending("again.delta")
        #expect(
            try buildDelta(full, from: v1, to: v2, binding, output: again) == built
        )

        // A delta is not a whole pack: a full extraction refuses it; a delta extraction says what is absent.
        let staging = scratch.root.appending("staging")
        try FileManager.default.createDirectory(atPath: staging.string, withIntermediateDirectories: true)
        #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.extract(delta, into: staging) }
        let fresh = scratch.root.appending("fresh")
        try FileManager.default.createDirectory(atPath: fresh.string, withIntermediateDirectories: true)
        // A delta names its base and its target: one offered for another version is refused before a file is
        // written (a manifest that points one version's entry at another's delta).
        for wrong in [
            PackDelta.Binding(assetPackID: "Levels", fromSHA256: "1111", toSHA256: "3333"),
            PackDelta.Binding(assetPackID: "Levels", fromSHA256: "0000", toSHA256: "2222"),
            PackDelta.Binding(assetPackID: "Tutorial", fromSHA256: "1111", toSHA256: "2222"),
        ] {
            let error = #expect(throws: AssetPackFormatError.self) {
                try extractDelta(delta, into: fresh, from: v1, to: v2, expecting: wrong)
            }
            #expect(error?.code == .corruptPack)
            #expect(error?.message.contains("is a delta from") == true)
            #expect(try FileManager.default.contentsOfDirectory(atPath: fresh.string).isEmpty)
        }
        let (index, absent) = try extractDelta(delta, into: fresh, from: v1, to: v2, expecting: binding)
        #expect(index == v2)
        #expect(absent.map(\.path) == plan.kept.map(\.path))
        #expect(try scratch.read(fresh.appending("Levels/World3/level1.json")) == Data(#"{"name": "3-1"}"#.utf8))
        #expect(!FileManager.default.fileExists(atPath: fresh.appending("Levels/World1/deep/nested/tiles.bin").string))
    }

    @Test func aDeltaOfAPackOfManyFilesCarriesAnIndexLargerThanItsFiles() throws {
        // The index lists every file of the new version; the delta holds a few: the bound on the index's
        // size cannot come from the delta's entries alone (1 200 files: an index of about 170 KB).
        let scratch = try Scratch()
        for number in 0..<1_200 {
            try scratch.write("many/folder \(number % 10)/a rather long file name \(number).txt", "\(number)")
        }
        try scratch.write(
            "many.json",
            #"{"assetPackID": "many", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "many"}], "platforms": ["iOS"]}"#
        )
        let (_, v1) = try build(scratch, "v1", manifest: "many.json")
        try scratch.write("many/folder 0/a rather long file name 0.txt", "changed")
        let (full, v2) = try build(scratch, "v2", manifest: "many.json")
        let delta = scratch.root.appending("many.delta")
        let binding = PackDelta.Binding(assetPackID: "many", fromSHA256: "1", toSHA256: "2")
        _ = try buildDelta(full, from: v1, to: v2, binding, output: delta)
        let fresh = scratch.root.appending("fresh")
        try FileManager.default.createDirectory(atPath: fresh.string, withIntermediateDirectories: true)
        let (index, absent) = try extractDelta(delta, into: fresh, from: v1, to: v2, expecting: binding)
        #expect(index == v2)
        #expect(absent.count == 1_199)
    }

    @Test func copyingABaseFileHashesWhatItCopies() throws {
        let scratch = try Scratch()
        let source = try scratch.write("a/Über.bin", Scratch.noise(3 << 20, seed: 5))
        let target = scratch.root.appending("b.bin")
        let copied = try FileDigest.copy(source, to: target)
        #expect(copied.size == 3 << 20)
        #expect(copied.sha256 == FileDigest.sha256(of: try scratch.read(source)))
        #expect(try scratch.read(target) == scratch.read(source))
        // Never over an existing file, never through a symlink.
        #expect(throws: AssetPackFormatError.self) { try FileDigest.copy(source, to: target) }
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("link").string,
            withDestinationPath: source.string
        )
        #expect(throws: AssetPackFormatError.self) {
            try FileDigest.copy(scratch.root.appending("link"), to: scratch.root.appending("c.bin"))
        }
    }

    @Test func linkingABaseFileHashesWhatTheLinkHolds() throws {
        let scratch = try Scratch()
        let source = try scratch.write("a/日本語 🎮.bin", Scratch.noise(3 << 20, seed: 6))
        let target = scratch.root.appending("b.bin")
        let linked = try FileDigest.link(source, to: target)
        #expect(linked.size == 3 << 20)
        #expect(linked.sha256 == FileDigest.sha256(of: try scratch.read(source)))
        let attributes = try FileManager.default.attributesOfItem(atPath: target.string)
        #expect(attributes[.referenceCount] as? Int == 2)  // the same bytes, not written again
        // Never over an existing file; a symlink is linked as itself and then refused, never followed.
        #expect(throws: AssetPackFormatError.self) { try FileDigest.link(source, to: target) }
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("link").string,
            withDestinationPath: source.string
        )
        #expect(throws: AssetPackFormatError.self) {
            try FileDigest.link(scratch.root.appending("link"), to: scratch.root.appending("c.bin"))
        }
        try FileManager.default.createDirectory(
            atPath: scratch.root.appending("folder").string,
            withIntermediateDirectories: true
        )
        #expect(throws: AssetPackFormatError.self) {
            try FileDigest.link(scratch.root.appending("folder"), to: scratch.root.appending("d.bin"))
        }
    }
}

extension PackDelta.Binding {
    /// A delta of pack `Hostile` between two made-up archive digests, for deltas built by hand.
    static let hostile = PackDelta.Binding(
        assetPackID: "Hostile",
        fromSHA256: String(repeating: "a", count: 64),
        toSHA256: String(repeating: "b", count: 64)
    )

    /// Its `Delta.json` entry, as a delta holds it.
    var entryBytes: Data {
        Data(#"{"assetPackID":"\#(assetPackID)","fromSHA256":"\#(fromSHA256)","toSHA256":"\#(toSHA256)"}"#.utf8)
    }
}

/// Index rows a peer sends are paths like any entry's: a delta's rows for the files it leaves with the base
/// are never seen as entries, so they are checked on their own.
@Suite("Delta archives: hostile index rows")
struct PackDeltaHostileRowTests {
    @Test(arguments: [
        "../1-installed/b.txt", "a/../../victim/keep.txt", "/etc/passwd", "./a.txt", "a//b.txt", "a/./b.txt",
        "a\\b.txt", "a/", "",
    ])
    func aRowThatLeavesThePackIsRefused(_ row: String) throws {
        let scratch = try Scratch()
        let data = Data("keep".utf8)
        let escaped = row.replacingOccurrences(of: "\\", with: "\\\\")
        let tar = ArchiveFixture.rawTar([
            ("Delta.json", [:], PackDelta.Binding.hostile.entryBytes),
            ("Index.json", [:], ArchiveFixture.index([("fine.txt", data), (escaped, data)])),
        ])
        let delta = try scratch.write("hostile.delta", tar)
        let folder = scratch.root.appending("staging")
        try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extractDelta(
                delta,
                into: folder,
                limit: 8,
                expecting: .hostile,
                baseFileCount: 2
            )
        }
        #expect(error?.code == .corruptPack, "\(error?.description ?? "")")
        #expect(error?.message.contains("a path no pack may hold") == true, "\(error?.message ?? "")")
        #expect(error?.isRuleViolation == true)  // the same bytes would break it again: not fetched again
    }

    /// A delta's entries must all be rows of its index, before the index: an entry after `Index.json`, or one
    /// the index does not list, was installed (found by an attack run on the fix above).
    @Test(arguments: [true, false])
    func aDeltaEntryTheIndexDoesNotListIsRefused(afterTheIndex: Bool) throws {
        let scratch = try Scratch()
        let data = Data("fine".utf8)
        let binding = PackDelta.Binding.hostile
        let index = ("Index.json", [String: String](), ArchiveFixture.index([("a.txt", data), ("kept.txt", data)]))
        let late = ("Contents/late.txt", [String: String](), data)
        let entries =
            [("Delta.json", [:], binding.entryBytes), ("Contents/a.txt", [:], data)]
            + (afterTheIndex ? [index, late] : [late, index])
        let delta = try scratch.write("late.delta", ArchiveFixture.rawTar(entries))
        let folder = scratch.root.appending("staging")
        try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extractDelta(delta, into: folder, limit: 100, expecting: binding, baseFileCount: 1)
        }
        #expect(error?.code == .corruptPack)
        let said = afterTheIndex ? "after Index.json, which comes last" : "which its index does not list"
        #expect(error?.message.contains(said) == true, "\(error?.message ?? "")")
    }
}
