import Crypto
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackFormat

/// The fast paths of Apple Archives, each held to the plain way: blocks compressed and decoded on several
/// threads give the bytes one thread gives and report a bad block where one thread reports it; small files
/// packed from one read give the bytes of hashing every file first.
@Suite("Apple Archive fast paths")
struct AppleArchiveFastPathTests {
    /// A pack of about 20 MiB: noise that does not compress, then text that does, so its 4 MiB blocks are two
    /// stored raw, then a run of compressed ones (with a small file in between).
    static func makeSource(_ scratch: Scratch) throws -> PackSource {
        let line = Array(#"{"tile": 12345, "name": "Über/日本語 🎮", "solid": true}\#n"#.utf8)
        var text = [UInt8]()
        while text.count < 6 << 20 { text += line.map { $0 ^ UInt8(truncatingIfNeeded: text.count >> 12) } }
        try scratch.write("Big/a-noise.bin", Scratch.noise(9 << 20, seed: 31))
        try scratch.write("Big/b-text.json", Data(text))
        try scratch.write("Big/c-small.txt", Data("small".utf8))
        try scratch.write("Big/d-text.json", Data(text.prefix(5 << 20 + 123)))
        try scratch.write(
            "Big.json",
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Big"}], "platforms": ["iOS"]}"#
        )
        let manifest = try PackagingManifest.load(from: scratch.root.appending("Big.json"))
        return try PackSource.resolve(manifest, root: scratch.root)
    }

    static func build(
        _ source: PackSource,
        _ scratch: Scratch,
        _ compression: PackCompression,
        threads: Int
    ) throws -> (bytes: Data, sha256: String, index: PackIndex) {
        let output = scratch.root.appending("\(compression.rawValue)-\(threads).aar")
        let options = PackBuildOptions(format: .aar, compression: compression, threads: threads)
        let (built, index) = try PackBuilder.buildIndexed(source, to: output, options: options)
        return (try scratch.read(output), built.sha256, index)
    }

    /// Every run of archive bytes a decoder hands out, fed `bytes` in runs of `feed`, until it ends or throws.
    static func decode(_ bytes: Data, threads: Int, feed: Int = 65_521) -> (bytes: Data, error: String?) {
        var offset = 4
        let held = UnsafeMutableRawBufferPointer.allocate(byteCount: feed, alignment: 1)
        defer { held.deallocate() }
        let cursor = ChunkCursor {
            let count = min(feed, bytes.count - offset)
            bytes.copyBytes(to: held, from: offset..<offset + count)
            offset += count
            return UnsafeRawBufferPointer(rebasing: held[0..<count])
        }
        var out = Data()
        do {
            let decoder = try PBZDecoder(cursor, magic: bytes[3], name: "test.aar", threads: threads)
            while true {
                let run = try decoder.next()
                if run.isEmpty { return (out, nil) }
                out.append(contentsOf: run)
            }
        } catch {
            return (out, "\(error)")
        }
    }

    /// `plain` as an LZFSE pbz stream of blocks of `blockSize`.
    static func pbz(_ plain: Data, blockSize: Int) -> Data {
        func bigEndian(_ value: Int) -> Data { Data(AppleArchiveWriter.bigEndian(UInt64(value))) }
        var out = Data("pbze".utf8) + bigEndian(blockSize)
        let job = BlockCodecJob()
        for start in stride(from: 0, to: plain.count, by: blockSize) {
            let count = min(blockSize, plain.count - start)
            job.reserve(input: count, output: count - 1)
            plain.copyBytes(to: job.input, from: start..<start + count)
            job.run(PackCompression.lzfse.appleAlgorithm, encode: true)
            let size = job.wait()
            out += bigEndian(count) + bigEndian(size > 0 ? size : count)
            out += size > 0 ? Data(job.output[0..<size]) : plain[start..<start + count]
        }
        return out
    }

    /// Where each block of a pbz stream starts, with its raw and stored sizes.
    static func blocks(_ bytes: Data) -> [(offset: Int, raw: Int, stored: Int)] {
        func number(_ at: Int) -> Int { bytes[at..<at + 8].reduce(0) { $0 << 8 | Int($1) } }
        var found: [(Int, Int, Int)] = []
        var at = 12
        while at < bytes.count {
            found.append((at, number(at), number(at + 8)))
            at += 16 + number(at + 8)
        }
        return found
    }

    @Test(arguments: [PackCompression.lzfse, .zlib])
    func compressingOnSeveralThreadsWritesTheBytesOfOne(compression: PackCompression) throws {
        let scratch = try Scratch()
        let source = try Self.makeSource(scratch)
        let serial = try Self.build(source, scratch, compression, threads: 1)
        let blocks = Self.blocks(serial.bytes)
        // The fixture does what it is for: several blocks, some compressed, some stored raw.
        #expect(blocks.count >= 4)
        #expect(blocks.contains { $0.stored < $0.raw } && blocks.contains { $0.stored == $0.raw })
        for threads in [2, 3] {
            let parallel = try Self.build(source, scratch, compression, threads: threads)
            #expect(firstDifference(parallel.bytes, serial.bytes) == nil, "\(threads) threads")
            #expect(parallel.sha256 == serial.sha256 && parallel.index == serial.index)
        }
    }

    @Test func decodingAheadOnSeveralThreadsHandsOutTheBytesOfOne() throws {
        let scratch = try Scratch()
        let source = try Self.makeSource(scratch)
        let archive = try Self.build(source, scratch, .lzfse, threads: 2).bytes
        // The archive's own bytes, uncompressed: a plain Apple Archive of the same content.
        let plain = try Self.build(source, scratch, .none, threads: 1).bytes
        for threads in [1, 2, 3] {
            for feed in [65_521, 4 << 20, 1 << 30] {
                let decoded = Self.decode(archive, threads: threads, feed: feed)
                #expect(decoded.error == nil)
                #expect(
                    firstDifference(decoded.bytes, plain) == nil,
                    "\(threads) threads, fed \(feed) bytes at a time"
                )
            }
        }
        // Blocks of 10 MiB (other writers' blocks are larger than Apple's 4 MiB): past the first, the read-ahead
        // holds a block back until the ones before it are taken, and the bytes are the same.
        let large = Self.pbz(plain, blockSize: 10 << 20)
        for threads in [1, 2, 3] {
            let decoded = Self.decode(large, threads: threads)
            #expect(decoded.error == nil && firstDifference(decoded.bytes, plain) == nil, "\(threads) threads")
        }
        // And it extracts: every file the bytes it was packed from.
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        let output = scratch.root.appending("lzfse-2.aar")
        let index = try PackArchiveReader.extract(output, into: destination)
        #expect(index.fileCount == 4)
        for file in source.files {
            #expect(try scratch.read(destination.appending(file.path)) == scratch.read(file.source), "\(file.path)")
        }
    }

