import Crypto
import Foundation
import SystemPackage

/// The content-defined chunks (see ``ContentChunker``) of the files of one pack version that are large
/// enough to be sent as recipes: what a server keeps of a version so that a later delta can tell which
/// pieces of a changed file the clients of this version already hold, without keeping the version's bytes.
/// Kept as a file of its own beside the version's index (binary: 40 bytes a chunk, 2.5 MiB for a 1 GiB pack).
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

    private static let magic = Array("BACHUNK1".utf8)

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
                out += chunk.sha256.bytes
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
                guard bytes.count - at >= 32, let digest = ChunkDigest(bytes: bytes[at..<at + 32]) else { throw bad }
                at += 32
                chunks.append(ContentChunker.Chunk(length: size, sha256: digest))
            }
            result.files[PathKey(path)] = chunks
        }
        return result
    }
}

/// A chunk's SHA-256 as four words: hashable and compared without allocating.
public struct ChunkDigest: Sendable, Hashable {
    private var words: (UInt64, UInt64, UInt64, UInt64)

    /// The digest of some bytes.
    public init(_ digest: SHA256.Digest) {
        words = digest.withUnsafeBytes { Self.words(of: $0) }
    }

    /// A digest from its 32 bytes, or `nil` for another count.
    init?(bytes: ArraySlice<UInt8>) {
        guard bytes.count == 32 else { return nil }
        words = bytes.withUnsafeBytes { Self.words(of: $0) }
    }

    private static func words(of raw: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64) {
        func word(_ at: Int) -> UInt64 {
            var value: UInt64 = 0
            for shift in 0..<8 { value |= UInt64(raw[at + shift]) << (8 * shift) }
            return value
        }
        return (word(0), word(8), word(16), word(24))
    }

    /// Its 32 bytes.
    var bytes: [UInt8] {
        [words.0, words.1, words.2, words.3].flatMap { word in
            (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) }
        }
    }

    public static func == (left: ChunkDigest, right: ChunkDigest) -> Bool {
        left.words == right.words
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }
}
