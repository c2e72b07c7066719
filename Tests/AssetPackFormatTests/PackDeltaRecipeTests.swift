import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackFormat

/// Deltas inside files: a changed large file travels as the pieces that are new plus references to pieces of
/// the base, and is rebuilt from the installed base and checked against the new index.
@Suite("Delta archives: recipes")
struct PackDeltaRecipeTests {
    static let manifest =
        #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "big"}], "platforms": ["iOS"]}"#
    static let original = Scratch.noise(1 << 20, seed: 41)

    /// One version: its archive, index and chunk lists.
    struct Version {
        var archive: FilePath
        var index: PackIndex
        var chunks: PackChunks
    }

    func build(_ scratch: Scratch, _ name: String) throws -> Version {
        let parsed = try PackagingManifest.load(from: scratch.root.appending("Big.json"))
        let archive = scratch.root.appending("\(name).pack")
        let (_, index) = try PackBuilder.buildIndexed(try PackSource.resolve(parsed, root: scratch.root), to: archive)
        return Version(archive: archive, index: index, chunks: try PackChunks.compute(archive: archive))
    }

    func folder(_ scratch: Scratch, _ name: String) throws -> FilePath {
        let path = scratch.root.appending(name)
        try FileManager.default.createDirectory(atPath: path.string, withIntermediateDirectories: true)
        return path
    }

    func base(_ index: PackIndex, in root: FilePath) -> PackDelta.Base {
        PackDelta.Base(index: index) { path in
            let top = try FileDescriptor.openFolder(root)
            defer { try? top.close() }
            return try top.openFolder(path, creating: false)
        }
    }

    /// Builds v1 (big/a.bin = `original`, a small file beside), installs it into a folder, applies `change`
    /// to a.bin, builds v2 and its delta, and extracts the delta over the installed v1.
    /// - Returns: The delta's size and what the extraction rebuilt.
    func update(_ change: (Data) -> Data) throws -> (deltaSize: Int64, rebuilt: Data, expected: Data) {
        let scratch = try Scratch()
        try scratch.write("Big.json", Self.manifest)
        try scratch.write("big/a.bin", Self.original)
        try scratch.write("big/small.txt", "kept")
        let v1 = try build(scratch, "v1")
        let installed = try folder(scratch, "installed")
        _ = try PackArchiveReader.extract(v1.archive, into: installed)
        let expected = change(Self.original)
        try scratch.write("big/a.bin", expected)
        let v2 = try build(scratch, "v2")
        let delta = scratch.root.appending("v1-v2.delta")
        let binding = PackDelta.Binding(assetPackID: "Big", fromSHA256: "1111", toSHA256: "2222")
        let built = try PackDelta.build(
            full: v2.archive,
            target: v2.index,
            base: v1.index,
            chunks: (v2.chunks, v1.chunks),
            binding: binding,
            to: delta,
            options: PackBuildOptions()
        )
        // Reproducible: the same inputs give the same bytes.
        let again = try PackDelta.build(
            full: v2.archive,
            target: v2.index,
            base: v1.index,
            chunks: (v2.chunks, v1.chunks),
            binding: binding,
            to: scratch.root.appending("again.delta"),
            options: PackBuildOptions()
        )
        #expect(again == built)
        let staging = try folder(scratch, "staging")
        let (index, absent) = try PackArchiveReader.extractDelta(
            delta,
            into: staging,
            limit: v2.index.installSize,
            expecting: binding,
            base: base(v1.index, in: installed)
        )
        #expect(index == v2.index)
        #expect(absent.map(\.path) == ["big/small.txt"])
        return (built.downloadSize, try scratch.read(staging.appending("big/a.bin")), expected)
    }

    static let changes: [String: @Sendable (Data) -> Data] = [
        "middle": { data in
            var out = data
            out.replaceSubrange(400_000..<464_000, with: Scratch.noise(64_000, seed: 1))
            return out
        },
        "insertion": { Scratch.noise(64_000, seed: 2) + $0 },
        "deletion": { data in data.prefix(300_000) + data.dropFirst(400_000) },
        "grown": { $0 + Scratch.noise(100_000, seed: 3) },
        "shrunk": { $0.prefix(700_000) },
        // The same piece of the base twice over: one reference each time, no literal bytes.
        "twice": { data in data.prefix(300_000) + data.prefix(300_000) },
    ]

    @Test(arguments: ["middle", "insertion", "deletion", "grown", "shrunk", "twice"])
    func aChangedFileTravelsAsItsNewPiecesAndIsRebuilt(_ name: String) throws {
        let change = try #require(Self.changes[name])
        let (size, rebuilt, expected) = try update(change)
        #expect(rebuilt == expected)
        // The new bytes (at most 100 000), the chunks the edges touch (up to 64 KiB each) and the rest
        // little: far below the 1 MiB file.
        #expect(size < 300_000, "a delta of \(size) bytes for \(name)")
    }