    /// A block that does not decode, one whose raw size lies, one whose sizes are impossible, and a stream cut
    /// inside a block: the bytes before are handed out and the error names the block, on any number of threads
    /// (the ones ahead of the caller decoded or read early are reported only when it gets there).
    @Test func aBadBlockIsReportedWhereOneThreadReportsIt() throws {
        let scratch = try Scratch()
        let archive = try Self.build(try Self.makeSource(scratch), scratch, .lzfse, threads: 2).bytes
        // A compressed block with two compressed ones before it: decoded ahead, while the caller is before it.
        let blocks = Self.blocks(archive)
        let number = try #require(
            blocks.indices.dropFirst(2).first { at in (at - 2...at).allSatisfy { blocks[$0].stored < blocks[$0].raw } }
        )
        let block = blocks[number]
        var garbled = archive
        garbled[block.offset + 16] ^= 0xFF  // the first byte of its LZFSE magic
        var lying = archive
        lying[block.offset + 7] &+= 1  // one more raw byte than the block decodes to
        var impossible = archive
        impossible[block.offset + 13] = 0xFF  // stored in more bytes than it holds: refused at its header
        let cut = Data(archive.prefix(block.offset + 16 + block.stored / 2))
        for (what, bytes) in [("garbled", garbled), ("lying", lying), ("impossible", impossible), ("cut", cut)] {
            let serial = Self.decode(bytes, threads: 1)
            let error = try #require(serial.error, "\(what)")
            #expect(error.contains("block (\(number))") || error.contains("block \(number)"), "\(what): \(error)")
            #expect(serial.bytes.count == blocks[..<number].reduce(0) { $0 + $1.raw }, "\(what)")
            for threads in [2, 3] {
                let parallel = Self.decode(bytes, threads: threads)
                #expect(parallel.error == serial.error, "\(what), \(threads) threads")
                #expect(firstDifference(parallel.bytes, serial.bytes) == nil, "\(what), \(threads) threads")
            }
        }
    }

    /// Files up to ``PackBuilder/heldFileLimit`` are read once and held until their digest is known; the
    /// archive is the one the plain way writes: every file hashed first, then its header and its bytes.
    @Test func filesPackedFromOneReadAreWrittenAsHashingFirstWritesThem() throws {
        let scratch = try Scratch()
        let limit = Int(PackBuilder.heldFileLimit)
        let sizes = [0, 1, 65_536, limit - 1, limit, limit + 1, 100]
        for (number, size) in sizes.enumerated() {
            try scratch.write("Big/Über/日本語 🎮\(number).bin", Scratch.noise(size, seed: UInt64(number + 90)))
        }
        try scratch.write(
            "Big.json",
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Big"}], "platforms": ["iOS"]}"#
        )
        let source = try PackSource.resolve(
            try PackagingManifest.load(from: scratch.root.appending("Big.json")),
            root: scratch.root
        )
        let built = try Self.build(source, scratch, .lzfse, threads: 1)
        let expected = scratch.root.appending("plain.aar")
        let fd = try FileDescriptor.open(
            expected,
            .writeOnly,
            options: [.create, .truncate],
            permissions: .ownerReadWrite
        )
        let (_, sha256, _) = try fd.closeAfter {
            try withAppleArchiveWriter(to: fd, compression: .lzfse, threads: 1) { writer in
                let manifest = try scratch.read(FilePath(source.manifestFile))
                try writer.addFile(
                    named: "Manifest.json",
                    size: Int64(manifest.count),
                    sha256: Array(SHA256.hash(data: manifest))
                ) {
                    try manifest.withUnsafeBytes($0)
                }
                for file in source.files {
                    let bytes = try scratch.read(file.source)
                    let name = "Contents/" + file.path
                    try writer.addFile(named: name, size: file.size, sha256: Array(SHA256.hash(data: bytes))) {
                        try bytes.withUnsafeBytes($0)
                    }
                }
            }
        }
        #expect(firstDifference(built.bytes, try scratch.read(expected)) == nil)
        #expect(built.sha256 == sha256)
        #expect(
            built.index.files.map(\.sha256)
                == source.files.map { FileDigest.sha256(of: (try? scratch.read($0.source)) ?? Data()) }
        )
    }
}
