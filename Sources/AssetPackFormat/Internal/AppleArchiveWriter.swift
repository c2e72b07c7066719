import CAppleCompression
import Foundation
import SystemPackage

/// Writes an Apple Archive: `AA01` entries, cut into blocks of a pbz stream and compressed block by block.
///
/// Every entry gets the same normalised metadata (owner 0, mode 0644 or 0755 for folders, no times), so the
/// same content and options always give the same bytes.
///
/// With `threads` above 1, full blocks are compressed by that many ``BlockCodecWorkers`` while the next one
/// fills, and written in order: the same bytes as a serial run (each block is compressed on its own), with at
/// most `threads` blocks in flight beside the one filling (4 MiB in and 4 MiB out each: 24 MiB with 2
/// threads, against 8 MiB serially).
final class AppleArchiveWriter {
    /// The raw size of a block: 4 MiB, what Apple's tools write.
    static let blockSize = 4 << 20

    private let sink: ArchiveSink
    private let compression: PackCompression
    private let algorithm: UInt32
    private let threads: Int
    private var workers: BlockCodecWorkers?
    /// The block being filled (its input), blocks handed to the workers in stream order, and spare ones.
    private var current: BlockCodecJob
    private var inFlight: [BlockCodecJob] = []
    private var spare: [BlockCodecJob] = []
    private var filled = 0
    private var folders: Set<String> = [""]

    /// - Parameter threads: The threads that compress blocks: 1 compresses on the calling thread.
    init(sink: ArchiveSink, compression: PackCompression, threads: Int) {
        self.sink = sink
        self.compression = compression
        self.threads = threads
        algorithm = compression.appleAlgorithm
        current = Self.newJob(compressed: compression.appleMagic != nil && algorithm != 0)
    }

    deinit {
        // A failed build: no worker may still be compressing once the jobs' buffers go.
        workers?.close()
    }

    /// A block's room: its bytes, and their compressed form unless the stream is not compressed.
    private static func newJob(compressed: Bool) -> BlockCodecJob {
        let job = BlockCodecJob()
        job.reserve(input: blockSize, output: compressed ? blockSize : 0)
        return job
    }

    /// Starts the stream (`pbz`, the algorithm's byte and the block size; nothing for an uncompressed archive,
    /// which is its entries alone), then the archive's root folder.
    func start() throws {
        if let magic = compression.appleMagic {
            try emit(Array("pbz".utf8) + [magic] + Self.bigEndian(UInt64(Self.blockSize)))
        }
        try addFolder("")
    }

    /// Writes a folder entry once (with its parents first), when a file inside it is about to be written.
    func addParents(of path: String) throws {
        var parent = Substring(path).utf8
        var missing: [String] = []
        while let slash = parent.lastIndex(of: UInt8(ascii: "/")) {
            parent = parent[..<slash]
            let folder = String(Substring(parent))
            if folders.contains(folder) { break }
            missing.append(folder)
        }
        for folder in missing.reversed() { try addFolder(folder) }
    }

    private func addFolder(_ path: String) throws {
        folders.insert(path)
        try append(Self.header(.directory, path, mode: 0o755).bytes())
    }

    /// The fields every entry has: its type and path, owner 0 and `mode`.
    private static func header(
        _ type: AppleArchiveEntries.EntryType,
        _ path: String,
        mode: UInt64
    ) -> AppleArchiveHeader {
        var header = AppleArchiveHeader()
        header.add(uint: "TYP", UInt64(type.rawValue))
        header.add(string: "PAT", path)
        header.add(uint: "UID", 0)
        header.add(uint: "GID", 0)
        header.add(uint: "MOD", mode)
        return header
    }

    /// Writes one regular file: its header (with `sha256` as its `SH2` field), then the bytes `produce`
    /// appends, which must be `size` bytes.
    @discardableResult
    func addFile<T>(
        named name: String,
        size: Int64,
        sha256: [UInt8],
        _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> T
    ) throws -> T {
        try addParents(of: name)
        var header = Self.header(.regular, name, mode: 0o644)
        header.add(blob: "DAT", UInt64(size))
        header.add(hash: "SH2", sha256)
        try append(header.bytes())
        var remaining = size
        let result = try produce { bytes in
            guard Int64(bytes.count) <= remaining else {
                throw AssetPackFormatError.changedWhilePacking(name, "grew")
            }
            try append(bytes)
            remaining -= Int64(bytes.count)
        }
        guard remaining == 0 else {
            throw AssetPackFormatError.changedWhilePacking(name, "shrank")
        }
        return result
    }

