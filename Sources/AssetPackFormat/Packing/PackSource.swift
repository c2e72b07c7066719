import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One file that goes into a pack: where it is on disk and what it is called inside the pack.
public struct PackFile: Sendable, Hashable {
    /// The path inside the pack (and in the merged namespace), relative to the asset folder.
    public var path: String
    /// Where the bytes are read from: the file's real path inside the asset folder (a symlink inside the
    /// folder is resolved).
    public var source: FilePath { FilePath(sourceFolder + "/" + sourceName) }
    /// The source's folder and name: the files of one folder share its string (at 100 000 files, a whole
    /// path per file was 7 MB).
    public internal(set) var sourceFolder: String
    var sourceName: String
    /// The size in bytes when the file was listed.
    public var size: Int64
    /// Modification time in nanoseconds since 1970, for change detection.
    public var modified: Int64
    /// When it last changed in any way (nanoseconds since 1970): the later of its modification and change
    /// times that is not after `limit` (a time in the future, from a clock that jumped or `touch -d`, says
    /// nothing of when it changed).
    public func lastChange(notAfter limit: Int64) -> Int64 {
        Self.latest(modified, changed, notAfter: limit)
    }

    /// ``lastChange(notAfter:)`` of what is at `path` (not following a symlink), or `nil` when nothing is there.
    public static func lastChange(at path: String, notAfter limit: Int64) -> Int64? {
        guard let info = SourceTree.lstatInfo(path) else { return nil }
        let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        let changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        return latest(modified, changed, notAfter: limit)
    }

    private static func latest(_ a: Int64, _ b: Int64, notAfter limit: Int64) -> Int64 {
        max(a <= limit ? a : 0, b <= limit ? b : 0)
    }
    /// Device, inode and change time, for change detection (a replaced file with the same size and mtime),
    /// and to check that the file opened when packing is the one listed.
    var device: UInt64
    var inode: UInt64
    var changed: Int64
}

/// A pack ready to build: its manifest and the exact, sorted list of files its selectors name.
public struct PackSource: Sendable, Hashable {
    /// The validated manifest.
    public var manifest: PackagingManifest
    /// Where the manifest was read from (for messages), if from a file.
    public var manifestFile: String
    /// The files, sorted by path (byte order), no duplicates.
    public var files: [PackFile]
    /// Warnings from the manifest and from resolving its selectors, with file, key and fix.
    public var problems: [ManifestProblem]

    /// The warnings, as lines to print.
    public var warnings: [String] { problems.map(\.description) }

    /// The sum of the files' sizes: the bytes an install writes.
    public var installSize: Int64 { files.reduce(0) { $0 + $1.size } }

    /// A digest of everything that decides the archive's bytes as far as `stat` can tell (paths, sizes,
    /// times, inodes, the manifest): equal fingerprints mean an unchanged pack without reading files.
    public func fingerprint(options: PackBuildOptions) -> String {
        var hasher = SHA256()
        func add(_ text: String) { hasher.update(data: Array(text.utf8) + [0]) }
        add("v1 \(options.compression.rawValue) \(options.effectiveLevel.map(String.init) ?? "-")")
        if options.format != .tar { add(options.format.rawValue) }  // a tar's fingerprint as it always was
        add(manifest.assetPackID)
        add(manifest.downloadPolicy.name)
        add(manifest.downloadPolicy.installationEventTypes.map(\.rawValue).joined(separator: ","))
        add(manifest.platforms.joined(separator: ","))
        add(manifest.language ?? "-")
        add((try? String(decoding: JSONEncoder.sorted.encode(manifest.userInfo), as: UTF8.self)) ?? "-")
        for file in files {
            add("\(file.path) \(file.size) \(file.modified) \(file.inode) \(file.changed)")
        }
        return hasher.finalize().hexString
    }

    /// Resolves a manifest's selectors against its source root.
    ///
    /// The source root is the manifest's `sourceRoot` (relative to the manifest file's folder), or `root`.
    /// Every selected path is resolved through all its components: a symlink anywhere on the way (a linked
    /// parent folder included) must lead to a place inside the source root, and the source root itself must
    /// be inside `boundary` when one is given (a server serves nothing from outside its asset folder). File
    /// names are kept as the exact UTF-8 bytes the file system holds (no Unicode normalization).
    /// - Parameters:
    ///   - parsed: A validated manifest.
    ///   - root: The folder selector paths are relative to when the manifest names no `sourceRoot`.
    ///   - boundary: A folder the source root must be inside, or `nil`.
    /// - Returns: The pack's files; a path named by two selectors for one file is listed once.
    /// - Throws: ``AssetPackFormatError``: `.notFound` for a missing file or folder, `.unsafePath` for a
    ///   path that leads outside the source root or a name that is not UTF-8, `.invalidManifest` for a `file`
    ///   selector naming a folder (or the reverse), a special file, two files placed at one path, or a pack
    ///   with no files.
    public static func resolve(_ parsed: ParsedManifest, root: FilePath, boundary: FilePath? = nil) throws -> PackSource
    {
        let checked = check(parsed, root: root, boundary: boundary)
        if let source = checked.source { return source }
        guard var error = checked.errors.first else {
            throw AssetPackFormatError(code: .invalidManifest, message: "\(parsed.file): the selection is invalid")
        }
        if checked.errors.count > 1 {
            error.message +=
                " (and \(checked.errors.count - 1) more: `ba-mock validate` of the same folder lists every problem)"
        }
        throw error
    }
}
