import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("Real content: Unicode names, escapes, hostile sizes")
struct RealContentTests {
    static let nfc = "\u{E9}"  // é as one scalar
    static let nfd = "e\u{301}"  // é as e + combining acute

    func manifest(_ selectors: String, id: String = "Pack") throws -> ParsedManifest {
        let text = """
            {"assetPackID": "\(id)", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [\(selectors)],
             "platforms": ["iOS"]}
            """
        return try PackagingManifest.parse(Array(text.utf8), file: "\(id).json")
    }

    /// The names in a folder as bytes, recursively, sorted.
    func namesOnDisk(_ root: FilePath) throws -> [[UInt8]] {
        let enumerator = FileManager.default.enumerator(atPath: root.string)
        var names: [[UInt8]] = []
        while let name = enumerator?.nextObject() as? String {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: root.appending(name).string, isDirectory: &isFolder)
            if !isFolder.boolValue { names.append(Array(name.utf8)) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test func nonASCIINamesPackAndExtractByteExact() throws {
        let scratch = try Scratch()
        let names = [
            "Über/b.txt", "日本語 🎮/c.json", "Strings/\(Self.nfc).txt", "Strings/\(Self.nfd).txt", "Strings/ß space.txt",
            // Folders whose names differ only in normalization: each file lands in its own.
            "Caf\(Self.nfc)/a.txt", "Caf\(Self.nfd)/b.txt",
        ]
        for (index, name) in names.enumerated() { try scratch.write("Assets/\(name)", "file \(index)") }
        let root = scratch.root.appending("Assets")
        let source = try PackSource.resolve(
            try manifest(
                #"{"directory": "Über"}, {"directory": "日本語 🎮"}, {"directory": "Strings"}, "#
                    + #"{"directory": "Caf\#(Self.nfc)"}, {"directory": "Caf\#(Self.nfd)"}"#
            ),
            root: root
        )
        // Both spellings of é are kept apart, as the file system keeps them, and the user is told.
        #expect(source.files.count == 7)
        #expect(source.warnings.contains { $0.contains("differ only in Unicode normalization") })

        let pack = scratch.root.appending("Pack.pack")
        _ = try PackBuilder.build(source, to: pack)
        #expect(try ArchiveFixture.entryNames(pack).contains("Contents/Über/b.txt"))
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let index = try PackArchiveReader.extract(pack, into: destination)
        let expected = names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(index.files.map { Array($0.path.utf8) } == expected)
        #expect(try namesOnDisk(destination) == expected)
        for (index, name) in names.enumerated() {
            #expect(try scratch.read(destination.appending(name)) == Data("file \(index)".utf8), "\(name)")
        }
    }

    @Test func anEntryWhoseNameIsNotTheIndexsBytesIsRefused() throws {
        let scratch = try Scratch()
        let data = Data("accent".utf8)
        let archive = scratch.root.appending("twin.pack")
        // The entry is NFD, the index says NFC: Swift finds them equal, the file system does not.
        try ArchiveFixture.write(
            [
                .init("Contents/\(Self.nfd).txt", .file(data)),
                .init("Index.json", .file(ArchiveFixture.index([("\(Self.nfc).txt", data)]))),
            ],
            to: archive
        )
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extract(archive, into: destination)
        }
        #expect(error?.code == .corruptPack)
        #expect(error?.message.contains("lacks") == true, "\(error?.message ?? "")")
    }

    @Test func aSymlinkedParentFolderCannotReachOutside() throws {
        let scratch = try Scratch()
        let outside = try Scratch()
        try outside.write("shadow", "root:secret")
        try scratch.write("Assets/Levels/ok.json", "{}")
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("Assets/etcdir").string,
            withDestinationPath: outside.root.string
        )
        let root = scratch.root.appending("Assets")
        for selector in [#"{"file": "etcdir/shadow"}"#, #"{"directory": "etcdir"}"#] {
            let error = #expect(throws: AssetPackFormatError.self) {
                try PackSource.resolve(try manifest(selector), root: root)
            }
            #expect(error?.code == .unsafePath, "\(selector): \(error?.message ?? "")")
            #expect(error?.message.contains("outside the asset folder") == true, "\(error?.message ?? "")")
        }
    }

    @Test func dotDotBehindACombiningMarkIsRefused() throws {
        // "/\u{301}" is one Character to Swift but "/" and a mark to the file system.
        let error = #expect(throws: AssetPackFormatError.self) {
            try manifest(#"{"file": "../\u0301sib/secret"}"#)
        }
        #expect(error?.code == .unsafePath)
        #expect(error?.message.contains("climbs out") == true, "\(error?.message ?? "")")
        #expect(PackPath.normalize("a/../\u{301}b") == nil)
        #expect(PackPath.normalize("Contents/\u{301}x") == "Contents/\u{301}x")
    }

    /// Paths already normal take a one-pass shortcut (every read's path does); both ways must agree.
    @Test func normalizingAgreesOnEveryShape() {
        for kept in ["a", "a/b", "...", "a/...", ".a", "a./b", "..a", "a/..b", "Über/日本語 🎮.json", "e\u{301}/x"] {
            #expect(PackPath.normalize(kept) == kept, "\(kept)")
        }
        for (given, expected) in [("a//b", "a/b"), ("./a", "a"), ("a/.", "a"), ("a/", "a"), ("a/./b/", "a/b")] {
            #expect(PackPath.normalize(given) == expected, "\(given)")
        }
        for refused in ["", ".", "/a", "a/..", "..", "../a", "a\\b", "a\u{0}b", "//", "./"] {
            #expect(PackPath.normalize(refused) == nil, "\(refused)")
        }
    }

    @Test func aFolderSwappedForASymlinkAfterListingIsNotPacked() throws {
        let scratch = try Scratch()
        let outside = try Scratch()
        try outside.write("level.json", "secret")
        try scratch.write("Assets/Levels/level.json", "public")
        let root = scratch.root.appending("Assets")
        let source = try PackSource.resolve(try manifest(#"{"directory": "Levels"}"#), root: root)
        // Between the check and the packing, the folder becomes a link to another one with the same names.
        try FileManager.default.moveItem(
            atPath: root.appending("Levels").string,
            toPath: root.appending("Levels.old").string
        )
        try FileManager.default.createSymbolicLink(
            atPath: root.appending("Levels").string,
            withDestinationPath: outside.root.string
        )
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackBuilder.build(source, to: scratch.root.appending("Pack.pack"))
        }
        #expect(error?.code == .unsafePath, "\(error?.message ?? "")")
        #expect(
            error?.message
                == "\(root)/Levels/level.json now leads to \(outside.root)/level.json (a folder on its way was "
                + "replaced by a symlink after the listing); refused. Fix: pack again"
        )
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("Pack.pack").string))
    }

    /// A folder moved after the listing and linked back leads to the very files listed: they are packed, byte
    /// for byte (the device and inode checked on each open say so; the path it was opened by no longer matters).
    @Test func aFolderMovedAndLinkedBackAfterListingPacksTheListedFiles() throws {
        let scratch = try Scratch()
        try scratch.write("Assets/Levels/level.json", "public")
        let root = scratch.root.appending("Assets")
        let source = try PackSource.resolve(try manifest(#"{"directory": "Levels"}"#), root: root)
        try FileManager.default.moveItem(
            atPath: root.appending("Levels").string,
            toPath: scratch.root.appending("moved").string
        )
        try FileManager.default.createSymbolicLink(
            atPath: root.appending("Levels").string,
            withDestinationPath: scratch.root.appending("moved").string
        )
        _ = try PackBuilder.build(source, to: scratch.root.appending("Pack.pack"))
        let out = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: out.string, withIntermediateDirectories: true)
        _ = try PackArchiveReader.extract(scratch.root.appending("Pack.pack"), into: out)
        #expect(try scratch.read(out.appending("Levels/level.json")) == Data("public".utf8))
    }

    /// A pax name without `hdrcharset=BINARY` is one libarchive converts, and in a UTF-8 locale it normalizes
    /// it to NFC: an NFD entry then matched an NFC row of the index and installed under a name the archive
    /// does not hold. Names are read as the bytes stored, so the two differ and the pack is refused.
    @Test(arguments: [(entry: nfd, row: nfc), (entry: nfc, row: nfd)])
    func anEntryNamedOtherwiseThanItsIndexRowIsRefused(entry: String, row: String) throws {
        let scratch = try Scratch()
        let data = Data("fine".utf8)
        let tar = ArchiveFixture.rawTar([
            ("Contents/x.txt", ["path": "Contents/caf\(entry).txt"], data),
            ("Index.json", [:], ArchiveFixture.index([("caf\(row).txt", data)])),
        ])
        let archive = try scratch.write("nfd.tar", tar)
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extract(archive, into: destination, limit: 1000)
        }
        #expect(error?.code == .corruptPack, "\(error?.description ?? "")")
        // The same archive with names that agree byte for byte installs, under the entry's own bytes.
        let agreeing = ArchiveFixture.rawTar([
            ("Contents/x.txt", ["path": "Contents/caf\(entry).txt"], data),
            ("Index.json", [:], ArchiveFixture.index([("caf\(entry).txt", data)])),
        ])
        let good = scratch.root.appending("good")
        try FileManager.default.createDirectory(atPath: good.string, withIntermediateDirectories: true)
        _ = try PackArchiveReader.extract(try scratch.write("agree.tar", agreeing), into: good, limit: 1000)
        #expect(try namesOnDisk(good) == [Array("caf\(entry).txt".utf8)])
    }

    @Test func aHostileSizeIsRefusedWithoutATrap() throws {
        let scratch = try Scratch()
        let data = Data("fine".utf8)
        // A pax size record near Int64.max after a first file: adding it to the bytes written so far would
        // overflow.
        let tar = ArchiveFixture.rawTar([
            ("Contents/a.txt", [:], data),
            ("Contents/b.bin", ["size": "9223372036854775000"], Data()),
            ("Index.json", [:], ArchiveFixture.index([("a.txt", data)])),
        ])
        let archive = try scratch.write("hostile.tar", tar)
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extract(archive, into: destination, limit: 1000)
        }
        #expect(error?.code == .corruptPack, "\(error?.description ?? "")")
    }

    @Test func aBackslashInANameIsRefusedWhenPacking() throws {
        let scratch = try Scratch()
        try scratch.write("Assets/Weird/back\\slash.txt", "x")
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackSource.resolve(try manifest(#"{"directory": "Weird"}"#), root: scratch.root.appending("Assets"))
        }
        #expect(error?.code == .unsafePath)
        #expect(error?.message.contains("has a backslash in its name") == true, "\(error?.message ?? "")")
    }

    @Test func anIndexFarLargerThanItsFilesNeedIsRefused() throws {
        let scratch = try Scratch()
        let data = Data("x".utf8)
        // One file, and an index padded to 4 MiB: more than one file's row can take.
        var index = ArchiveFixture.index([("a.txt", data)])
        index.removeLast()
        index += Data(#","padding":""#.utf8) + Data(repeating: UInt8(ascii: "p"), count: 4 << 20) + Data(#""}"#.utf8)
        let archive = scratch.root.appending("bomb.pack")
        try ArchiveFixture.write(
            [.init("Contents/a.txt", .file(data)), .init("Index.json", .file(index))],
            to: archive
        )
        let error = #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.verify(at: archive) }
        #expect(error?.code == .corruptPack)
        #expect(error?.message.contains("the most its files can need") == true, "\(error?.message ?? "")")
    }
}
