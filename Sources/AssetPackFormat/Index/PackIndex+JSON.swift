import Crypto
import Foundation
import SystemPackage

/// An index's JSON written a row at a time, so a pack of 100 000 files holds its index once, as the text
/// it will store (about 140 bytes a file and the path), rather than as rows, then JSONEncoder's tree of them (400 bytes
/// a file), then the text. The bytes are JSONEncoder's own for `[.sortedKeys, .prettyPrinted,
/// .withoutEscapingSlashes]`: packs built before and after it are identical, and a test holds it to that.
///
/// With a spool file, rows beyond 1 MiB go to it, so memory stays flat whatever the file count (a pack of
/// 100 000 files has 16 MB of index).
struct IndexJSON {
    /// The rows written so far and not spooled: the end of the body of the `files` array.
    private(set) var rows: [UInt8] = []
    /// How many rows were written.
    private(set) var count = 0
    /// The sum of their sizes.
    private(set) var installSize: Int64 = 0
    private let spool: FileDescriptor?
    private var spooled: Int64 = 0
    private static let spoolChunk = 1 << 20

    /// Keeps every row in memory, with room reserved for about `files` rows.
    init(reservingFor files: Int) {
        spool = nil
        rows.reserveCapacity(files * 140)
    }

    /// Spools rows to `spool`, an empty file open for reading and writing that the caller closes.
    init(spoolingTo spool: FileDescriptor) {
        self.spool = spool
        rows.reserveCapacity(Self.spoolChunk + 4096)
    }

    /// The bytes of all rows, spooled or not.
    var rowBytes: Int64 { spooled + Int64(rows.count) }

    /// Hands every row's bytes to `body` in order: the spool's, then the rest.
    func forEachRowChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let spool, spooled > 0 {
            do {
                let read = try spool.forEachChunk(upTo: spooled, body)
                guard read == spooled else { throw Errno.ioError }
            } catch let errno as Errno {
                throw AssetPackFormatError(code: .io, message: "cannot read back the index being built: \(errno)")
            }
        }
        try rows.withUnsafeBytes { try body($0) }
    }

    private mutating func spoolIfFull() throws {
        guard let spool, rows.count >= Self.spoolChunk else { return }
        do {
            _ = try spool.writeAll(toAbsoluteOffset: spooled, rows)
        } catch let errno as Errno {
            throw AssetPackFormatError(code: .io, message: "cannot spool the index being built: \(errno)", cause: errno)
        }
        spooled += Int64(rows.count)
        rows.removeAll(keepingCapacity: true)
    }

    /// Appends one row (rows come sorted by path, as the index keeps them).
    mutating func append(path: String, size: Int64, sha256: some Sequence<UInt8>) throws {
        appendRow(path: path, size: size) { out in
            out.append(UInt8(ascii: "\""))
            sha256.appendHex(to: &out)
            out.append(UInt8(ascii: "\""))
        }
        try spoolIfFull()
    }

    /// Appends an index row whose digest is already hex.
    mutating func append(_ file: PackIndex.File) {
        appendRow(path: file.path, size: file.size) { Self.appendString(file.sha256, to: &$0) }
    }

    private mutating func appendRow(path: String, size: Int64, digest: (inout [UInt8]) -> Void) {
        rows.append(contentsOf: (count == 0 ? "\n" : ",\n").utf8)
        rows.append(contentsOf: "    {\n      \"path\" : ".utf8)
        Self.appendString(path, to: &rows)
        rows.append(contentsOf: ",\n      \"sha256\" : ".utf8)
        digest(&rows)
        rows.append(contentsOf: ",\n      \"size\" : ".utf8)
        rows.append(contentsOf: String(size).utf8)
        rows.append(contentsOf: "\n    }".utf8)
        count += 1
        installSize += size
    }

    /// The text before and after the rows, for an index whose other fields are `header`'s (its `files`
    /// are ignored; `fileCount` and `installSize` come from the rows). The whole JSON is `prefix`, the
    /// rows, `suffix`.
    func frame(_ header: PackIndex) throws -> (prefix: [UInt8], suffix: [UInt8]) {
        var empty = header
        empty.files = []
        empty.fileCount = count
        empty.installSize = installSize
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let text: [UInt8]
        do {
            text = Array(try encoder.encode(empty))
        } catch {
            throw AssetPackFormatError(
                code: .io,
                message: "cannot encode the index of pack \(header.assetPackID): \(error)"
            )
        }
        // Keys are sorted and strings escaped, so this is the one top-level `files` and nothing else.
        let marker = Array("\n  \"files\" : [\n\n  ]".utf8)
        guard let at = Self.firstRange(of: marker, in: text) else {
            throw AssetPackFormatError(code: .io, message: "the index of \(header.assetPackID) has no files array")
        }
        let open = at.upperBound - "\n\n  ]".utf8.count  // just after the "["
        if count == 0 { return (Array(text[..<at.upperBound]), Array(text[at.upperBound...])) }
        return (Array(text[..<open]), Array("\n  ]".utf8) + text[at.upperBound...])
    }

    /// The whole JSON.
    func encoded(_ header: PackIndex) throws -> Data {
        let (prefix, suffix) = try frame(header)
        var data = Data(capacity: prefix.count + Int(rowBytes) + suffix.count)
        data.append(contentsOf: prefix)
        try forEachRowChunk { data.append(contentsOf: $0) }
        data.append(contentsOf: suffix)
        return data
    }

    /// A JSON string as JSONEncoder writes it: `"` and `\` escaped, control characters as `\b \t \n \f
    /// \r` or `\u00xx`, everything else (`/` and all of Unicode) as its UTF-8 bytes.
    private static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0C: out.append(contentsOf: #"\f"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                CollectionOfOne(byte).appendHex(to: &out)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func firstRange(of marker: [UInt8], in text: [UInt8]) -> Range<Int>? {
        guard text.count >= marker.count else { return nil }
        for start in 0...(text.count - marker.count) where text[start..<start + marker.count].elementsEqual(marker) {
            return start..<start + marker.count
        }
        return nil
    }
}

extension PackIndex {
    /// The index as JSON, as packs store it: sorted keys, so the same files always give the same bytes.
    public func encoded() throws -> Data {
        var json = IndexJSON(reservingFor: files.count)
        for file in files { json.append(file) }
        return try json.encoded(self)
    }
}
