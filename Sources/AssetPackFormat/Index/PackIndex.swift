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
    /// For an Apple Archive, whose index is made from its entries: how many files carried their SHA-256 in
    /// the archive (`SH2`), checked against it unless the whole archive's digest covered them; the others
    /// were hashed with nothing to check them against but that digest. `nil` for a tar pack, whose
    /// `Index.json` lists every file.
    public var fileDigestsCarried: Int? = nil

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
        var parser = IndexParser(data)
        return try decode(&parser, source: source)
    }

    /// Decodes an index from its parser, collecting every row.
    static func decode(_ parser: inout IndexParser, source: String) throws -> PackIndex {
        var files: [File] = []
        let index: PackIndex
        do {
            let header = try parser.parse { path, size, sha256 in
                files.append(File(path: path, size: size, sha256: sha256))
            }
            index = try PackIndex(header, files: files)
        } catch {
            throw AssetPackFormatError(
                code: .corruptPack,
                message: "\(source) has an index that does not decode: \(error)",
                cause: error
            )
        }
        if let problem = index.versionProblem {
            throw AssetPackFormatError(code: .corruptPack, message: "\(source) \(problem)")
        }
        if let problem = index.rowPathProblem {
            // A rule of packs, which the same bytes would break again: not fetched again.
            var error = AssetPackFormatError(code: .corruptPack, message: "\(source) has an index that \(problem)")
            error.isRuleViolation = true
            throw error
        }
        if let problem = index.consistencyProblem {
            throw AssetPackFormatError(code: .corruptPack, message: "\(source) has an index that \(problem)")
        }
        return index
    }

    /// An index from a parsed header and its rows; a field the index must have and lacks is an error.
    init(_ header: IndexParser.Header, files: [File]) throws {
        func required<T>(_ value: T?, _ key: String) throws -> T {
            guard let value else { throw IndexParser.Failure(description: "the key \"\(key)\" is missing") }
            return value
        }
        self.init(
            formatVersion: try required(header.formatVersion, "formatVersion"),
            assetPackID: try required(header.assetPackID, "assetPackID"),
            downloadPolicy: try required(header.downloadPolicy, "downloadPolicy"),
            platforms: try required(header.platforms, "platforms"),
            language: header.language,
            installSize: try required(header.installSize, "installSize"),
            fileCount: try required(header.fileCount, "fileCount"),
            files: header.sawFiles ? files : try required(nil, "files")
        )
        fileDigestsCarried = header.fileDigestsCarried
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
        if let problem = headerProblem(rows: files.count, total: total) { return problem }
        if let problem = rowPathProblem { return problem }
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

    /// A row whose path no pack may hold, or a path listed twice. Rows are paths from a peer, held to the rule
    /// of entry names: a delta's rows for the files it leaves with the base are never seen as entries, and an
    /// installed index names the files reads open.
    var rowPathProblem: String? {
        for file in files where !PackPath.isEntryPath(file.path) {
            return "lists \"\(AssetPackID.printable(file.path))\", a path no pack may hold (absolute, empty, or "
                + "with '..', '.', '//' or a backslash)"
        }
        return Set(files.map { PathKey($0.path) }).count == files.count ? nil : "lists a path twice"
    }

    /// A layout this code does not read, said as "has index format 2; …", or `nil`.
    var versionProblem: String? {
        guard formatVersion != Self.currentFormatVersion else { return nil }
        return "has index format \(formatVersion); this tool reads format \(Self.currentFormatVersion)"
    }

    /// What the index's own fields get wrong against its rows (their count and the sum of their sizes), or
    /// its language; said as what follows "has an index that".
    func headerProblem(rows: Int, total: Int64) -> String? {
        if fileCount != rows { return "claims \(fileCount) files but lists \(rows)" }
        if installSize != total { return "claims \(installSize) bytes but its files add up to \(total)" }
        guard let language, (try? LanguageTag(parsing: language)) == nil else { return nil }
        return "gives the language \"\(AssetPackID.printable(language))\", which is not a BCP-47 tag"
    }

    /// Reads an index file (the copy an install keeps beside the pack's folder).
    /// - Throws: ``AssetPackFormatError`` with code `.io` (unreadable) or `.corruptPack`.
    public static func load(from file: FilePath) throws -> PackIndex {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(file, .readOnly, options: [.closeOnExec])
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read the pack index \(file): \(error)")
        }
        return try fd.closeAfter {
            var parser = IndexParser(reading: fd)
            return try decode(&parser, source: file.string)
        }
    }

    /// The most bytes an installed index may take: 256 MiB, about a million files.
    public static let maximumFileSize: Int64 = 256 << 20

    /// Reads the index named `name` in an open folder without waiting or following a link (a FIFO, a
    /// device or a symlink where an index should be is refused unread), at most ``maximumFileSize`` bytes.
    /// - Parameter file: How messages name it.
    /// - Throws: ``AssetPackFormatError`` with code `.io` or `.corruptPack`.
    public static func load(named name: String, in folder: FileDescriptor, shownAs file: FilePath) throws -> PackIndex {
        let opened: (fd: FileDescriptor, info: stat)
        do {
            opened = try FileDescriptor.openWithoutWaiting(FilePath(name), in: folder, followingSymlink: false)
        } catch let errno as Errno where errno == .tooManySymbolicLinkLevels {
            throw AssetPackFormatError(
                code: .io,
                message:
                    "the pack index \(file) is a symlink: ba-sync wrote a file there, and follows no link inside the "
                    + "app group. Fix: remove the link (and find out who put it there), then ensure the pack again"
            )
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read the pack index \(file): \(error)")
        }
        return try opened.fd.closeAfter {
            guard opened.info.st_mode & S_IFMT == S_IFREG else {
                throw AssetPackFormatError(
                    code: .io,
                    message:
                        "the pack index \(file) is \(FileDescriptor.kind(of: opened.info.st_mode)), not a regular file: "
                        + "ba-sync wrote a file there. Fix: remove it, then ensure the pack again"
                )
            }
            guard Int64(opened.info.st_size) <= maximumFileSize else {
                throw AssetPackFormatError(
                    code: .io,
                    message:
                        "the pack index \(file) is larger than \(maximumFileSize >> 20) MiB, more than an index of "
                        + "a million files. Fix: remove the pack, then ensure it again"
                )
            }
            var parser = IndexParser(reading: opened.fd)
            return try decode(&parser, source: file.string)
        }
    }

    /// Reads an index file's rows in order without holding them (an index of 100 000 files is never whole).
    /// - Parameter row: Called with each row's path and size.
    /// - Throws: ``AssetPackFormatError`` with code `.io` (unreadable) or `.corruptPack`, or what `row` throws.
    public static func forEachRow(inFile file: FilePath, _ row: (String, Int64) throws -> Void) throws {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(file, .readOnly, options: [.closeOnExec])
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read the pack index \(file): \(error)")
        }
        try fd.closeAfter {
            var parser = IndexParser(reading: fd)
            _ = try parser.parse { path, size, _ in try row(path, size) }
        }
    }

    /// Writes the index to `file` atomically.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public func write(to file: FilePath) throws {
        try AtomicFile.write(try encoded(), to: file)
    }
}
