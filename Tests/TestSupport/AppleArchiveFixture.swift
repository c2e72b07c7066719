import Foundation

/// Apple Archive bytes made by hand for tests, written from the format's description (Apple's
/// `compression_tool(1)` and `AppleArchive.h`), not with the code under test: `AA01` entries of typed fields
/// and blobs, optionally cut into a pbz stream of stored (uncompressed) blocks.
public enum AppleArchiveFixture {
    /// One field of a header: its key and subtype, and the value's bytes.
    public struct Field: Sendable {
        public var key: String
        public var subtype: Character
        public var value: [UInt8]

        public init(_ key: String, _ subtype: Character, _ value: [UInt8]) {
            self.key = key
            self.subtype = subtype
            self.value = value
        }

        public static func uint(_ key: String, _ value: UInt64, width: Int = 1) -> Field {
            Field(key, Character(String(width)), (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) })
        }

        public static func string(_ key: String, _ value: [UInt8]) -> Field {
            Field(key, "P", [UInt8(value.count & 0xFF), UInt8(value.count >> 8)] + value)
        }

        public static func blob(_ key: String, _ size: UInt64, width: Int = 4) -> Field {
            let subtype: Character = width == 2 ? "A" : width == 4 ? "B" : "C"
            return Field(key, subtype, (0..<width).map { UInt8(truncatingIfNeeded: size >> (8 * UInt64($0))) })
        }
    }

    /// An entry: its fields and the blobs that follow its header.
    public struct Entry: Sendable {
        public var fields: [Field]
        public var blobs: [UInt8]

        public init(fields: [Field], blobs: [UInt8] = []) {
            self.fields = fields
            self.blobs = blobs
        }

        /// A regular file with its data and (unless `sha256` is nil) its SHA-256 in `SH2`.
        public static func file(_ path: String, _ data: [UInt8], sha256: [UInt8]?) -> Entry {
            var fields: [Field] = [
                .uint("TYP", UInt64(UInt8(ascii: "F"))), .string("PAT", Array(path.utf8)),
                .uint("MOD", 0o644, width: 2),
                .blob("DAT", UInt64(data.count)),
            ]
            if let sha256 { fields.append(Field("SH2", "H", sha256)) }
            return Entry(fields: fields, blobs: data)
        }

        public static func folder(_ path: String) -> Entry {
            Entry(fields: [.uint("TYP", UInt64(UInt8(ascii: "D"))), .string("PAT", Array(path.utf8))])
        }

        public func bytes() -> [UInt8] {
            var body: [UInt8] = []
            for field in fields {
                body += Array(field.key.utf8) + Array(String(field.subtype).utf8) + field.value
            }
            let size = 6 + body.count
            return Array("AA01".utf8) + [UInt8(size & 0xFF), UInt8(size >> 8)] + body + blobs
        }
    }

    /// The entries end to end: a plain (uncompressed) Apple Archive.
    public static func plain(_ entries: [Entry]) -> [UInt8] {
        entries.flatMap { $0.bytes() }
    }

    /// A pbz stream of stored blocks of `blockSize` bytes around `archive`, with `magic` as its algorithm byte.
    public static func pbzStored(_ archive: [UInt8], blockSize: Int, magic: Character = "e") -> [UInt8] {
        var out = Array("pbz".utf8) + Array(String(magic).utf8) + bigEndian(UInt64(blockSize))
        var offset = 0
        while offset < archive.count {
            let count = min(blockSize, archive.count - offset)
            out += bigEndian(UInt64(count)) + bigEndian(UInt64(count)) + archive[offset..<offset + count]
            offset += count
        }
        return out
    }

    public static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    /// A packaging manifest for an entry at the archive's root.
    public static func manifest(id: String, policy: String = #"{"onDemand": {}}"#) -> [UInt8] {
        Array(
            """
            {"assetPackID": "\(id)", "downloadPolicy": \(policy), "fileSelectors": [{"directory": "Videos"}],
             "platforms": ["iOS"]}
            """.utf8
        )
    }
}
