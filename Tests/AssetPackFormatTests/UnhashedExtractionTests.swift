import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// An install whose archive digest the client checks extracts without hashing the files
/// (`hashingFiles: false`): the same files, the same index and the same refusals as the plain extraction,
/// except the one check that digest makes instead (a file whose bytes differ from its row at the same size).
@Suite("Extraction without hashing the files")
struct UnhashedExtractionTests {
    /// Extracts `bytes` as a download in 1000-byte blocks into a new folder `name`, keeping the index copy
    /// beside it; returns the index and the folder.
    static func stream(
        _ bytes: Data,
        _ scratch: Scratch,
        _ name: String,
        hashingFiles: Bool,
        limit: Int64? = nil
    ) throws -> (PackIndex, FilePath) {
        let destination = scratch.root.appending(name)
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        var offset = 0
        let held = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 1)
        defer { held.deallocate() }
        let index = try PackArchiveReader.extract(
            streamNamed: "download",
            into: destination,
            limit: limit,
            indexCopy: FilePath(destination.string + ".index.json"),
            hashingFiles: hashingFiles
        ) {
            let count = min(held.count, bytes.count - offset)
            held.copyBytes(from: bytes[offset..<offset + count])
            offset += count
            return UnsafeRawBufferPointer(rebasing: held[0..<count])
        }
        return (index, destination)
    }

    /// Every file under `folder`, by its path below it.
    static func files(_ folder: FilePath) throws -> [String: Data] {
        var found: [String: Data] = [:]
        let walker = FileManager.default.enumerator(atPath: folder.string)
        while let path = walker?.nextObject() as? String {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: folder.appending(path).string, isDirectory: &isFolder)
            if !isFolder.boolValue {
                found[path] = try Data(contentsOf: URL(fileURLWithPath: folder.appending(path).string))
            }
        }
        return found
    }

    @Test(arguments: [PackFormat.tar, .aar])
    func theSameFilesAndIndexAsAHashedExtraction(_ format: PackFormat) throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Über/日本語 🎮.json", #"{"level": 1}"#)
        try scratch.write("Über/empty", "")
        try scratch.write("Videos/long.bin", Scratch.noise(1_500_000, seed: 9))
        let selectors = ["Levels", "Textures", "Videos", "Über"].map { #"{"directory": "\#($0)"}"# }
        let json =
            #"{"assetPackID": "All", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS"], "fileSelectors": ["#
        try scratch.write("All.json", json + selectors.joined(separator: ", ") + "]}")
        let manifest = try PackagingManifest.load(from: scratch.root.appending("All.json"))
        let archive = scratch.root.appending("t.pack")
        var options = PackBuildOptions()
        options.format = format
        if format == .aar { options.compression = .lzfse }
        _ = try PackBuilder.build(try PackSource.resolve(manifest, root: scratch.root), to: archive, options: options)
        let bytes = try scratch.read(archive)
        let (hashedIndex, hashed) = try Self.stream(bytes, scratch, "hashed", hashingFiles: true)
        let (plainIndex, plain) = try Self.stream(bytes, scratch, "plain", hashingFiles: false)
        #expect(plainIndex == hashedIndex)
        let copy = { (folder: FilePath) in try scratch.read(FilePath(folder.string + ".index.json")) }
        #expect(try copy(plain) == copy(hashed))
        let files = try Self.files(plain)
        #expect(files.count == 8)
        #expect(files == (try Self.files(hashed)))
        // The rows are the files' real digests, whichever way they were come by.
        let rows = try PackIndex.decode(copy(plain), source: "copy").files
        #expect(rows.count == files.count)
        for row in rows { #expect(row.sha256 == FileDigest.sha256(of: files[row.path] ?? Data()), "\(row.path)") }
    }

    /// An Apple Archive's rows are its files' SH2 fields when they are not hashed; a file without one is
    /// hashed all the same, as its row needs a digest.
    @Test(arguments: [true, false])
    func anAppleArchiveFileWithoutAnSH2IsHashedAnyway(carried: Bool) throws {
        let scratch = try Scratch()
        let bytes = Data(AppleArchiveTests.samplePack(sha256: carried))
        let (index, folder) = try Self.stream(bytes, scratch, "out", hashingFiles: false)
        #expect(index.fileCount == 2)
        let rows = try PackIndex.decode(scratch.read(FilePath(folder.string + ".index.json")), source: "copy").files
        let files = try Self.files(folder)
        #expect(rows.map(\.path) == ["Videos/Intro.m4v", "Über/日本語 🎮.json"])
        for row in rows { #expect(row.sha256 == FileDigest.sha256(of: files[row.path] ?? Data()), "\(row.path)") }
    }

    /// Every hostile archive a hashed extraction refuses is refused without hashing too, for the same reason,
    /// but a file whose bytes differ from its row at the same size: that is the archive digest's to catch.
    @Test(arguments: PackReaderHostileTests.cases)
    func everyOtherRefusalStands(_ hostile: PackReaderHostileTests.Case) throws {
        let scratch = try Scratch()
        let archive = scratch.root.appending("hostile.pack")
        try ArchiveFixture.write(hostile.entries(), to: archive)
        let bytes = try scratch.read(archive)
        let sameSizeSwap = hostile.name == "content differs from index"
        do {
            let (index, folder) = try Self.stream(bytes, scratch, "staging", hashingFiles: false, limit: 1024)
            #expect(sameSizeSwap, "\(hostile.name): extracted")
            #expect(index.fileCount == 1)
            #expect(try scratch.read(folder.appending("a.txt")) == Data("evil".utf8))
        } catch let error as AssetPackFormatError {
            #expect(!sameSizeSwap, "\(error.message)")
            #expect(error.message.contains(hostile.expected), "\(hostile.name): \(error.message)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("escape.txt").string))
    }

    /// A row whose digest is not one (not 64 lower-case hex digits) is refused without hashing too, though
    /// no file's bytes are compared with it: the archive's digest vouches for the index's bytes, not their form.
    @Test(arguments: ["zz", "", String(repeating: "a", count: 66), "UPPER"])
    func aRowWhoseDigestIsNotOneIsRefused(_ digest: String) throws {
        let ok = Data("fine".utf8)
        let right = FileDigest.sha256(of: ok)
        let written = digest == "UPPER" ? right.uppercased() : digest
        let index = String(decoding: ArchiveFixture.index([("a.txt", ok)]), as: UTF8.self)
        #expect(index.contains(right))
        try Self.expectRefusal(
            of: ok,
            index: Data(index.replacingOccurrences(of: right, with: written).utf8),
            saying: "gives a.txt a sha256 that is not 64 lower-case hex digits"
        )
    }

    /// A file of another size than its row is refused without hashing, naming both sizes.
    @Test func aFileOfAnotherSizeIsRefused() throws {
        try Self.expectRefusal(
            of: Data("evil!".utf8),
            index: ArchiveFixture.index([("a.txt", Data("fine".utf8))]),
            saying: "holds a.txt with 5 bytes, but its index says 4 bytes"
        )
    }

    /// Expects a pack of `a.txt` holding `content`, with `index`, to be refused as corrupt without hashing,
    /// with a message that says `problem`.
    static func expectRefusal(of content: Data, index: Data, saying problem: String) throws {
        let scratch = try Scratch()
        let archive = scratch.root.appending("refused.pack")
        try ArchiveFixture.write(
            [.init("Contents/a.txt", .file(content)), .init("Index.json", .file(index))],
            to: archive
        )
        let error = #expect(throws: AssetPackFormatError.self) {
            try stream(scratch.read(archive), scratch, "staging", hashingFiles: false)
        }
        #expect(error?.code == .corruptPack)
        #expect(error?.message.contains(problem) == true, "\(error?.message ?? "")")
    }
}