    /// A hand-made delta for base `a.bin` ("0123456789"): `Patches/b.bin` with `recipe`, and an index that
    /// lists b.bin as `claimed`.
    func hostile(_ recipe: String, literal: String = "", claimed: Data) throws -> AssetPackFormatError? {
        let scratch = try Scratch()
        let installed = try folder(scratch, "installed")
        try scratch.write("installed/a.bin", "0123456789")
        let baseIndex = try PackIndex.decode(
            ArchiveFixture.index([("a.bin", Data("0123456789".utf8))], id: "Hostile"),
            source: "base"
        )
        let delta = try scratch.write(
            "hostile.delta",
            ArchiveFixture.rawTar([
                ("Delta.json", [:], PackDelta.Binding.hostile.entryBytes),
                ("Patches/b.bin", [:], Data((recipe + "\n" + literal).utf8)),
                ("Index.json", [:], ArchiveFixture.index([("a.bin", Data("0123456789".utf8)), ("b.bin", claimed)])),
            ])
        )
        let staging = try folder(scratch, "staging")
        return #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extractDelta(
                delta,
                into: staging,
                limit: 100,
                expecting: .hostile,
                base: base(baseIndex, in: installed)
            )
        }
    }

    @Test func aRecipeThatRebuildsTheFileItClaimsIsFollowed() throws {
        // The control for the hostile cases below: a well-formed recipe over the same base installs.
        let scratch = try Scratch()
        let installed = try folder(scratch, "installed")
        try scratch.write("installed/a.bin", "0123456789")
        let baseIndex = try PackIndex.decode(ArchiveFixture.index([("a.bin", Data("0123456789".utf8))]), source: "b")
        let again = #"{"from":"a.bin","length":3,"offset":7}"#
        let recipe = #"{"pieces":[\#(again),{"length":2},\#(again)],"size":8}"#
        let delta = try scratch.write(
            "fine.delta",
            ArchiveFixture.rawTar([
                ("Delta.json", [:], PackDelta.Binding.hostile.entryBytes),
                ("Patches/b.bin", [:], Data((recipe + "\nXY").utf8)),
                (
                    "Index.json", [:],
                    ArchiveFixture.index([("a.bin", Data("0123456789".utf8)), ("b.bin", Data("789XY789".utf8))])
                ),
            ])
        )
        let staging = try folder(scratch, "staging")
        let (_, absent) = try PackArchiveReader.extractDelta(
            delta,
            into: staging,
            limit: 100,
            expecting: .hostile,
            base: base(baseIndex, in: installed)
        )
        #expect(absent.map(\.path) == ["a.bin"])
        #expect(try scratch.read(staging.appending("b.bin")) == Data("789XY789".utf8))
    }

    @Test func aPieceTheBaseLacksIsRefused() throws {
        let error = try hostile(
            #"{"pieces":[{"from":"../escape.bin","length":4,"offset":0}],"size":4}"#,
            claimed: Data("0123".utf8)
        )
        #expect(error?.message.contains("which the base version does not hold") == true, "\(error?.message ?? "")")
        #expect(error?.isRuleViolation == true)
        let past = try hostile(
            #"{"pieces":[{"from":"a.bin","length":4,"offset":8}],"size":4}"#,
            claimed: Data("89".utf8)
        )
        #expect(past?.message.contains("outside the base version's a.bin") == true, "\(past?.message ?? "")")
    }

    @Test func aRecipeThatRebuildsAnotherDigestIsRefused() throws {
        // Pieces that are all there, rebuilding bytes the index does not say: refused before anything commits.
        let error = try hostile(
            #"{"pieces":[{"from":"a.bin","length":4,"offset":0}],"size":4}"#,
            claimed: Data("9999".utf8)
        )
        #expect(error?.message.contains("holds b.bin with 4 bytes and SHA-256") == true, "\(error?.message ?? "")")
    }

    @Test func aRecipeLargerThanTheInstallSizeIsRefusedBeforeAByteIsWritten() throws {
        let error = try hostile(
            #"{"pieces":[{"from":"a.bin","length":4,"offset":0}],"size":4000}"#,
            claimed: Data("0123".utf8)
        )
        #expect(error?.message.contains("more than its declared install size") == true, "\(error?.message ?? "")")
    }

    @Test func theIndexTravelsAsItsChangedRows() throws {
        // 2 000 files, one changed: the delta holds that row, not 2 000.
        let scratch = try Scratch()
        for number in 0..<2_000 { try scratch.write("big/file \(number).txt", "content of \(number)") }
        try scratch.write("Big.json", Self.manifest)
        let v1 = try build(scratch, "v1")
        try scratch.write("big/file 7.txt", "changed")
        let v2 = try build(scratch, "v2")
        let delta = scratch.root.appending("d.delta")
        let binding = PackDelta.Binding(assetPackID: "Big", fromSHA256: "1", toSHA256: "2")
        let built = try PackDelta.build(
            full: v2.archive,
            target: v2.index,
            base: v1.index,
            binding: binding,
            to: delta,
            options: PackBuildOptions()
        )
        #expect(built.downloadSize < 2_000, "\(built.downloadSize)")
        let staging = try folder(scratch, "staging")
        let copy = scratch.root.appending("index copy.json")
        let (index, absent) = try PackArchiveReader.extractDelta(
            delta,
            into: staging,
            limit: v2.index.installSize,
            expecting: binding,
            base: base(v1.index, in: staging),
            indexCopy: copy
        )
        #expect(index == v2.index)
        #expect(absent.count == 1_999)
        #expect(try scratch.read(copy) == (try v2.index.encoded()))
        // Index changes that do not rebuild the digest they claim (another base) are refused.
        var other = v1.index
        other.files.removeLast()
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackArchiveReader.extractDelta(
                delta,
                into: try folder(scratch, "other"),
                expecting: binding,
                base: base(other, in: staging)
            )
        }
        #expect(error?.message.contains("rebuild an index of another SHA-256") == true, "\(error?.message ?? "")")
    }

    /// The chunks of `data` fed `step` bytes at a time; the chunker holds no more than two windows between
    /// feeds, however long the stream (it cuts a feed's chunks where they are).
    func chunks(_ data: Data, feedingBy step: Int) -> [ContentChunker.Chunk] {
        var chunker = ContentChunker()
        var result: [ContentChunker.Chunk] = []
        var at = 0
        var held = 0
        while at < data.count {
            let end = min(data.count, at + step)
            result += data[at..<end].withUnsafeBytes { chunker.feed($0) }
            held = max(held, chunker.bufferedBytes)
            at = end
        }
        #expect(held <= 2 * ContentChunker.maximumSize, "held \(held) bytes fed \(step) at a time")
        return result + chunker.finish()
    }

    @Test func chunksFollowTheContentNotTheOffsetOrHowTheBytesArrive() throws {
        let data = Scratch.noise(2 << 20, seed: 11)
        let whole = chunks(data, feedingBy: data.count)
        // The same cuts however the stream is split into blocks.
        for step in [1_000, 4_095, 65_535, 65_536, 65_537, 70_001, 131_075, 1 << 20] {
            let fed = chunks(data, feedingBy: step)
            let same = fed == whole  // (not in the expectation: it would print both lists)
            #expect(same, "fed \(step) bytes at a time: \(fed.count) chunks where \(whole.count) were cut whole")
        }
        // The same cuts for ever: chunk lists kept on servers name chunks by them (the lengths of this stream's
        // chunks, as 784e356 cut them).
        let lengths = whole.map(\.length)
        #expect(lengths.count == 107 && lengths.prefix(8) == [42199, 14966, 16443, 18479, 30216, 11137, 17639, 12451])
        #expect(whole.reduce(0) { $0 + $1.length } == data.count)
        for chunk in whole.dropLast() {
            #expect(chunk.length >= ContentChunker.minimumSize && chunk.length <= ContentChunker.maximumSize)
        }
        let average = data.count / whole.count
        #expect(average > 8 << 10 && average < 32 << 10, "average chunk \(average) bytes")
        // 1 000 bytes inserted at the start: the cuts move with the data, and all but the first chunk or two
        // are the same chunks (fixed blocks would all differ).
        let shifted = Set(chunks(Scratch.noise(1_000, seed: 12) + data, feedingBy: 65_536).map(\.digest))
        let kept = whole.filter { shifted.contains($0.digest) }.count
        #expect(kept >= whole.count - 2, "\(kept) of \(whole.count) chunks found again")
    }

    @Test func aChunkListReadsBackAsItWasWritten() throws {
        let scratch = try Scratch()
        var list = PackChunks()
        list.files[PathKey("a/é.bin")] = chunks(Scratch.noise(300_000, seed: 13), feedingBy: 4_096)
        list.files[PathKey("b.bin")] = chunks(Scratch.noise(70_000, seed: 14), feedingBy: 4_096)
        let file = scratch.root.appending("list.chunks")
        try list.write(to: file)
        #expect(try PackChunks.load(from: file) == list)
        #expect(PackChunks.isCurrentList(at: file))
        try scratch.write("bad.chunks", "BACHUNK1\u{1}")
        #expect(throws: AssetPackFormatError.self) { try PackChunks.load(from: scratch.root.appending("bad.chunks")) }
        // A list of the SHA-256 kind is not read, and is not taken for a current one (it is cut again).
        #expect(!PackChunks.isCurrentList(at: scratch.root.appending("bad.chunks")))
        #expect(!PackChunks.isCurrentList(at: scratch.root.appending("none.chunks")))
        // A FIFO or a link where a list should be is refused unread (a FIFO waited for a writer).
        let fifo = scratch.root.appending("fifo.chunks")
        #expect(mkfifo(fifo.string, 0o600) == 0)
        let refused = #expect(throws: AssetPackFormatError.self) { try PackChunks.load(from: fifo) }
        #expect(!PackChunks.isCurrentList(at: fifo))
        #expect(refused?.message.contains("is a FIFO") == true, "\(refused?.message ?? "")")
        let link = scratch.root.appending("link.chunks")
        #expect(symlink(file.string, link.string) == 0)
        #expect(throws: AssetPackFormatError.self) { try PackChunks.load(from: link) }
    }
}
