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
///
/// Compressed blocks are read ahead and decoded by ``BlockCodecWorkers`` (one thread per core, started at
/// the second compressed block) while the caller uses the block before: at most `threads` blocks wait, and
/// past the first of them no more than ``readAheadBytes`` (stored and decoded, counted together), so a stream
/// of 64 MiB blocks reads ahead no further than one of 4 MiB blocks. With two threads and Apple's 4 MiB
/// blocks that is 24 MiB in all, with the block the caller holds (8 MiB serially). A stored block stops the reading
/// ahead: it is handed on from the input as it arrives, once the blocks before it are. A block that cannot
/// be read or decoded is reported when the caller reaches it, as a serial decoder would.
final class PBZDecoder {
    /// The largest block size accepted: Apple's tools write 4 MiB blocks; a header asking for more than this
    /// is refused before anything is allocated.
    static let maximumBlockSize = 64 << 20
    /// The most bytes read ahead past the block the caller is at: two blocks of 4 MiB, stored and decoded.
    static let readAheadBytes = 16 << 20

    /// A block read ahead: being decoded, stored raw (its bytes still in the input), or a failure to report.
    private enum Ahead {
        case decoding(BlockCodecJob, number: Int)
        case stored(Int)
        case failed(any Error)
    }

    let compression: PackCompression
    private let algorithm: UInt32
    private let blockSize: Int
    private let input: ChunkCursor
    private let name: String
    private let threads: Int
    private var workers: BlockCodecWorkers?
    private var ahead: [Ahead] = []
    private var aheadBytes = 0
    /// Sizes of a block whose header was read but that did not fit in the read-ahead yet.
    private var held: (raw: Int, stored: Int)?
    private var spare: [BlockCodecJob] = []
    /// The job whose output the last call handed out: spare again at the next call.
    private var handedOut: BlockCodecJob?
    private var inputEnded = false
    private var blocks = 0
    /// The bytes left of a stored block, handed on as they arrive rather than gathered first (a stored block is
    /// its own raw bytes: gathering it cost a copy, and held the extraction up until the whole block was in).
    private var storedLeft = 0

    /// Reads the stream's header.
    /// - Throws: ``AssetPackFormatError`` `.corruptPack`, or `.archive` for an algorithm this code cannot read.
    /// - Parameters:
    ///   - input: The stream after its first four bytes (`pbz` and `magic`).
    ///   - magic: The algorithm's byte.
    ///   - threads: The threads that decode blocks ahead: 1 decodes each on the calling thread when reached.
    init(_ input: ChunkCursor, magic: UInt8, name: String, threads: Int = BlockCodecWorkers.defaultCount) throws {
        self.input = input
        self.name = name
        self.threads = threads
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
    }

    deinit {
        // A stream given up part way: no worker may still be decoding once the jobs' buffers go.
        workers?.close()
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
        if let job = handedOut {
            handedOut = nil
            aheadBytes -= job.inputCount + job.outputCapacity
            spare.append(job)
        }
        readAhead()
        guard !ahead.isEmpty else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        switch ahead.removeFirst() {
        case .failed(let error):
            throw error
        case .stored(let count):
            storedLeft = count
            return try next()
        case .decoding(let job, let number):
            handedOut = job
            try check(decoded: job.wait(), job, number)
            return UnsafeRawBufferPointer(rebasing: job.output[0..<job.outputCapacity])
        }
    }

    /// Reads block headers and compressed blocks and starts decoding them, until `threads` wait, the read-ahead
    /// is full, or a stored block, the end or a failure comes. Failures are queued, not thrown.
    private func readAhead() {
        while !inputEnded, ahead.count < max(1, threads) {
            if case .stored = ahead.last { return }
            if case .failed = ahead.last { return }
            do {
                guard let (rawCount, storedCount) = try held ?? readSizes() else {
                    inputEnded = true
                    return
                }
                held = nil
                if storedCount == rawCount {
                    blocks += 1
                    ahead.append(.stored(rawCount))
                    return
                }
                guard ahead.isEmpty || aheadBytes + rawCount + storedCount <= Self.readAheadBytes else {
                    held = (rawCount, storedCount)
                    return
                }
                ahead.append(.decoding(try readBlock(raw: rawCount, stored: storedCount), number: blocks - 1))
            } catch {
                ahead.append(.failed(error))
            }
        }
    }

    /// The next block's raw and stored sizes, checked; `nil` at the end of the stream.
    private func readSizes() throws -> (raw: Int, stored: Int)? {
        var sizes = [UInt8](repeating: 0, count: 16)
        let count = try sizes.withUnsafeMutableBytes { try input.read(into: $0) }
        if count == 0 { return nil }
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
        return (Int(rawSize), Int(storedSize))
    }

    /// Reads a compressed block into a job and starts decoding it: on the workers from the second block on
    /// (when there are threads for them), or here.
    private func readBlock(raw rawCount: Int, stored storedCount: Int) throws -> BlockCodecJob {
        let job = spare.popLast() ?? BlockCodecJob()
        job.reserve(input: storedCount, output: rawCount)
        let read = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: job.input[0..<storedCount]))
        guard read == storedCount else {
            spare.append(job)
            throw AppleArchiveError.corrupt(name, "ends inside block \(blocks) (\(read) of \(storedCount) bytes)")
        }
        blocks += 1
        aheadBytes += rawCount + storedCount
        if workers == nil, threads > 1, blocks > 1 {
            workers = BlockCodecWorkers(count: threads, algorithm: algorithm, encode: false)
        }
        if let workers {
            workers.start(job)
        } else {
            job.run(algorithm, encode: false)
        }
        return job
    }

    private func check(decoded: Int, _ job: BlockCodecJob, _ number: Int) throws {
        let rawCount = job.outputCapacity
        guard decoded != rawCount else { return }
        let why =
            switch decoded {
            case Int(AC_ERROR_OUTPUT_FULL): "decodes to more than the \(rawCount) bytes its header says"
            case Int(AC_ERROR_UNSUPPORTED): "uses a codec this build cannot decode"
            case Int(AC_ERROR_NO_MEMORY): "could not be decoded: out of memory"
            case ..<0: "is not valid \(compression.rawValue) data"
            default: "decodes to \(decoded) bytes, not the \(rawCount) its header says"
            }
        throw AppleArchiveError.corrupt(name, "has a block (\(number)) that \(why)")
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
