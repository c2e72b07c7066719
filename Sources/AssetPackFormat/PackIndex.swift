import Foundation
import SystemPackage

/// The index entry stored at the end of every pack archive: what the pack holds, file by file.
public struct PackIndex: Sendable, Hashable, Codable {
    /// One file of the pack.
    public struct File: Sendable, Hashable, Codable {
        /// Path in the merged namespace (the archive entry is `Contents/` + this).
        public var path: String
        /// Size in bytes.
        public var size: Int64
        /// Lower-case hex SHA-256 of the content.
        public var sha256: String

        /// Creates an index row.
        public init(path: String, size: Int64, sha256: String) {
            self.path = path
            self.size = size
            self.sha256 = sha256
        }
    }

    /// The index layout version; readers refuse versions they do not know.
    public var formatVersion: Int
    /// The pack's ID.
    public var assetPackID: String
    /// The pack's download policy.
    public var downloadPolicy: DownloadPolicy
    /// The pack's platforms.
    public var platforms: [String]
    /// The language of a localized pack (absent from the index of a pack every language uses).
    public var language: String?
    /// The sum of the files' sizes.
    public var installSize: Int64
    /// How many files the pack holds.
    public var fileCount: Int
    /// Every file, sorted by path.
    public var files: [File]

    /// The layout version this code writes.
    public static let currentFormatVersion = 1

    /// Creates an index.
    public init(
        formatVersion: Int,
        assetPackID: String,
        downloadPolicy: DownloadPolicy,
        platforms: [String],
        language: String?,
        installSize: Int64,
        fileCount: Int,
        files: [File]
    ) {
        self.formatVersion = formatVersion
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.platforms = platforms
        self.language = language
        self.installSize = installSize
        self.fileCount = fileCount
        self.files = files
    }
}

extension PackIndex {
    /// Decodes an index (the `Index.json` of an archive, or the copy an install keeps) and checks its
    /// layout version.
    /// - Parameters:
    ///   - data: The JSON.
    ///   - source: Where it came from, for messages.
    /// - Throws: ``AssetPackFormatError`` with code `.corruptPack`.
    public static func decode(_ data: Data, source: String) throws -> PackIndex {
        let index: PackIndex
        do {
            index = try JSONDecoder().decode(PackIndex.self, from: data)
        } catch {
            throw AssetPackFormatError(
                code: .corruptPack,
                message: "\(source) has an index that does not decode: \(error)",
                cause: error
            )
        }
        guard index.formatVersion == currentFormatVersion else {
            throw AssetPackFormatError(
                code: .corruptPack,
                message:
                    "\(source) has index format \(index.formatVersion); this tool reads format \(currentFormatVersion)"
            )
        }
        if let problem = index.consistencyProblem {
            throw AssetPackFormatError(code: .corruptPack, message: "\(source) has an index that \(problem)")
        }
        return index
    }

    /// What makes the index contradict itself, if anything: its totals against its rows, a language that is
    /// not a tag, a path that is a file and a folder at once. A client shows these numbers and acts on them.
    var consistencyProblem: String? {
        if fileCount != files.count { return "claims \(fileCount) files but lists \(files.count)" }
        var total: Int64 = 0
        for file in files {
            let (sum, overflow) = total.addingReportingOverflow(file.size)
            guard file.size >= 0, !overflow else { return "gives \(file.path) an impossible size" }
            total = sum
        }
        if installSize != total { return "claims \(installSize) bytes but its files add up to \(total)" }
        if let language, (try? LanguageTag(parsing: language)) == nil {
            return "gives the language \"\(AssetPackID.printable(language))\", which is not a BCP-47 tag"
        }
        let paths = Set(files.map { PathKey($0.path) })
        for file in files {
            var folder = Substring(file.path).utf8
            while let slash = folder.lastIndex(of: UInt8(ascii: "/")) {
                folder = folder[..<slash]
                if paths.contains(PathKey(String(Substring(folder)))) {
                    return "lists \(String(Substring(folder))) as a file and as a folder (of \(file.path))"
                }
            }
        }
        return nil
    }

    /// Reads an index file (the copy an install keeps beside the pack's folder).
    /// - Throws: ``AssetPackFormatError`` with code `.io` (unreadable) or `.corruptPack`.
    public static func load(from file: FilePath) throws -> PackIndex {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file.string))
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read the pack index \(file): \(error)")
        }
        return try decode(data, source: file.string)
    }

    /// Writes the index to `file` atomically.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public func write(to file: FilePath) throws {
        try AtomicFile.write(try encoded(), to: file)
    }
}
