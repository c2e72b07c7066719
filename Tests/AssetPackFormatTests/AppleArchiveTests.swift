import AssetPackFormat
import Crypto
import Foundation
import SystemPackage
import TestSupport
import Testing

/// Apple Archive packs: archives made by hand from the format's description (and by the independent tool in
/// scripts/aar_tool.py), read, verified and extracted; archives written by `PackBuilder`, read back by that
/// independent tool; and hostile archives refused as a tar would be.
@Suite("Apple Archive packs")
struct AppleArchiveTests {
    typealias Entry = AppleArchiveFixture.Entry

    static func sha(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// A small pack as `ba-package` is reported to lay one out: the root folder, Manifest.json, Contents/.
    static func samplePack(id: String = "Tutorial", sha256 digests: Bool = true) -> [UInt8] {
        let intro = Array(Scratch.noise(70_000, seed: 7))
        let name = Array("Über/日本語 🎮.json".utf8)
        let level = Array(#"{"level": 1}"#.utf8)
        let manifest = AppleArchiveFixture.manifest(id: id)
        return AppleArchiveFixture.plain([
            .folder(""),
            .file("Manifest.json", manifest, sha256: digests ? sha(manifest) : nil),
            .folder("Contents"),
            .folder("Contents/Videos"),
            .file("Contents/Videos/Intro.m4v", intro, sha256: digests ? sha(intro) : nil),
            .folder("Contents/Über"),
            .file("Contents/" + String(decoding: name, as: UTF8.self), level, sha256: digests ? sha(level) : nil),
        ])
    }

    func write(_ scratch: Scratch, _ name: String, _ bytes: [UInt8]) throws -> FilePath {
        try scratch.write(name, Data(bytes))
    }

    @Test func readsAPlainArchiveWithItsManifest() throws {
        let scratch = try Scratch()
        let archive = try write(scratch, "Tutorial.aar", Self.samplePack())
        let index = try PackArchiveReader.verify(at: archive)
        #expect(index.assetPackID == "Tutorial")
        #expect(index.downloadPolicy == .onDemand)
        #expect(index.platforms == ["iOS"])
        #expect(index.files.map(\.path) == ["Videos/Intro.m4v", "Über/日本語 🎮.json"])
        #expect(index.installSize == 70_000 + 12)
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        _ = try PackArchiveReader.extract(archive, into: destination, limit: index.installSize)
        #expect(try scratch.read(destination.appending("Über/日本語 🎮.json")) == Data(#"{"level": 1}"#.utf8))
        #expect(try scratch.read(destination.appending("Videos/Intro.m4v")) == Scratch.noise(70_000, seed: 7))
        // Nothing but the files: Manifest.json is not installed.
        #expect(!FileManager.default.fileExists(atPath: destination.appending("Manifest.json").string))
    }

    @Test func readsAStoredBlockStreamCutAtEveryBoundary() throws {
        let scratch = try Scratch()
        let plain = Self.samplePack()
        for blockSize in [1, 7, 100, 4096, 65_536, plain.count] {
            let archive = try write(
                scratch,
                "s\(blockSize).aar",
                AppleArchiveFixture.pbzStored(plain, blockSize: blockSize)
            )
            let index = try PackArchiveReader.verify(at: archive)
            #expect(index.fileCount == 2, "block size \(blockSize)")
            // The same bytes arriving in chunks of any size (a download) read the same.
            let bytes = try scratch.read(archive)
            for chunk in [1, 3, 4096] {
                let destination = scratch.root.appending("x\(blockSize)-\(chunk)")
                try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
                var offset = 0
                let held = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 1)
                defer { held.deallocate() }
                let streamed = try PackArchiveReader.extract(streamNamed: "download", into: destination) {
                    let count = min(chunk, bytes.count - offset)
                    held.copyBytes(from: bytes[offset..<offset + count])
                    offset += count
                    return UnsafeRawBufferPointer(rebasing: held[0..<count])
                }
                #expect(streamed.assetPackID == "Tutorial")
            }
        }
    }

    @Test func withoutAManifestTheCallerNamesThePack() throws {
        let scratch = try Scratch()
        let bytes = AppleArchiveFixture.plain([
            .file("Contents/a.txt", Array("a".utf8), sha256: nil)
        ])
        let archive = try write(scratch, "Bare.aar", bytes)
        #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.verify(at: archive) }
        let named = PackIndex(
            formatVersion: 1,
            assetPackID: "Bare",
            downloadPolicy: .onDemand,
            platforms: ["iOS"],
            language: nil,
            installSize: 0,
            fileCount: 0,
            files: []
        )
        let index = try PackArchiveReader.verify(at: archive, describedAs: named)
        #expect(index.assetPackID == "Bare")
        #expect(index.files == [PackIndex.File(path: "a.txt", size: 1, sha256: FileDigest.sha256(of: Data("a".utf8)))])
    }

    /// Every refusal a tar gets, an Apple Archive gets too, with the reason.
    @Test(
        arguments: [
            (
                "a digest that does not match",
                [Entry.file("Contents/a", Array("abc".utf8), sha256: Array(repeating: 0, count: 32))], "SH2"
            ),
            ("a name with ..", [Entry.file("Contents/../evil", Array("x".utf8), sha256: nil)], "outside Contents/"),
            ("an absolute name", [Entry.file("/etc/passwd", Array("x".utf8), sha256: nil)], "outside Contents/"),
            ("a name outside Contents/", [Entry.file("evil.txt", Array("x".utf8), sha256: nil)], "outside Contents/"),
            (
                "a symlink",
                [
                    Entry(fields: [
                        .uint("TYP", 0x4C), .string("PAT", Array("Contents/l".utf8)),
                        .string("LNK", Array("/etc".utf8)),
                    ])
                ],
                "symlink"
            ),
            (
                "a device",
                [Entry(fields: [.uint("TYP", 0x43), .string("PAT", Array("Contents/d".utf8)), .uint("DEV", 1)])],
                "special"
            ),
            (
                "a hard link",
                [Entry(fields: [.uint("TYP", 0x46), .string("PAT", Array("Contents/h".utf8)), .uint("HLC", 1)])],
                "hard link"
            ),
            (
                "a name that is not UTF-8",
                [
                    Entry.file("Contents/\u{FF}", [], sha256: nil).replacingPath([
                        0x43, 0x6F, 0x6E, 0x74, 0x65, 0x6E, 0x74, 0x73, 0x2F, 0xFF,
                    ])
                ], "UTF-8"
            ),
            (
                "an entry twice",
                [Entry.file("Contents/a", [1], sha256: nil), Entry.file("Contents/a", [1], sha256: nil)], "twice"
            ),
            (
                "a field twice",
                [Entry(fields: [.uint("TYP", 0x46), .uint("TYP", 0x46), .string("PAT", Array("Contents/a".utf8))])],
                "twice"
            ),
            ("no TYP", [Entry(fields: [.string("PAT", Array("Contents/a".utf8))])], "TYP"),
            ("a folder named with ..", [Entry.folder("Contents/../../x")], "folder named"),
            (
                "a folder that carries data",
                [
                    Entry(
                        fields: [.uint("TYP", 0x44), .string("PAT", Array("Contents/d".utf8)), .blob("DAT", 3)],
                        blobs: [1, 2, 3]
                    )
                ],
                "carries data"
            ),
            (
                "a DAT that is an integer",
                [Entry(fields: [.uint("TYP", 0x46), .string("PAT", Array("Contents/a".utf8)), .uint("DAT", 1)])],
                "not a blob"
            ),
            (
                "a TYP that is a string",
                [Entry(fields: [.string("TYP", [0x46]), .string("PAT", Array("Contents/a".utf8))])], "not an integer"
            ),
            (
                "a Manifest.json whose SH2 is wrong",
                [
                    Entry.file(
                        "Manifest.json",
                        AppleArchiveFixture.manifest(id: "Other"),
                        sha256: Array(repeating: 0, count: 32)
                    )
                ],
                "SH2"
            ),
            (
                "an unknown subtype", [Entry(fields: [.uint("TYP", 0x46), AppleArchiveFixture.Field("ZZZ", "q", [])])],
                "subtype"
            ),
            (
                "a blob size past 2^63",
                [
                    Entry(fields: [
                        .uint("TYP", 0x46), .string("PAT", Array("Contents/a".utf8)),
                        .blob("DAT", UInt64.max, width: 8),
                    ])
                ],
                "bytes"
            ),
        ] as [(String, [Entry], String)]
    )
    func refusesWhatATarWouldBeRefusedFor(_ what: String, entries: [Entry], says: String) throws {
        let scratch = try Scratch()
        let manifest = AppleArchiveFixture.manifest(id: "Hostile")
        let bytes = AppleArchiveFixture.plain([.file("Manifest.json", manifest, sha256: nil)] + entries)
        let archive = try write(scratch, "hostile.aar", bytes)
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        do {
            _ = try PackArchiveReader.extract(archive, into: destination)
            Issue.record("\(what): extracted")
        } catch let error as AssetPackFormatError {
            #expect(error.code == .corruptPack, "\(what): \(error)")
            #expect(error.message.contains(says), "\(what): \(error.message)")
        }
        // Nothing escaped the destination.
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("evil").string))
    }

    /// A stream cut anywhere is refused as damaged, never read as a shorter pack.
    @Test func everyTruncationIsRefused() throws {
        let scratch = try Scratch()
        let full = AppleArchiveFixture.pbzStored(Self.samplePack(), blockSize: 4096)
        var cuts = Array(stride(from: 1, to: full.count, by: 97))
        // Every block boundary, and a byte either side of it.
        var boundary = 12
        while boundary < full.count {
            cuts += [boundary - 1, boundary, boundary + 1, boundary + 16]
            boundary += 16 + 4096
        }
        for cut in Set(cuts) where cut > 0 && cut < full.count {
            let archive = try write(scratch, "cut.aar", Array(full[0..<cut]))
            #expect(throws: AssetPackFormatError.self, "cut at \(cut)") { try PackArchiveReader.verify(at: archive) }
        }
    }

    @Test func refusesHostileStreamHeaders() throws {
        let scratch = try Scratch()
        let plain = Self.samplePack()
        func refused(_ bytes: [UInt8], saying: String) throws {
            let archive = try write(scratch, "h.aar", bytes)
            do {
                _ = try PackArchiveReader.verify(at: archive)
                Issue.record("read: \(saying)")
            } catch let error as AssetPackFormatError {
                #expect(error.message.contains(saying), "\(error.message)")
            }
        }
        // LZBITMAP is refused by name, not as damage.
        try refused(AppleArchiveFixture.pbzStored(plain, blockSize: 4096, magic: "b"), saying: "LZBITMAP")
        try refused(AppleArchiveFixture.pbzStored(plain, blockSize: 4096, magic: "q"), saying: "unknown algorithm")
        // A block size of 2^62 is refused before anything is allocated.
        var huge = AppleArchiveFixture.pbzStored(plain, blockSize: 4096)
        huge.replaceSubrange(4..<12, with: AppleArchiveFixture.bigEndian(1 << 62))
        try refused(huge, saying: "block size")
        // A block over the absolute bound of 64 MiB (whatever the header's block size), or a stored size past its
        // raw size.
        var big = AppleArchiveFixture.pbzStored(plain, blockSize: 4096)
        big.replaceSubrange(12..<20, with: AppleArchiveFixture.bigEndian(1 << 40))
        try refused(big, saying: "outside what ba-mock reads: 1 byte to 64.0 MiB")
        var overBound = AppleArchiveFixture.pbzStored(plain, blockSize: 4096)
        overBound.replaceSubrange(12..<20, with: AppleArchiveFixture.bigEndian((64 << 20) + 1))
        try refused(overBound, saying: "outside what ba-mock reads")
        var stored = AppleArchiveFixture.pbzStored(plain, blockSize: 4096)
        stored.replaceSubrange(20..<28, with: AppleArchiveFixture.bigEndian(5000))
        try refused(stored, saying: "more than the 4096 it holds")
        // A stream that ends after its pbz header holds no pack at all, not an empty one.
        try refused(AppleArchiveFixture.pbzStored([], blockSize: 4096), saying: "holds no entries")
        // Compressed bytes that are not LZFSE.
        var garbage = AppleArchiveFixture.pbzStored(plain, blockSize: 4096)
        garbage.replaceSubrange(20..<28, with: AppleArchiveFixture.bigEndian(4000))
        try refused(Array(garbage[0..<(28 + 4000)]), saying: "block (0)")
    }

    @Test func aFileNamedAARThatIsNotOneSaysWhatItStartsWith() throws {
        let scratch = try Scratch()
        let archive = try write(scratch, "Notes.aar", Array("hello, world\n".utf8))
        do {
            _ = try PackArchiveReader.verify(at: archive)
            Issue.record("read")
        } catch let error as AssetPackFormatError {
            #expect(error.message.contains("is not an Apple Archive (it starts with \"hell\", not pbz or AA01)"))
        }
    }

    @Test func anArchiveThatDeclaresMoreThanItsInstallSizeIsRefused() throws {
        let scratch = try Scratch()
        let archive = try write(scratch, "Tutorial.aar", Self.samplePack())
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extract(archive, into: destination, limit: 1000)
        }
    }
}

extension AppleArchiveFixture.Entry {
    fileprivate func replacingPath(_ bytes: [UInt8]) -> Self {
        var copy = self
        copy.fields = fields.map { $0.key == "PAT" ? .string("PAT", bytes) : $0 }
        return copy
    }
}
