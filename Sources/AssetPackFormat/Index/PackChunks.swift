import CXXHash
import Foundation
import SystemPackage

/// The content-defined chunks (see ``ContentChunker``) of the files of one pack version that are large
/// enough to be sent as recipes: what a server keeps of a version so that a later delta can tell which
/// pieces of a changed file the clients of this version already hold, without keeping the version's bytes.
/// Kept as a file of its own beside the version's index (binary: 24 bytes a chunk, 1.5 MiB for a 1 GiB pack).
public struct PackChunks: Sendable, Hashable {
    /// Each chunked file's chunks, in order, by path.
    public var files: [PathKey: [ContentChunker.Chunk]] = [:]

    public init() {}

    /// Chunks every file of at least ``ContentChunker/wholeFileBelow`` bytes in a pack archive.
    /// - Throws: ``AssetPackFormatError`` (`.io`, `.archive`).
    public static func compute(archive: FilePath) throws -> PackChunks {
        var result = PackChunks()
        try withArchiveReader(at: archive) { reader in
            while let header = try reader.next() {
                guard header.name.hasBytePrefix(PackPath.contentsPrefix), header.size >= ContentChunker.wholeFileBelow
                else { continue }
                let path = String(Substring(header.name.utf8.dropFirst(PackPath.contentsPrefix.utf8.count)))
                var chunker = ContentChunker()
                var chunks: [ContentChunker.Chunk] = []
                try reader.readData { chunks += chunker.feed($0) }
                chunks += chunker.finish()
                result.files[PathKey(path)] = chunks
            }
        }
        return result
    }

    /// "BACHUNK1" lists named chunks by SHA-256; they are not read any more (a version listed so is chunked
    /// again when built, or its deltas send changed files whole).
    private static let magic = Array("BACHUNK2".utf8)

    /// Whether `file` is a list this version reads (a list of the SHA-256 kind, or none, is not).
    public static func isCurrentList(at file: FilePath) -> Bool {
        guard let fd = try? FileDescriptor.open(file, .readOnly, options: [.closeOnExec, .noFollow, .nonBlocking])
        else { return false }
        defer { try? fd.close() }
        var head = [UInt8](repeating: 0, count: magic.count)
        let count = (try? head.withUnsafeMutableBytes { try fd.read(into: $0) }) ?? 0
        return count == magic.count && head == magic
    }

    /// Writes the list atomically (paths in byte order: the same list gives the same bytes).
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public func write(to file: FilePath) throws {
        var out = Self.magic
        func append(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { out += $0 } }
        for key in files.keys.sorted() {
            let chunks = files[key] ?? []
            append(UInt64(key.path.utf8.count))
            out += key.path.utf8
            append(UInt64(chunks.count))
            for chunk in chunks {
                append(UInt64(chunk.length))
                out += chunk.digest.bytes
            }
        }
        try AtomicFile.write(out, to: file)
    }

    /// Reads a list written by ``write(to:)``.
    /// - Throws: ``AssetPackFormatError`` with code `.io`, or `.corruptPack` for a file that is not one.
    public static func load(from file: FilePath) throws -> PackChunks {
        // Opened without waiting and without following a link: a FIFO or a link in its place is refused unread.
        let bytes: [UInt8]
        do {
            switch try FileDescriptor.readSmallRegularFile(file, followingSymlink: false, maximumSize: Int(Int32.max)) {
            case .bytes(let read): bytes = read
            case .notRegular(let kind):
                throw AssetPackFormatError(code: .io, message: "the chunk list \(file) is \(kind), not a file")
            case .tooLarge:
                throw AssetPackFormatError(code: .io, message: "the chunk list \(file) is over 2 GiB")
            }
        } catch let error as AssetPackFormatError {
            throw error
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read the chunk list \(file): \(error)")
        }
        let bad = AssetPackFormatError(code: .corruptPack, message: "\(file) is not a chunk list of ba-mock's")
        guard bytes.starts(with: magic) else { throw bad }
        var at = magic.count
        func number() throws -> Int {
            guard bytes.count - at >= 8 else { throw bad }
            var value: UInt64 = 0
            for shift in 0..<8 { value |= UInt64(bytes[at + shift]) << (8 * shift) }
            at += 8
            guard value <= UInt64(Int32.max) else { throw bad }
            return Int(value)
        }
        var result = PackChunks()
        while at < bytes.count {
            let length = try number()
            guard bytes.count - at >= length else { throw bad }
            let path = String(decoding: bytes[at..<at + length], as: UTF8.self)
            at += length
            let count = try number()
            var chunks: [ContentChunker.Chunk] = []
            chunks.reserveCapacity(min(count, 1 << 20))
            for _ in 0..<count {
                let size = try number()
                guard bytes.count - at >= 16, let digest = ChunkDigest(bytes: bytes[at..<at + 16]) else { throw bad }
                at += 16
                chunks.append(ContentChunker.Chunk(length: size, digest: digest))
            }
            result.files[PathKey(path)] = chunks
        }
        return result
    }
}

/// A chunk's XXH3-128 (xxHash): what names a chunk between two versions of a file, so that a delta can copy it
/// from the installed version instead of sending it.
///
/// Not a cryptographic digest, on purpose. It is never a check: a file rebuilt from chunks is verified by its
/// own SHA-256 from the pack's index, and a delta that fails that check is dropped for the whole pack. Two
/// different chunks with one digest would therefore cost a download, never a wrong file; by chance that has a
/// probability of about 2^-128 per pair, and on purpose only the author of both versions' content could
/// arrange it. What the choice buys: XXH3 runs at tens of GB/s where SHA-256 runs at 0.2-1.8 GB/s (without and
/// with SHA extensions), and a chunk list was a third SHA-256 pass over every byte of a served pack.
public struct ChunkDigest: Sendable, Hashable {
    private var low: UInt64
    private var high: UInt64

    /// The digest of some bytes.
    public init(of bytes: UnsafeRawBufferPointer) {
        let hash = XXH3_128bits(bytes.baseAddress, bytes.count)
        (low, high) = (hash.low64, hash.high64)
    }

    /// A digest from its 16 bytes (little-endian, low word first), or `nil` for another count.
    init?(bytes: ArraySlice<UInt8>) {
        guard bytes.count == 16 else { return nil }
        func word(_ at: Int) -> UInt64 {
            (0..<8).reduce(0) { $0 | UInt64(bytes[bytes.startIndex + at + $1]) << (8 * $1) }
        }
        (low, high) = (word(0), word(8))
    }

    /// Its 16 bytes.
    var bytes: [UInt8] {
        [low, high].flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }
}