    /// Writes the last block, and every block still being compressed.
    func finish() throws {
        try flush()
        while !inFlight.isEmpty { try writeOldest() }
        workers?.close()
    }

    private func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    private func append(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count, let from = bytes.baseAddress, let to = current.input.baseAddress {
            let count = min(bytes.count - offset, Self.blockSize - filled)
            (to + filled).copyMemory(from: from + offset, byteCount: count)
            filled += count
            offset += count
            if filled == Self.blockSize { try flush() }
        }
    }

    /// Sends the block on: as it is for a plain archive; otherwise compressed, by the workers when there are
    /// some (started at the first full block) or here.
    private func flush() throws {
        guard filled > 0 else { return }
        let job = current
        job.inputCount = filled
        job.outputCapacity = filled - 1  // a block that does not shrink is stored raw
        filled = 0
        if compression.appleMagic == nil {  // a plain archive: the bytes as they are
            try emit(UnsafeRawBufferPointer(rebasing: job.input[0..<job.inputCount]))
            return
        }
        if algorithm == 0 { return try write(job, encoded: 0) }
        if workers == nil, threads > 1, job.inputCount == Self.blockSize {
            workers = BlockCodecWorkers(count: threads, algorithm: algorithm, encode: true)
        }
        guard let workers else {
            job.run(algorithm, encode: true)
            return try write(job, encoded: job.wait())
        }
        workers.start(job)
        inFlight.append(job)
        current = spare.popLast() ?? Self.newJob(compressed: true)
        while inFlight.count > threads { try writeOldest() }
    }

    private func writeOldest() throws {
        let job = inFlight.removeFirst()
        try write(job, encoded: job.wait())
        spare.append(job)
    }

    /// Writes a block: raw and stored sizes, then the bytes, stored raw when compressing did not make them
    /// smaller (`encoded` is the codec's answer: the compressed size, or an error).
    private func write(_ job: BlockCodecJob, encoded: Int) throws {
        if encoded < 0, encoded != Int(AC_ERROR_OUTPUT_FULL) {
            throw AssetPackFormatError(
                code: .archive,
                message: "cannot compress a block with \(compression.rawValue) (error \(encoded))"
            )
        }
        let size = encoded > 0 ? encoded : job.inputCount
        try emit(Self.bigEndian(UInt64(job.inputCount)) + Self.bigEndian(UInt64(size)))
        let body = size == job.inputCount ? job.input : job.output
        try emit(UnsafeRawBufferPointer(rebasing: body[0..<size]))
    }

    private func emit(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try emit($0) }
    }

    private func emit(_ bytes: UnsafeRawBufferPointer) throws {
        guard sink.write(bytes) == bytes.count else {
            throw sink.failure
                ?? AssetPackFormatError(code: .io, message: "cannot write the pack", cause: Errno.ioError)
        }
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
}

/// One `AA01` header being built: typed fields, each a three-letter key, a subtype letter and a value.
struct AppleArchiveHeader {
    private var fields: [UInt8] = []

    private mutating func key(_ key: String, _ subtype: Character) {
        fields += Array(key.utf8) + [UInt8(ascii: subtype.unicodeScalars.first ?? "*")]
    }

    private mutating func littleEndian(_ value: UInt64, width: Int) {
        for byte in 0..<width { fields.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte)))) }
    }

    /// An unsigned integer in the fewest of 1, 2, 4 or 8 bytes.
    mutating func add(uint name: String, _ value: UInt64) {
        let width = value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
        key(name, Character(String(width)))
        littleEndian(value, width: width)
    }

    /// A string: its byte count (two bytes) and its bytes.
    mutating func add(string name: String, _ value: String) {
        key(name, "P")
        littleEndian(UInt64(value.utf8.count), width: 2)
        fields += value.utf8
    }

    /// A blob's size, in the fewest of 2, 4 or 8 bytes (subtypes A, B, C); its bytes follow the header.
    mutating func add(blob name: String, _ size: UInt64) {
        let (subtype, width): (Character, Int) = size <= 0xFFFF ? ("A", 2) : size <= 0xFFFF_FFFF ? ("B", 4) : ("C", 8)
        key(name, subtype)
        littleEndian(size, width: width)
    }

    /// A SHA-256 digest (subtype H).
    mutating func add(hash name: String, _ digest: [UInt8]) {
        key(name, "H")
        fields += digest
    }

    /// The header: `AA01`, its total size (two bytes, little-endian) and the fields.
    func bytes() -> [UInt8] {
        let size = 6 + fields.count
        return Array("AA01".utf8) + [UInt8(size & 0xFF), UInt8(size >> 8)] + fields
    }
}
