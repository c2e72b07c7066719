import CAppleCompression
import Foundation

// Apple Archive (`.aar`), read as a stream: a "pbz" stream of compressed blocks (or a plain archive), holding
// entries that are each an `AA01` header of typed fields followed by the entry's blobs. The layout is
// documented in the README's "Apple Archive" section with its sources; nothing here holds an archive whole.

/// Hands out the bytes of a source of chunks (a file read 1 MiB at a time, or a download) in exact runs.
final class ChunkCursor {
    private let source: ArchiveByteSource
    private var chunk = UnsafeRawBufferPointer(start: nil, count: 0)
    private var offset = 0
    private var ended = false
    /// The bytes handed out so far (for messages: where in the stream something went wrong).
    private(set) var position: Int64 = 0

    init(_ source: @escaping ArchiveByteSource) { self.source = source }

    /// Whether another byte follows; pulls the next chunk when the current one is used up.
    func hasMore() throws -> Bool {
        while offset == chunk.count {
            if ended { return false }
            chunk = try source()
            offset = 0
            if chunk.isEmpty { ended = true }
        }
        return true
    }

    /// Copies the next bytes into `target` until it is full or the source ends.
    /// - Returns: The bytes copied (fewer than `target.count` only at the end).
    func read(into target: UnsafeMutableRawBufferPointer) throws -> Int {
        var filled = 0
        while filled < target.count, try hasMore(), let from = chunk.baseAddress, let to = target.baseAddress {
            let count = min(target.count - filled, chunk.count - offset)
            (to + filled).copyMemory(from: from + offset, byteCount: count)
            filled += count
            offset += count
        }
        position += Int64(filled)
        return filled
    }

    /// The next run of at most `limit` bytes, without copying it: valid until the next call on this cursor;
    /// empty at the end.
    func nextRun(upTo limit: Int) throws -> UnsafeRawBufferPointer {
        guard limit > 0, try hasMore(), let base = chunk.baseAddress else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        let count = min(limit, chunk.count - offset)
        offset += count
        position += Int64(count)
        return UnsafeRawBufferPointer(start: base + offset - count, count: count)
    }

    /// Hands the next `count` bytes to `body` in runs, without copying them.
    /// - Returns: The bytes handed out (fewer than `count` only at the end).
    @discardableResult
    func stream(_ count: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        var left = count
        while left > 0, try hasMore(), let from = chunk.baseAddress {
            let run = Int(min(left, Int64(chunk.count - offset)))
            offset += run
            left -= Int64(run)
            position += Int64(run)
            try body(UnsafeRawBufferPointer(start: from + offset - run, count: run))
        }
        return count - left
    }
}

/// The first bytes of an Apple Archive: a pbz stream (`pbz` and the algorithm's byte) or a plain archive.
enum AppleArchiveMagic {
    /// Whether `bytes` (the first four of a file or download) start an Apple Archive.
    static func matches(_ bytes: some Collection<UInt8>) -> Bool {
        let head = Array(bytes.prefix(4))
        guard head.count == 4 else { return false }
        return head[0...2].elementsEqual("pbz".utf8) || head.elementsEqual("AA01".utf8)
            || head.elementsEqual("YAA1".utf8)
    }
}

/// Decodes a pbz stream into its blocks of archive bytes.
///
/// After the four-byte magic come the block size (a big-endian UInt64) and then blocks, each a big-endian
/// UInt64 raw size, a big-endian UInt64 stored size and the stored bytes: compressed with the stream's
/// algorithm, or raw when the stored size equals the raw size.
final class PBZDecoder {
    /// The largest block size accepted: Apple's tools write 4 MiB blocks; a header asking for more than this
    /// is refused before anything is allocated.
    static let maximumBlockSize = 64 << 20

    let compression: PackCompression
    private let algorithm: UInt32
    private let blockSize: Int
    private let input: ChunkCursor
    private let name: String
    private var stored: UnsafeMutableRawBufferPointer
    private var raw: UnsafeMutableRawBufferPointer
    private var blocks = 0
    /// The bytes left of a stored block, handed on as they arrive rather than gathered first (a stored block is
    /// its own raw bytes: gathering it cost a copy, and held the extraction up until the whole block was in).
    private var storedLeft = 0

