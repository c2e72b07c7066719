import CAppleCompression
import Foundation

// The entries of an Apple Archive (`AA01` headers of typed fields, then blobs), read from the bytes the
// blocks of AppleArchiveBlocks.swift decode.

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
