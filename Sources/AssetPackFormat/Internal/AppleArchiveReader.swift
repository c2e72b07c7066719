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
        guard rawSize > 0, rawSize <= UInt64(blockSize), storedSize > 0 else {
            throw AppleArchiveError.corrupt(
                name,
                "has a block (\(blocks)) of \(rawSize) bytes stored in \(storedSize), outside its block size of "
                    + "\(blockSize) bytes"
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

/// The entries of an Apple Archive, read one at a time from its (decoded) bytes.
final class AppleArchiveEntries {
    /// Entry types (the `TYP` field's character), as `AppleArchive.h` names them.
    enum EntryType: UInt8 {
        case regular = 0x46  // F
        case directory = 0x44  // D
        case symlink = 0x4C  // L
        case fifo = 0x50  // P
        case characterDevice = 0x43  // C
        case blockDevice = 0x42  // B
        case socket = 0x53  // S
        case whiteout = 0x57  // W
        case door = 0x52  // R
        case port = 0x54  // T
        case metadata = 0x4D  // M
    }

    /// What one header says.
    struct Header {
        var type: UInt8?
        var path: [UInt8]?
        var link: [UInt8]?
        var sha256: [UInt8]?
        var hardLinkCluster = false
        /// The sizes of the entry's blobs, in the order their fields came, and which one is `DAT`.
        var blobs: [UInt64] = []
        var dataBlob: Int?
    }

    private let input: ChunkCursor
    private let name: String
    private var headerBytes = [UInt8](repeating: 0, count: 65536)
    /// Blob bytes of the current entry before its data, its data, and after it, not read yet.
    private var before: UInt64 = 0
    private var dataLeft: UInt64 = 0
    private var after: UInt64 = 0
    private(set) var current = Header()
    private var entries = 0
    /// The first header's magic, when the caller read it to tell the format.
    private var pendingMagic: [UInt8]?

    init(_ input: ChunkCursor, name: String, magic: [UInt8]?) {
        self.input = input
        self.name = name
        pendingMagic = magic
    }

    /// The next entry's header (metadata entries skipped), or `nil` at the end of the archive.
    func next() throws -> ArchiveEntryHeader? {
        while true {
            try skip(before + dataLeft + after)
            (before, dataLeft, after) = (0, 0, 0)
            guard let header = try readHeader() else {
                // A stream cut right after its pbz header, or that holds no entry at all, is not an empty pack.
                guard entries > 0 else { throw AppleArchiveError.corrupt(name, "holds no entries") }
                return nil
            }
            current = header
            var blobsBefore: UInt64 = 0
            var blobsAfter: UInt64 = 0
            for (number, size) in header.blobs.enumerated() where number != header.dataBlob {
                // Each sum checked: blob sizes near 2^64 cannot wrap into a small skip.
                if let data = header.dataBlob, number > data {
                    blobsAfter = try adding(blobsAfter, size)
                } else {
                    blobsBefore = try adding(blobsBefore, size)
                }
            }
            let dataSize = header.dataBlob.map { header.blobs[$0] } ?? 0
            (before, dataLeft, after) = (blobsBefore, dataSize, blobsAfter)
            guard let type = header.type else {
                throw AppleArchiveError.corrupt(name, "has an entry (\(entries - 1)) without a TYP field")
            }
            if type == EntryType.directory.rawValue, dataSize > 0 || header.dataBlob != nil {
                throw AppleArchiveError.corrupt(name, "has a folder entry (\(entries - 1)) that carries data")
            }
            if type == EntryType.metadata.rawValue { continue }
            guard dataSize <= UInt64(Int64.max) else {
                throw AppleArchiveError.corrupt(name, "declares an entry of \(dataSize) bytes")
            }
            guard let path = String(validating: header.path ?? [], as: UTF8.self) else {
                throw AppleArchiveError.rule(
                    name,
                    "holds a name that is not UTF-8 (\(String(decoding: header.path ?? [], as: UTF8.self)))"
                )
            }
            if header.hardLinkCluster {
                throw AppleArchiveError.rule(name, "holds a hard link (\(path)); packs hold regular files only")
            }
            return ArchiveEntryHeader(
                name: path,
                type: Self.fileType(type),
                size: Int64(dataSize),
                hardlink: nil,
                symlink: header.link.map { String(decoding: $0, as: UTF8.self) },
                sha256: header.sha256
            )
        }
    }

    /// Streams the current entry's data (its `DAT` blob) to `consume`.
    func readData(_ consume: (UnsafeRawBufferPointer) throws -> Void) throws {
        try skip(before)
        before = 0
        let size = dataLeft
        let handed = try input.stream(Int64(size)) { block in
            dataLeft -= UInt64(block.count)
            try consume(block)
        }
        guard handed == Int64(size) else {
            throw AppleArchiveError.corrupt(
                name,
                "ends inside the data of \(String(decoding: current.path ?? [], as: UTF8.self))"
            )
        }
    }

    private func adding(_ a: UInt64, _ b: UInt64) throws -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow, sum <= UInt64(Int64.max) else {
            throw AppleArchiveError.corrupt(name, "has an entry (\(entries - 1)) whose blobs add up past 2^63 bytes")
        }
        return sum
    }

    private func skip(_ count: UInt64) throws {
        guard count > 0 else { return }
        let skipped = try input.stream(Int64(count)) { _ in }
        guard skipped == Int64(count) else { throw AppleArchiveError.corrupt(name, "ends inside an entry's blobs") }
    }

    private static func fileType(_ type: UInt8) -> UInt32 {
        switch EntryType(rawValue: type) {
        case .regular: ArchiveFileType.regular
        case .directory: ArchiveFileType.directory
        case .symlink: ArchiveFileType.symlink
        default: ArchiveFileType.special
        }
    }

    /// Reads and parses one header; `nil` at a clean end of the archive.
    private func readHeader() throws -> Header? {
        var start = 0
        if let magic = pendingMagic {
            pendingMagic = nil
            headerBytes.replaceSubrange(0..<4, with: magic)
            start = 4
        }
        start += try headerBytes.withUnsafeMutableBytes {
            try input.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[start..<6]))
        }
        if start == 0 { return nil }
        guard start == 6 else { throw AppleArchiveError.corrupt(name, "ends inside the header of entry \(entries)") }
        let magic = headerBytes[0..<4]
        guard magic.elementsEqual("AA01".utf8) || magic.elementsEqual("YAA1".utf8) else {
            throw AppleArchiveError.corrupt(
                name,
                "has no AA01 header where entry \(entries) should start (at byte \(input.position - 6) of its archive stream)"
            )
        }
        let size = Int(headerBytes[4]) | Int(headerBytes[5]) << 8
        guard size >= 6 else {
            throw AppleArchiveError.corrupt(name, "has a header (entry \(entries)) of \(size) bytes")
        }
        let read = try headerBytes.withUnsafeMutableBytes {
            try input.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[6..<size]))
        }
        guard read == size - 6 else {
            throw AppleArchiveError.corrupt(name, "ends inside the header of entry \(entries)")
        }
        defer { entries += 1 }
        return try headerBytes.withUnsafeBytes { try parseFields(UnsafeRawBufferPointer(rebasing: $0[6..<size])) }
    }

    /// Parses the typed fields of a header: a three-letter key, a subtype letter, and a value whose size the
    /// subtype gives. Every length is checked against what is left before it is read.
    private func parseFields(_ fields: UnsafeRawBufferPointer) throws -> Header {
        var header = Header()
        var at = 0
        var seen: Set<UInt32> = []
        func bad(_ problem: String) -> AssetPackFormatError {
            AppleArchiveError.corrupt(name, "has a header (entry \(entries)) with \(problem)")
        }
        func bytes(_ count: Int) throws -> UnsafeRawBufferPointer {
            guard count <= fields.count - at else { throw bad("a field past its end") }
            defer { at += count }
            return UnsafeRawBufferPointer(rebasing: fields[at..<at + count])
        }
        func unsigned(_ count: Int) throws -> UInt64 {
            try bytes(count).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        while at < fields.count {
            let tag = try bytes(4)
            let key = AssetPackID.printable(String(decoding: tag[0..<3], as: UTF8.self))
            let subtype = tag[3]
            // The fields this reader acts on must have the kind of value they are defined with.
            let integer = (UInt8(ascii: "1")...UInt8(ascii: "8")).contains(subtype)
            let blob = (UInt8(ascii: "A")...UInt8(ascii: "C")).contains(subtype)
            let expected: (ok: Bool, kind: String)? =
                switch key {
                case "TYP", "HLC": (integer, "an integer")
                case "PAT", "LNK": (subtype == UInt8(ascii: "P"), "a string")
                case "DAT": (blob, "a blob")
                case "SH2": (subtype == UInt8(ascii: "H"), "a SHA-256 hash")
                default: nil
                }
            if let expected, !expected.ok {
                throw bad("a \(key) field that is not \(expected.kind) (subtype 0x\(String(subtype, radix: 16)))")
            }
            let code = UInt32(tag[0]) << 16 | UInt32(tag[1]) << 8 | UInt32(tag[2])
            guard seen.insert(code).inserted else { throw bad("the field \(key) twice") }
            switch subtype {
            case UInt8(ascii: "*"): break
            case UInt8(ascii: "1"), UInt8(ascii: "2"), UInt8(ascii: "4"), UInt8(ascii: "8"):
                let value = try unsigned(Int(subtype - UInt8(ascii: "0")))
                if key == "TYP" {
                    guard value <= 0xFF else { throw bad("a TYP of \(value)") }
                    header.type = UInt8(value)
                }
                if key == "HLC" { header.hardLinkCluster = true }
            case UInt8(ascii: "P"):
                let length = Int(try unsigned(2))
                let value = Array(try bytes(length))
                if key == "PAT" { header.path = value }
                if key == "LNK" { header.link = value }
            case UInt8(ascii: "F"): _ = try bytes(4)
            case UInt8(ascii: "G"): _ = try bytes(20)
            case UInt8(ascii: "H"):
                let value = Array(try bytes(32))
                if key == "SH2" { header.sha256 = value }
            case UInt8(ascii: "I"): _ = try bytes(48)
            case UInt8(ascii: "J"): _ = try bytes(64)
            case UInt8(ascii: "S"): _ = try bytes(8)
            case UInt8(ascii: "T"): _ = try bytes(12)
            case UInt8(ascii: "A"), UInt8(ascii: "B"), UInt8(ascii: "C"):
                let width = subtype == UInt8(ascii: "A") ? 2 : subtype == UInt8(ascii: "B") ? 4 : 8
                if key == "DAT" { header.dataBlob = header.blobs.count }
                header.blobs.append(try unsigned(width))
            default:
                throw bad("the field \(key) of unknown subtype 0x\(String(subtype, radix: 16))")
            }
        }
        return header
    }
}

/// An Apple Archive opened for reading entries: its blocks decoded (a pbz stream) or read as they are (a
/// plain archive).
final class AppleArchiveStream {
    let entries: AppleArchiveEntries
    /// The stream's compression (`none` for a plain archive).
    let compression: PackCompression
    private let decoder: PBZDecoder?

    /// - Parameters:
    ///   - source: The archive's bytes, from its first.
    ///   - name: The archive's path or URL, for messages.
    init(_ source: @escaping ArchiveByteSource, name: String) throws {
        let input = ChunkCursor(source)
        var magic = [UInt8](repeating: 0, count: 4)
        let count = try magic.withUnsafeMutableBytes { try input.read(into: $0) }
        guard count == 4 else { throw AppleArchiveError.corrupt(name, "is shorter than its magic") }
        if magic[0...2].elementsEqual("pbz".utf8) {
            let decoder = try PBZDecoder(input, magic: magic[3], name: name)
            self.decoder = decoder
            compression = decoder.compression
            entries = AppleArchiveEntries(ChunkCursor { try decoder.next() }, name: name, magic: nil)
        } else {
            decoder = nil
            compression = .none
            entries = AppleArchiveEntries(input, name: name, magic: magic)
        }
    }
}
