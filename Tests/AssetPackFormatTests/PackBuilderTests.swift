import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackFormat

@Suite("Building and reading packs")
struct PackBuilderTests {
    func source(_ scratch: Scratch, manifest: String) throws -> PackSource {
        let parsed = try PackagingManifest.load(from: scratch.root.appending(manifest))
        return try PackSource.resolve(parsed, root: scratch.root)
    }

    @Test func buildsAndReadsBack() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let levels = try source(scratch, manifest: "Levels.json")
        #expect(
            levels.files.map(\.path) == [
                "Levels/World1/deep/nested/tiles.bin", "Levels/World1/level1.json", "Levels/World2/level1.json",
            ]
        )
        let output = scratch.root.appending("out/Levels.pack")
        try FileManager.default.createDirectory(
            atPath: scratch.root.appending("out").string,
            withIntermediateDirectories: true
        )
        let built = try PackBuilder.build(levels, to: output)
        let onDisk = try scratch.read(output)
        #expect(built.downloadSize == Int64(onDisk.count))
        #expect(built.sha256 == FileDigest.sha256(of: onDisk))
        #expect(built.fileCount == 3)
        #expect(built.installSize == levels.installSize)

        let index = try PackArchiveReader.verify(at: output)
        #expect(index.assetPackID == "Levels")
        #expect(index.downloadPolicy == .prefetch(installationEventTypes: [.firstInstallation, .subsequentUpdate]))
        #expect(index.files.map(\.path) == levels.files.map(\.path))

        let destination = scratch.root.appending("extracted")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        _ = try PackArchiveReader.extract(output, into: destination, limit: built.installSize)
        for file in levels.files {
            #expect(try scratch.read(destination.appending(file.path)) == scratch.read(file.source), "\(file.path)")
            let row = try #require(index.files.first { $0.path == file.path })
            #expect(row.sha256 == FileDigest.sha256(of: try scratch.read(file.source)))
        }
        // Entries are stored under Contents/ with the index last.
        let names = try ArchiveFixture.entryNames(output)
        #expect(names == levels.files.map { "Contents/" + $0.path } + ["Index.json"])
    }

    @Test func sameInputGivesIdenticalBytes() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let levels = try source(scratch, manifest: "Levels.json")
        let first = scratch.root.appending("a.pack")
        let second = scratch.root.appending("b.pack")
        // zstd's own workers from 2 threads up: the same bytes for any count (one thread writes other bytes).
        let one = try PackBuilder.build(levels, to: first, options: PackBuildOptions(threads: 2))
        // Touch every file: times change, content does not.
        for file in levels.files {
            try scratch.write(
                String(file.source.string.dropFirst(scratch.root.string.count + 1)),
                try scratch.read(file.source)
            )
        }
        let again = try source(scratch, manifest: "Levels.json")
        let two = try PackBuilder.build(again, to: second, options: PackBuildOptions(threads: 3))
        #expect(one.sha256 == two.sha256)
        #expect(try scratch.read(first) == scratch.read(second))
        #expect(levels.fingerprint(options: .init()) != again.fingerprint(options: .init()))
    }

    @Test(arguments: PackFormat.tar.compressions)
    func everyCompressionFilterRoundTrips(_ compression: PackCompression) throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let levels = try source(scratch, manifest: "Levels.json")
        let output = scratch.root.appending("p.pack")
        let built = try PackBuilder.build(levels, to: output, options: PackBuildOptions(compression: compression))
        #expect(built.compression == compression)
        let bytes = [UInt8](try scratch.read(output))
        let magic: [UInt8] =
            switch compression {
            case .zstd: [0x28, 0xB5, 0x2F, 0xFD]
            case .gzip: [0x1F, 0x8B]
            case .xz: [0xFD, 0x37, 0x7A, 0x58, 0x5A]
            case .lz4: [0x04, 0x22, 0x4D, 0x18]
            case .none: []
            case .lzfse, .lzma, .zlib: Array("pbz".utf8)  // not reached: Apple Archive only
            }
        #expect(Array(bytes.prefix(magic.count)) == magic)
        if compression == .none { #expect(Array(bytes[257..<262]) == Array("ustar".utf8)) }
        let index = try PackArchiveReader.verify(at: output)
        #expect(index.fileCount == 3)
        // Reproducible for every filter (gzip without a timestamp).
        let again = scratch.root.appending("q.pack")
        _ = try PackBuilder.build(levels, to: again, options: PackBuildOptions(compression: compression))
        #expect(try scratch.read(again) == scratch.read(output))
    }

    /// The index is written a row at a time, not by JSONEncoder; its bytes must stay JSONEncoder's, or the
    /// same files would give a different pack than before. Names with every control character a pack path
    /// may hold (not NUL), quotes and non-ASCII text (an ID with a slash and a backslash, which no path may
    /// hold); with and without a language; with no files.
    @Test(arguments: [0, 1, 3, 40])
    func indexJSONIsJSONEncodersBytes(files count: Int) throws {
        var rng = SplitMix64(seed: UInt64(count) + 5)
        let alphabet: [String] =
            (0x01..<0x20).map { String(UnicodeScalar(UInt8($0))) }
            + ["\"", "\u{7f}", "é", "e\u{301}", "日本語", "🎮", "\u{2028}", "a", "Z", " "]
        let files = (0..<count).map { number in
            let name = (0..<Int(rng.next() % 12 + 1)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            return PackIndex.File(
                path: "d\(number)/" + name.joined(),
                size: Int64(rng.next() % 1_000_000_000_000),
                sha256: Data((0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).hexString
            )
        }
        for language in [nil, "fr-CA"] {
            let index = PackIndex(
                formatVersion: PackIndex.currentFormatVersion,
                assetPackID: "Ü/\"id\"\\",
                downloadPolicy: .prefetch(installationEventTypes: [.firstInstallation]),
                platforms: ["iOS", "macOS"],
                language: language,
                installSize: files.reduce(0) { $0 + $1.size },
                fileCount: files.count,
                files: files
            )
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            let expected = try encoder.encode(index)
            let streamed = try index.encoded()
            #expect(streamed == expected, "\(String(decoding: streamed, as: UTF8.self))")
            #expect(try PackIndex.decode(streamed, source: "test") == index)
        }
    }

    /// Files go through the reading thread several to a buffer and across buffers: many small files
    /// around a file larger than a buffer, empty files among them; every byte and digest must come back.
    @Test func readingPipelineKeepsEveryFileWhole() throws {
        let scratch = try Scratch()
        var sizes = [0, 1, 4095, 4096, 65_535, 65_536, 3 << 20, 0, 1_048_575, 1_048_576, 1_048_577]
        sizes += (0..<300).map { ($0 * 7919) % 20_000 }
        for (number, size) in sizes.enumerated() {
            try scratch.write(String(format: "Mixed/f%04d.bin", number), Scratch.noise(size, seed: UInt64(number)))
        }
        try scratch.write(
            "Mixed.json",
            #"{"assetPackID": "Mixed", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Mixed"}], "platforms": ["iOS"]}"#
        )
        let mixed = try source(scratch, manifest: "Mixed.json")
        let output = scratch.root.appending("Mixed.pack")
        let (built, index) = try PackBuilder.buildIndexed(
            mixed,
            to: output,
            options: PackBuildOptions(compression: .none)
        )
        #expect(built.fileCount == sizes.count)
        #expect(try PackArchiveReader.verify(at: output) == index)
        for (number, file) in index.files.enumerated() {
            let bytes = Scratch.noise(sizes[number], seed: UInt64(number))
            #expect(file.size == Int64(bytes.count))
            #expect(file.sha256 == FileDigest.sha256(of: bytes), "\(file.path)")
        }
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        _ = try PackArchiveReader.extract(output, into: destination)
        for (number, size) in sizes.enumerated() where [3 << 20, 1_048_577, 4095].contains(size) {
            let path = destination.appending(String(format: "Mixed/f%04d.bin", number))
            #expect(try scratch.read(path) == Scratch.noise(size, seed: UInt64(number)))
        }
    }

    /// The chunks a server keeps for deltas, cut while packing on the reading thread (the fast path), are the
    /// list read back from the finished archive (the plain one), and the archive and its index are the bytes
    /// and digests a build without chunking makes: for a tar and for an Apple Archive, with files below,
    /// at and above the chunking size, across the reader's 1 MiB buffers.
    @Test(arguments: [PackFormat.tar, .aar]) func chunksCutWhilePackingAreThoseOfTheArchive(format: PackFormat) throws {
        let scratch = try Scratch()
        let sizes = [0, 65_535, 65_536, 3 << 20, 100, 1_048_577, 200_000]
        for (number, size) in sizes.enumerated() {
            try scratch.write("Big/f\(number).bin", Scratch.noise(size, seed: UInt64(number + 70)))
        }
        try scratch.write(
            "Big.json",
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Big"}], "platforms": ["iOS"]}"#
        )
        let big = try source(scratch, manifest: "Big.json")
        let options = PackBuildOptions(format: format)
        let (plainOutput, chunkedOutput) = (scratch.root.appending("plain.pack"), scratch.root.appending("fast.pack"))
        let (plain, plainIndex) = try PackBuilder.buildIndexed(big, to: plainOutput, options: options)
        let (built, index, chunks) = try PackBuilder.buildChunked(big, to: chunkedOutput, options: options)
        #expect(try scratch.read(chunkedOutput) == scratch.read(plainOutput))
        #expect(built.sha256 == plain.sha256 && index == plainIndex)
        let readBack = try PackChunks.compute(archive: chunkedOutput)
        #expect(chunks == readBack)
        #expect(Set(chunks.files.keys.map(\.path)) == ["Big/f2.bin", "Big/f3.bin", "Big/f5.bin", "Big/f6.bin"])
    }

    /// An extraction that keeps the index's bytes checks them row by row and returns only the header; the
    /// copy reads back as the whole index, byte for byte what the archive holds.
    @Test func extractionKeepsTheIndexAsTheArchiveHoldsIt() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let levels = try source(scratch, manifest: "Levels.json")
        let output = scratch.root.appending("Levels.pack")
        let (_, index) = try PackBuilder.buildIndexed(levels, to: output)
        let destination = scratch.root.appending("x")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let copy = scratch.root.appending("x.index.json")
        let header = try PackArchiveReader.extract(output, into: destination, indexCopy: copy)
        #expect(header.files.isEmpty)
        #expect(header.fileCount == index.fileCount && header.installSize == index.installSize)
        #expect(try PackIndex.load(from: copy) == index)
        #expect(try scratch.read(copy) == index.encoded())
        // An existing file is never overwritten.
        let again = scratch.root.appending("y")
        try FileManager.default.createDirectory(atPath: again.string, withIntermediateDirectories: true)
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extract(output, into: again, indexCopy: copy)
        }
        #expect(error?.message.contains("File exists") == true, "\(error?.message ?? "")")
    }

    /// A tar of zstd on one thread is compressed on a thread of its own (the sink's), not by libarchive's
    /// filter: its bytes must stay those libarchive's filter writes from the same tar, at the default level
    /// and another, across many of the stage's buffers (about 3.5 MB of tar: text, noise, an empty file,
    /// names beyond ASCII that take pax headers).
    @Test(arguments: [nil, 9] as [Int?])
    func zstdOnItsOwnThreadWritesLibarchivesBytes(level: Int?) throws {
        let scratch = try Scratch()
        var rng = SplitMix64(seed: 31)
        for number in 0..<60 {
            let size = Int(rng.next() % 40_000)
            let text = String(repeating: "tile \(number) row \(size); ", count: size / 20 + 1)
            try scratch.write("Set/Über/日本語 \(number) 🎮.json", text)
        }
        try scratch.write("Set/noise-a.bin", Scratch.noise(1_100_000, seed: 3))
        try scratch.write("Set/noise-b.bin", Scratch.noise(700_001, seed: 4))
        try scratch.write("Set/empty.bin", Data())
        try scratch.write(
            "Set.json",
            #"{"assetPackID": "Set", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Set"}], "platforms": ["iOS"]}"#
        )
        let set = try source(scratch, manifest: "Set.json")
        let plain = scratch.root.appending("plain.pack")
        _ = try PackBuilder.build(set, to: plain, options: PackBuildOptions(compression: .none))
        let packed = scratch.root.appending("zstd.pack")
        let built = try PackBuilder.build(set, to: packed, options: PackBuildOptions(compression: .zstd, level: level))
        let bytes = try scratch.read(packed)
        let reference = try ArchiveFixture.libarchiveZstd(try scratch.read(plain), level: level ?? 3)
        #expect(bytes.count > 1_000_000)
        #expect(bytes == reference, "\(bytes.count) bytes against libarchive's \(reference.count)")
        #expect(built.sha256 == FileDigest.sha256(of: bytes))
        #expect(built.downloadSize == Int64(bytes.count))
        #expect(try PackArchiveReader.verify(at: packed).fileCount == 63)
    }

    /// zstd clamps a level outside its range where libarchive's filter refused it: the stage refuses it too,
    /// for callers that did not validate their options (a delta build).
    @Test func zstdStageRefusesALevelZstdDoesNotHave() throws {
        let error = #expect(throws: AssetPackFormatError.self) { try ZstdStream(level: 40) }
        #expect(error?.code == .invalidOption)
        #expect(error?.message.contains("zstd has no level 40") == true, "\(error?.message ?? "")")
        #expect(throws: Never.self) { try ZstdStream(level: 19) }
    }

    @Test func levelOutOfRangeIsRefused() throws {
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackBuildOptions(compression: .gzip, level: 12).validate()
        }
        #expect(error?.code == .invalidOption)
        #expect(error?.message.contains("use 1 to 9") == true)
    }

    @Test func failedBuildLeavesNoFileBehind() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let levels = try source(scratch, manifest: "Levels.json")
        try FileManager.default.removeItem(atPath: scratch.root.appending("Levels/World2/level1.json").string)
        let output = scratch.root.appending("out.pack")
        #expect(throws: AssetPackFormatError.self) { try PackBuilder.build(levels, to: output) }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.root.string).filter {
            $0.contains("out.pack")
        }
        #expect(leftovers.isEmpty)
    }

    @Test func fileThatChangesSizeWhilePackingIsCaught() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let levels = try source(scratch, manifest: "Levels.json")
        try scratch.write("Levels/World2/level1.json", String(repeating: "x", count: 5000))
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackBuilder.build(levels, to: scratch.root.appending("x.pack"))
        }
        #expect(error?.code == .changedWhilePacking)
        #expect(error?.message.contains("Levels/World2/level1.json") == true)
    }

    /// The output is written by a thread of its own: a write that fails there (a full disk) still fails the
    /// build with the cause, and leaves nothing behind.
    @Test(.enabled(if: canMountTmpfs, "needs root to mount a small tmpfs"), arguments: [1, 2])
    func fullDiskFailsTheBuildAndLeavesNothing(threads: Int) throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Textures/big.bin", Scratch.noise(3_000_000, seed: 9))
        try scratch.write(
            "Textures.json",
            #"{"assetPackID": "Textures", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Textures"}], "platforms": ["iOS"]}"#
        )
        let textures = try source(scratch, manifest: "Textures.json")
        let out = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: out.string, withIntermediateDirectories: true)
        #expect(
            try runTool(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=1m", "tmpfs", out.string])
                .status == 0
        )
        defer { _ = try? runTool(URL(fileURLWithPath: "/bin/umount"), ["-l", out.string]) }
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackBuilder.build(
                textures,
                to: out.appending("Textures.pack"),
                options: PackBuildOptions(threads: threads)
            )
        }
        #expect(error?.code == .io, "\(String(describing: error))")
        #expect(error?.message.contains("No space left") == true, "\(error?.message ?? "")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.string).isEmpty)
    }
}
