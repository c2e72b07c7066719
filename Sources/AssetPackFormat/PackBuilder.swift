import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// How a pack archive is compressed.
public struct PackBuildOptions: Sendable, Hashable {
    /// The compression filter.
    public var compression: PackCompression
    /// The filter's level; `nil` takes the filter's default (zstd 3, gzip 6, xz 6, lz4 1).
    public var level: Int?
    /// Compression threads for zstd and xz; the output is the same for any value of 1 or more.
    public var threads: Int

    /// Creates options.
    /// - Parameters:
    ///   - compression: The filter (default zstd).
    ///   - level: The level, or `nil` for the filter's default.
    ///   - threads: Compression threads (default 1). One compressing thread already runs beside the thread
    ///     that hashes and writes the output; zstd's own workers (2 and more) help only compressible input
    ///     and cost about 65 MiB more memory: packing 512 MiB of incompressible files took 1.0-1.2 s with 1
    ///     thread and 1.8-2.3 s with 2 (bsdtar: 1.2 s), 20 000 small half-text files 3.0 s and 2.4-3.0 s.
    public init(compression: PackCompression = .zstd, level: Int? = nil, threads: Int? = nil) {
        self.compression = compression
        self.level = level
        self.threads = threads ?? 1
    }

    /// The level that will be used.
    public var effectiveLevel: Int? { compression == .none ? nil : (level ?? compression.defaultLevel) }

    /// Checks the level against the filter's range.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidOption`.
    public func validate() throws {
        if let level, compression == .none {
            throw AssetPackFormatError(
                code: .invalidOption,
                message: "--level \(level) was given with --compression none. Fix: drop --level or pick a filter"
            )
        }
        if let level, let range = compression.levels, !range.contains(level) {
            throw AssetPackFormatError(
                code: .invalidOption,
                message:
                    "--level \(level) is out of range for \(compression.rawValue). "
                    + "Fix: use \(range.lowerBound) to \(range.upperBound)"
            )
        }
        if threads < 1 {
            throw AssetPackFormatError(code: .invalidOption, message: "threads must be 1 or more")
        }
    }
}

/// What building a pack produced: the archive's identity and sizes, as the download manifest reports them.
public struct BuiltPack: Sendable, Hashable, Codable {
    /// The pack's ID.
    public var assetPackID: String
    /// Lower-case hex SHA-256 of the archive file.
    public var sha256: String
    /// The archive's size in bytes (what a client downloads).
    public var downloadSize: Int64
    /// The sum of the packed files' sizes (what an install writes).
    public var installSize: Int64
    /// How many files the pack holds.
    public var fileCount: Int
    /// The compression filter.
    public var compression: PackCompression
}

/// Builds pack archives with libarchive: pax tar, files under `Contents/`, an `Index.json` last.
public enum PackBuilder {
    /// Builds a pack archive from resolved sources and moves it into place atomically.
    ///
    /// Files are streamed in 1 MiB chunks and hashed on the way, so memory stays flat whatever their
    /// size. Entries are sorted and their metadata normalised: the same content and options give a
    /// byte-identical archive.
    /// - Parameters:
    ///   - source: The pack's manifest and files, from ``PackSource/resolve(_:root:)``.
    ///   - output: Where to write the archive; replaced only when the build succeeds.
    ///   - options: Compression.
    ///   - progress: Called with the bytes of file content packed so far.
    /// - Returns: The archive's digest and sizes.
    /// - Throws: ``AssetPackFormatError`` (`.io`, `.archive`, `.changedWhilePacking`, `.invalidOption`).
    public static func build(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions = PackBuildOptions(),
        progress: ((Int64) -> Void)? = nil
    ) throws -> BuiltPack {
        try buildIndexed(source, to: output, options: options, progress: progress).built
    }