    /// Reads the stream's header.
    /// - Throws: ``AssetPackFormatError`` `.corruptPack`, or `.archive` for an algorithm this code cannot read.
    /// - Parameters:
    ///   - input: The stream after its first four bytes (`pbz` and `magic`).
    ///   - magic: The algorithm's byte.
    init(_ input: ChunkCursor, magic: UInt8, name: String) throws {
        self.input = input
        self.name = name
        var header = [UInt8](repeating: 0, count: 8)
        let count = try header.withUnsafeMutableBytes { try input.read(into: $0) }
        guard count == 8 else { throw AppleArchiveError.corrupt(name, "ends inside its pbz header") }
        guard let compression = PackCompression.appleArchive(magic: magic) else {
            if magic == UInt8(ascii: "b") {
                throw AssetPackFormatError(
                    code: .archive,
                    message:
                        "\(name) is an Apple Archive compressed with LZBITMAP, which ba-mock cannot read. Fix: "
                        + "write it again with LZFSE (`aa archive -a lzfse`, or `ba-mock package --format aar`)"
                )
            }
            throw AssetPackFormatError(
                code: .archive,
                message:
                    "\(name) is a pbz stream with the unknown algorithm byte 0x\(String(magic, radix: 16)) "
                    + "('\(Character(Unicode.Scalar(magic)))'); ba-mock reads LZFSE, LZMA, zlib, LZ4 and stored blocks"
            )
        }
        self.compression = compression
        self.algorithm = compression.appleAlgorithm
        let size = header.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard size > 0, size <= UInt64(Self.maximumBlockSize) else {
            throw AppleArchiveError.corrupt(
                name,
                "declares a block size of \(size) bytes (ba-mock reads blocks of 1 byte to "
                    + "\(ByteFormat.string(Int64(Self.maximumBlockSize))))"
            )
        }
        blockSize = Int(size)
        stored = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        raw = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    }

    deinit {
        stored.deallocate()
        raw.deallocate()
    }

    /// The next run of archive bytes (a decoded block, or part of a stored one), valid until the next call;
    /// empty at the end of the stream.
    func next() throws -> UnsafeRawBufferPointer {
        if storedLeft > 0 {
            let run = try input.nextRun(upTo: storedLeft)
            guard !run.isEmpty else {
                throw AppleArchiveError.corrupt(name, "ends inside block \(blocks - 1) (\(storedLeft) bytes short)")
            }
            storedLeft -= run.count
            return run
        }
        var sizes = [UInt8](repeating: 0, count: 16)
        let count = try sizes.withUnsafeMutableBytes { try input.read(into: $0) }
        if count == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        guard count == 16 else { throw AppleArchiveError.corrupt(name, "ends inside the header of block \(blocks)") }
        let rawSize = sizes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let storedSize = sizes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        // Compared as UInt64 before any conversion: a size near 2^64 cannot overflow or allocate.
        // Each block's own sizes are honoured, within the absolute bound: other writers put the whole archive in
        // one block under a header of 4 MiB (9 MiB was seen), and Apple's format does not forbid it.
        guard rawSize > 0, rawSize <= UInt64(Self.maximumBlockSize), storedSize > 0 else {
            throw AppleArchiveError.corrupt(
                name,
                "has a block (\(blocks)) of \(rawSize) bytes stored in \(storedSize), outside what ba-mock reads: 1 "
                    + "byte to \(ByteFormat.string(Int64(Self.maximumBlockSize))) (its header declares blocks of "
                    + "\(blockSize) bytes)"
            )
        }
        guard storedSize <= rawSize else {
            throw AppleArchiveError.corrupt(
                name,
                "has a block (\(blocks)) stored in \(storedSize) bytes, more than the \(rawSize) it holds (a block "
                    + "that does not shrink is stored raw)"
            )
        }
        let rawCount = Int(rawSize)
        let storedCount = Int(storedSize)
        if storedCount == rawCount {
            blocks += 1
            storedLeft = rawCount
            return try next()
        }
        if stored.count < storedCount { Self.grow(&stored, to: storedCount) }
        let read = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: stored[0..<storedCount]))
        guard read == storedCount else {
            throw AppleArchiveError.corrupt(name, "ends inside block \(blocks) (\(read) of \(storedCount) bytes)")
        }
        blocks += 1
        if raw.count < rawCount { Self.grow(&raw, to: rawCount) }
        let decoded = ac_block_decode(
            algorithm,
            raw.baseAddress?.assumingMemoryBound(to: UInt8.self),
            rawCount,
            stored.baseAddress?.assumingMemoryBound(to: UInt8.self),
            storedCount
        )
        guard decoded == rawCount else {
            let why =
                switch decoded {
                case Int(AC_ERROR_OUTPUT_FULL): "decodes to more than the \(rawCount) bytes its header says"
                case Int(AC_ERROR_UNSUPPORTED): "uses a codec this build cannot decode"
                case Int(AC_ERROR_NO_MEMORY): "could not be decoded: out of memory"
                case ..<0: "is not valid \(compression.rawValue) data"
                default: "decodes to \(decoded) bytes, not the \(rawCount) its header says"
                }
            throw AppleArchiveError.corrupt(name, "has a block (\(blocks - 1)) that \(why)")
        }
        return UnsafeRawBufferPointer(rebasing: raw[0..<rawCount])
    }

    private static func grow(_ buffer: inout UnsafeMutableRawBufferPointer, to count: Int) {
        buffer.deallocate()
        buffer = .allocate(byteCount: count, alignment: 64)
    }
}

/// The errors of Apple Archive reading.
enum AppleArchiveError {
    static func corrupt(_ name: String, _ problem: String) -> AssetPackFormatError {
        AssetPackFormatError(code: .corruptPack, message: "Apple Archive \(name) \(problem)")
    }

    /// A rule of packs broken (a link, a device): the same bytes would break it again.
    static func rule(_ name: String, _ problem: String) -> AssetPackFormatError {
        var error = corrupt(name, problem)
        error.isRuleViolation = true
        return error
    }
}
