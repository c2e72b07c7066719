import Foundation
import SystemPackage

/// Reads an index's JSON a byte at a time, handing each file row to a closure as it is read: an index of
/// 100 000 files is never held whole, as a tree (JSONEncoder's map of it was 17.6 MB) or as rows, unless
/// the caller keeps them. Any valid JSON layout is read (keys in any order, unknown keys skipped), with
/// JSONDecoder's rules for the types the index declares.
struct IndexParser {
    /// The index's fields other than its rows.
    struct Header {
        var formatVersion: Int?
        var assetPackID: String?
        var downloadPolicy: DownloadPolicy?
        var platforms: [String]?
        var language: String?
        var installSize: Int64?
        var fileCount: Int?
        var fileDigestsCarried: Int?
        var sawFiles = false
    }

    typealias Failure = JSONScanner.Failure

    private var json: JSONScanner

    /// Parses bytes in memory.
    init(_ data: some Collection<UInt8>) {
        json = JSONScanner(data)
    }

    /// Parses a file from its start, 64 KiB at a time.
    init(reading fd: FileDescriptor) {
        json = JSONScanner(reading: fd)
    }

    /// Reads the whole document.
    /// - Parameter row: Called with each file row in order: path, size, and the digest as written.
    /// - Returns: The other fields.
    mutating func parse(_ row: (String, Int64, String) throws -> Void) throws -> Header {
        var header = Header()
        try json.skipByteOrderMark()
        try json.expect(UInt8(ascii: "{"))
        if try json.peekSkippingSpace() == UInt8(ascii: "}") {
            json.position += 1
        } else {
            var keys: Set<String> = []
            repeat {
                let key = try json.string()
                try json.expect(UInt8(ascii: ":"))
                // A key given twice: JSONDecoder reads the first, and so does this.
                guard keys.insert(key).inserted else {
                    try json.skipValue(depth: 0)
                    continue
                }
                switch key {
                case "formatVersion": header.formatVersion = Int(try json.integer(key))
                case "assetPackID": header.assetPackID = try json.string()
                case "downloadPolicy":
                    let raw = try json.capturedValue()
                    do {
                        header.downloadPolicy = try JSONDecoder().decode(DownloadPolicy.self, from: Data(raw))
                    } catch {
                        throw Failure(description: "downloadPolicy: \(error)")
                    }
                case "platforms": header.platforms = try json.strings(key)
                case "language":
                    if try json.peekSkippingSpace() == UInt8(ascii: "n") {
                        try json.literal("null")
                        header.language = nil
                    } else {
                        header.language = try json.string()
                    }
                case "installSize": header.installSize = try json.integer(key)
                case "fileCount": header.fileCount = Int(try json.integer(key))
                case "fileDigestsCarried": header.fileDigestsCarried = Int(try json.integer(key))
                case "files":
                    header.sawFiles = true
                    try rows(row)
                default: try json.skipValue(depth: 0)
                }
            } while try json.separator(closing: UInt8(ascii: "}"))
        }
        if try json.peekSkippingSpace() != nil { throw json.failure("text after the end of the index") }
        return header
    }

    // MARK: - Rows

    private mutating func rows(_ row: (String, Int64, String) throws -> Void) throws {
        try json.expect(UInt8(ascii: "["))
        if try json.peekSkippingSpace() == UInt8(ascii: "]") {
            json.position += 1
            return
        }
        repeat {
            var path: String?
            var size: Int64?
            var sha256: String?
            try json.expect(UInt8(ascii: "{"))
            if try json.peekSkippingSpace() == UInt8(ascii: "}") {
                json.position += 1
            } else {
                repeat {
                    let key = try json.string()
                    try json.expect(UInt8(ascii: ":"))
                    switch key {
                    case "path" where path == nil: path = try json.string()
                    case "size" where size == nil: size = try json.integer(key)
                    case "sha256" where sha256 == nil: sha256 = try json.string()
                    default: try json.skipValue(depth: 2)  // in a row, in the files array
                    }
                } while try json.separator(closing: UInt8(ascii: "}"))
            }
            guard let path, let size, let sha256 else {
                throw json.failure("a row of files lacks \(path == nil ? "path" : size == nil ? "size" : "sha256")")
            }
            try row(path, size, sha256)
        } while try json.separator(closing: UInt8(ascii: "]"))
    }
}
