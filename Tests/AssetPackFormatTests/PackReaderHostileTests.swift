import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("Reading hostile archives")
struct PackReaderHostileTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var entries: @Sendable () -> [ArchiveFixture.Entry]
        var expected: String
        var testDescription: String { name }
    }

    static let ok = Data("fine".utf8)

    static let cases: [Case] = [
        Case(
            name: "dot-dot entry",
            entries: {
                [.init("Contents/../../escape.txt", .file(ok)), .init("Index.json", .file(ArchiveFixture.index([])))]
            },
            expected: "'..'"
        ),
        Case(
            name: "absolute entry",
            entries: {
                [.init("/tmp/ba-escape.txt", .file(ok)), .init("Index.json", .file(ArchiveFixture.index([])))]
            },
            expected: "outside Contents/"
        ),
        Case(
            name: "symlink out",
            entries: {
                [.init("Contents/link", .symlink("/etc/passwd")), .init("Index.json", .file(ArchiveFixture.index([])))]
            },
            expected: "a symlink"
        ),
        Case(
            name: "hard link out",
            entries: {
                [
                    .init("Contents/hard", .hardlink("/etc/passwd")),
                    .init("Index.json", .file(ArchiveFixture.index([]))),
                ]
            },
            expected: "a hard link"
        ),
        Case(
            name: "device node",
            entries: {
                [.init("Contents/dev", .device), .init("Index.json", .file(ArchiveFixture.index([])))]
            },
            expected: "a special file"
        ),
        Case(
            name: "fifo",
            entries: {
                [.init("Contents/fifo", .fifo), .init("Index.json", .file(ArchiveFixture.index([])))]
            },
            expected: "a special file"
        ),
        Case(
            name: "duplicate entry",
            entries: {
                [
                    .init("Contents/a.txt", .file(ok)), .init("Contents/a.txt", .file(ok)),
                    .init("Index.json", .file(ArchiveFixture.index([("a.txt", ok)]))),
                ]
            },
            expected: "twice"
        ),
        Case(
            name: "entry outside Contents",
            entries: {
                [.init("Other/a.txt", .file(ok)), .init("Index.json", .file(ArchiveFixture.index([])))]
            },
            expected: "outside Contents/"
        ),
        Case(name: "no index", entries: { [.init("Contents/a.txt", .file(ok))] }, expected: "no Index.json"),
        Case(
            name: "content differs from index",
            entries: {
                [
                    .init("Contents/a.txt", .file(Data("evil".utf8))),
                    .init("Index.json", .file(ArchiveFixture.index([("a.txt", ok)]))),
                ]
            },
            expected: "but its index says"
        ),
        Case(
            name: "file missing from index",
            entries: {
                [.init("Contents/a.txt", .file(ok)), .init("Index.json", .file(ArchiveFixture.index([])))]
            },
            expected: "does not list"
        ),
        Case(
            name: "bomb past the install size",
            entries: {
                [
                    .init("Contents/big.bin", .file(Data(count: 64 * 1024))),
                    .init("Index.json", .file(ArchiveFixture.index([("big.bin", Data(count: 64 * 1024))]))),
                ]
            },
            expected: "more than its declared install size"
        ),
        Case(
            name: "index totals that lie",
            entries: {
                [.init("Contents/a.txt", .file(ok)), .init("Index.json", .file(lying(#""fileCount":1000000000000"#)))]
            },
            expected: "claims 1000000000000 files but lists 1"
        ),
        Case(
            name: "install size that lies",
            entries: {
                [
                    .init("Contents/a.txt", .file(ok)),
                    .init("Index.json", .file(lying(#""installSize":1000000000000000000"#))),
                ]
            },
            expected: "claims 1000000000000000000 bytes"
        ),
        Case(
            name: "language that is not a tag",
            entries: {
                [.init("Contents/a.txt", .file(ok)), .init("Index.json", .file(lying(#""language":"fr-FR-x-evil""#)))]
            },
            expected: "which is not a BCP-47 tag"
        ),
        Case(
            name: "a file that is also a folder",
            entries: {
                [
                    .init("Contents/a", .file(ok)),
                    .init("Contents/a/b", .file(ok)),
                    .init("Index.json", .file(ArchiveFixture.index([("a", ok), ("a/b", ok)]))),
                ]
            },
            expected: "holds a as a file and as a folder"
        ),
    ]

    /// The index of one file `a.txt` holding `ok`, with `override` replacing or adding a top-level key.
    static func lying(_ override: String) -> Data {
        var text = String(decoding: ArchiveFixture.index([("a.txt", ok)]), as: UTF8.self)
        let key = String(override.prefix { $0 != ":" })
        if let range = text.range(of: key + #":[^,]*"#, options: .regularExpression) {
            text.replaceSubrange(range, with: override)
        } else {
            text.insert(contentsOf: override + ",", at: text.index(after: text.startIndex))
        }
        return Data(text.utf8)
    }

    /// Each case twice: with the index read whole, and checked row by row from a copy as a client installs.
    @Test(arguments: cases, [false, true])
    func extractionRefuses(_ hostile: Case, keepingACopy: Bool) throws {
        let scratch = try Scratch()
        let archive = scratch.root.appending("hostile.pack")
        try ArchiveFixture.write(hostile.entries(), to: archive)
        let destination = scratch.root.appending("app-group/staging")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let copy = keepingACopy ? scratch.root.appending("app-group/staging.index.json") : nil
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extract(archive, into: destination, limit: 1024, indexCopy: copy)
        }
        #expect(error?.code == .corruptPack)
        #expect(error?.message.contains(hostile.expected) == true, "\(error?.message ?? "")")
        // Nothing landed outside the destination.
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("escape.txt").string))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/ba-escape.txt"))
        let outside = try FileManager.default.contentsOfDirectory(atPath: scratch.root.string).sorted()
        #expect(outside == ["app-group", "hostile.pack"])
    }

    /// Packs are written in byte order and an extraction keeps the paths it saw compactly while they come in
    /// it; an archive in another order (another tool's) is read just the same, and its faults still found.
    @Test(arguments: [false, true])
    func entriesOutOfOrderAreReadAndChecked(keepingACopy: Bool) throws {
        let scratch = try Scratch()
        let files: [(String, Data)] = [
            ("z/last.txt", Data("z".utf8)), ("a.txt", Data("a".utf8)), ("m/b.txt", Data("b".utf8)),
            ("m/a.txt", Data("ma".utf8)),
        ]
        let archive = scratch.root.appending("unsorted.pack")
        try ArchiveFixture.write(
            files.map { .init("Contents/" + $0.0, .file($0.1)) } + [
                .init("Index.json", .file(ArchiveFixture.index(files.sorted { $0.0 < $1.0 })))
            ],
            to: archive
        )
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let copy = keepingACopy ? scratch.root.appending("out.index.json") : nil
        let index = try PackArchiveReader.extract(archive, into: destination, indexCopy: copy)
        #expect(index.fileCount == 4)
        for (path, data) in files { #expect(try scratch.read(destination.appending(path)) == data) }

        // Out of order, a duplicate and a file that is also a folder are still refused.
        for (extra, expected) in [("m/b.txt", "twice"), ("z", "as a file and as a folder")] {
            let bad = scratch.root.appending("bad.pack")
            try? FileManager.default.removeItem(atPath: bad.string)
            try ArchiveFixture.write(
                files.map { .init("Contents/" + $0.0, .file($0.1)) } + [
                    .init("Contents/" + extra, .file(Data("x".utf8))),
                    .init("Index.json", .file(ArchiveFixture.index(files))),
                ],
                to: bad
            )
            let error = #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.verify(at: bad) }
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        }
    }

    /// A symlink planted in the destination, at a folder or a file the pack writes, is never followed: the
    /// extraction fails and nothing is written where it points.
    @Test(arguments: ["Videos", "Videos/Intro.m4v"])
    func extractionNeverWritesThroughASymlinkInTheDestination(_ planted: String) throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let parsed = try PackagingManifest.load(from: scratch.root.appending("Tutorial.json"))
        let archive = scratch.root.appending("t.pack")
        _ = try PackBuilder.build(try PackSource.resolve(parsed, root: scratch.root), to: archive)
        let outside = scratch.root.appending("outside")
        try FileManager.default.createDirectory(atPath: outside.string, withIntermediateDirectories: true)
        let destination = scratch.root.appending("staging")
        let link = destination.appending(planted)
        try FileManager.default.createDirectory(
            atPath: link.removingLastComponent().string,
            withIntermediateDirectories: true
        )
        try FileManager.default.createSymbolicLink(atPath: link.string, withDestinationPath: outside.string)
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extract(archive, into: destination)
        }
        #expect(error?.code == .io, "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.string).isEmpty)
    }

    /// A row whose digest differs from the file's only at its end is shown far enough to tell the two apart.
    @Test func aDigestThatDiffersLateIsShownUntilItDiffers() throws {
        let scratch = try Scratch()
        let right = FileDigest.sha256(of: Self.ok)
        let wrong = String(right.dropLast()) + (right.hasSuffix("0") ? "1" : "0")
        let index = String(decoding: ArchiveFixture.index([("a.txt", Self.ok)]), as: UTF8.self)
        let archive = scratch.root.appending("late.pack")
        try ArchiveFixture.write(
            [
                .init("Contents/a.txt", .file(Self.ok)),
                .init("Index.json", .file(Data(index.replacingOccurrences(of: right, with: wrong).utf8))),
            ],
            to: archive
        )
        let error = #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.verify(at: archive) }
        #expect(
            error?.message.contains("with 4 bytes and SHA-256 \(right), but its index says 4 bytes and \(wrong)")
                == true,
            "\(error?.message ?? "")"
        )
    }

    @Test func notAnArchiveIsRefused() throws {
        let scratch = try Scratch()
        let path = try scratch.write("notes.pack", "this is not an archive, just text\n")
        let error = #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.readIndex(at: path) }
        #expect(error?.code == .archive)
        #expect(error?.message.contains("notes.pack") == true)
    }

    @Test func corruptCompressedStreamIsRefused() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let parsed = try PackagingManifest.load(from: scratch.root.appending("Tutorial.json"))
        let output = scratch.root.appending("t.pack")
        _ = try PackBuilder.build(try PackSource.resolve(parsed, root: scratch.root), to: output)
        var bytes = [UInt8](try scratch.read(output))
        for offset in stride(from: 100, to: bytes.count - 100, by: 997) { bytes[offset] ^= 0xFF }
        try scratch.write("t.pack", Data(bytes))
        let error = #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.verify(at: output) }
        #expect(error?.code == .archive || error?.code == .corruptPack)
    }

    @Test func truncatedPackIsRefused() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let parsed = try PackagingManifest.load(from: scratch.root.appending("Tutorial.json"))
        let output = scratch.root.appending("t.pack")
        let built = try PackBuilder.build(try PackSource.resolve(parsed, root: scratch.root), to: output)
        try scratch.write("t.pack", try scratch.read(output).prefix(Int(built.downloadSize / 2)))
        #expect(throws: AssetPackFormatError.self) { try PackArchiveReader.verify(at: output) }
    }
}