    /// ``build(_:to:options:progress:)``, also returning the index written into the archive (what a server
    /// keeps to build deltas from this version later).
    public static func buildIndexed(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions = PackBuildOptions(),
        progress: ((Int64) -> Void)? = nil
    ) throws -> (built: BuiltPack, index: PackIndex) {
        try options.validate()
        let (index, sha256, size) = try AtomicFile.write(to: output) { fd in
            let binaryNames = source.files.contains { $0.path.utf8.contains { $0 >= 0x80 } }
            return try withArchiveWriter(to: fd, options: options, binaryNames: binaryNames) { writer in
                try writeEntries(source, writer: writer, progress: progress)
            }
        }
        let built = BuiltPack(
            assetPackID: source.manifest.assetPackID,
            sha256: sha256,
            downloadSize: size,
            installSize: index.installSize,
            fileCount: index.fileCount,
            compression: options.compression
        )
        return (built, index)
    }

    /// Opens a listed file for packing and makes sure it is the file that was listed, where it was listed:
    /// the last component is not followed (`O_NOFOLLOW`), the descriptor's real path is the listed one (no
    /// folder on the way was swapped for a symlink since the listing), and the device and inode match (the
    /// file was not replaced). A check and a later open can no longer be played against each other.
    static func openListed(_ file: PackFile) throws -> FileDescriptor {
        let raw = open(file.source.string, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard raw >= 0 else {
            let failure = Errno(rawValue: errno)
            if failure == .tooManySymbolicLinkLevels {
                throw AssetPackFormatError(
                    code: .unsafePath,
                    message: "\(file.source) became a symlink after it was listed; refused. Fix: pack again"
                )
            }
            throw AssetPackFormatError.io("open", file.source, failure)
        }
        let fd = FileDescriptor(rawValue: raw)
        var info = stat()
        let where_ = realpath("/proc/self/fd/\(raw)", nil)
        defer { free(where_) }
        let opened = where_.map { String(cString: $0) } ?? ""
        guard fstat(raw, &info) == 0, opened.utf8.elementsEqual(file.source.string.utf8) else {
            try? fd.close()
            throw AssetPackFormatError(
                code: .unsafePath,
                message:
                    "\(file.source) now leads to \(opened) (a folder on its way was replaced by a symlink after the "
                    + "listing); refused. Fix: pack again"
            )
        }
        guard UInt64(info.st_ino) == file.inode, UInt64(info.st_dev) == file.device else {
            try? fd.close()
            throw AssetPackFormatError(
                code: .changedWhilePacking,
                message:
                    "\(file.source) was replaced while it was being packed. Fix: pack again when nothing writes to it"
            )
        }
        return fd
    }

    private static func writeEntries(
        _ source: PackSource,
        writer: ArchiveWriter,
        progress: ((Int64) -> Void)?
    ) throws -> PackIndex {
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var rows: [PackIndex.File] = []
        rows.reserveCapacity(source.files.count)
        var packed: Int64 = 0
        for file in source.files {
            let fd = try openListed(file)
            var hasher = SHA256()
            try fd.closeAfter {
                #if canImport(Glibc)
                    _ = posix_fadvise(fd.rawValue, 0, 0, POSIX_FADV_SEQUENTIAL)
                #endif
                try writer.addFile(named: PackPath.contentsPrefix + file.path, size: file.size) { append in
                    while true {
                        let count: Int
                        do {
                            count = try fd.read(into: buffer, retryOnInterrupt: true)
                        } catch let errno as Errno {
                            throw AssetPackFormatError.io("read", file.source, errno)
                        }
                        if count == 0 { break }
                        let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                        hasher.update(bufferPointer: bytes)
                        try append(bytes)
                        packed += Int64(count)
                        progress?(packed)
                    }
                }
            }
            rows.append(PackIndex.File(path: file.path, size: file.size, sha256: hasher.finalize().hexString))
        }
        let index = PackIndex(
            formatVersion: PackIndex.currentFormatVersion,
            assetPackID: source.manifest.assetPackID,
            downloadPolicy: source.manifest.downloadPolicy,
            platforms: source.manifest.platforms,
            language: source.manifest.language,
            installSize: rows.reduce(0) { $0 + $1.size },
            fileCount: rows.count,
            files: rows
        )
        let json = try index.encoded()
        try writer.addFile(named: PackPath.indexEntryName, size: Int64(json.count)) { append in
            try json.withUnsafeBytes { try append($0) }
        }
        return index
    }
}
