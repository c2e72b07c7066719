import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// How a pack archive is laid out and compressed.
public struct PackBuildOptions: Sendable, Hashable {
    /// The container: pax tar (the default) or Apple Archive.
    public var format: PackFormat
    /// The compression: a filter of the tar, or the block algorithm of an Apple Archive.
    public var compression: PackCompression
    /// The filter's level; `nil` takes the filter's default (zstd 3, gzip 6, xz 6, lz4 1).
    public var level: Int?
    /// Compression threads: for a tar, 1 runs zstd on a stage of its own and 2 or more are zstd's and xz's
    /// workers (past a few MiB their bytes differ from one thread's, and are the same for any count from 2);
    /// for an Apple Archive, the threads that compress its blocks (the same bytes for any count).
    public var threads: Int

    /// Creates options.
    /// - Parameters:
    ///   - format: The container (default tar).
    ///   - compression: The compression (default: zstd for tar, LZFSE for Apple Archive).
    ///   - level: The level, or `nil` for the filter's default.
    ///   - threads: Compression threads (default: 1 for a tar, one per core for an Apple Archive). One
    ///     compressing thread already runs beside the threads that read and hash the input and hash and write
    ///     the output; zstd's own workers (2 and more) help only compressible input and cost about 65 MiB more
    ///     memory (measured before that pipeline: 512 MiB of incompressible files took 1.0-1.2 s with 1 thread
    ///     and 1.8-2.3 s with 2; 20 000 small half-text files 3.0 s and 2.4-3.0 s). An Apple Archive's blocks
    ///     are compressed apart anyway, and its workers hold 8 MiB each.
    public init(
        format: PackFormat = .tar,
        compression: PackCompression,
        level: Int? = nil,
        threads: Int? = nil
    ) {
        self.format = format
        self.compression = compression
        self.level = level
        self.threads = threads ?? (format == .aar ? BlockCodecWorkers.defaultCount : 1)
    }

    /// Creates options with the format's default compression (zstd for tar, LZFSE for Apple Archive).
    public init(format: PackFormat = .tar, level: Int? = nil, threads: Int? = nil) {
        self.init(format: format, compression: format.defaultCompression, level: level, threads: threads)
    }

    /// The level that will be used.
    public var effectiveLevel: Int? { compression == .none ? nil : (level ?? compression.defaultLevel) }

    /// Checks the level against the filter's range.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidOption`.
    public func validate() throws {
        guard format.compressions.contains(compression) else {
            let other = PackFormat.allCases.first { $0 != format && $0.compressions.contains(compression) }
            throw AssetPackFormatError(
                code: .invalidOption,
                message:
                    "--compression \(compression.rawValue) does not go with --format \(format.rawValue). Fix: use "
                    + format.compressions.map(\.rawValue).joined(separator: ", ")
                    + (other.map { ", or --format \($0.rawValue)" } ?? "")
            )
        }
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
    /// The compression.
    public var compression: PackCompression
    /// The container.
    public var format: PackFormat

    /// Creates a description of a built pack.
    public init(
        assetPackID: String,
        sha256: String,
        downloadSize: Int64,
        installSize: Int64,
        fileCount: Int,
        compression: PackCompression,
        format: PackFormat = .tar
    ) {
        self.assetPackID = assetPackID
        self.sha256 = sha256
        self.downloadSize = downloadSize
        self.installSize = installSize
        self.fileCount = fileCount
        self.compression = compression
        self.format = format
    }

    private enum CodingKeys: String, CodingKey {
        case assetPackID, sha256, downloadSize, installSize, fileCount, compression, format
    }

    /// Decodes a description; one written before Apple Archive packs existed is a tar's.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        assetPackID = try container.decode(String.self, forKey: .assetPackID)
        sha256 = try container.decode(String.self, forKey: .sha256)
        downloadSize = try container.decode(Int64.self, forKey: .downloadSize)
        installSize = try container.decode(Int64.self, forKey: .installSize)
        fileCount = try container.decode(Int.self, forKey: .fileCount)
        compression = try container.decode(PackCompression.self, forKey: .compression)
        format = try container.decodeIfPresent(PackFormat.self, forKey: .format) ?? .tar
    }
}

/// Builds pack archives: with libarchive, pax tar, files under `Contents/`, an `Index.json` last; or Apple
/// Archives (`PackBuildOptions.format`), see ``makeAppleArchive(_:to:options:keepIndex:progress:)``.
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
        try make(source, to: output, options: options, keepIndex: false, chunked: false, progress: progress).built
    }

    /// Builds the pack a packaging manifest file describes, as `ba-package Manifest.json -o Pack.aar` does:
    /// selector paths resolved against `root`, the output's folders made.
    /// - Parameters:
    ///   - manifest: The packaging manifest (JSON; comments allowed).
    ///   - root: The folder selector paths are relative to.
    ///   - output: Where to write the archive; replaced only when the build succeeds.
    ///   - options: Format and compression.
    ///   - warn: Told each warning of the manifest and its files, before the build.
    ///   - progress: Called with the pack's ID, the bytes of file content packed so far, and the total.
    /// - Returns: The archive's digest and sizes.
    /// - Throws: ``AssetPackFormatError`` for a manifest that does not check, a file that does not read, or an
    ///   output that cannot be written.
    public static func build(
        manifest: FilePath,
        root: FilePath,
        to output: FilePath,
        options: PackBuildOptions,
        warn: (String) -> Void = { _ in },
        progress: ((_ assetPackID: String, _ done: Int64, _ total: Int64) -> Void)? = nil
    ) throws -> BuiltPack {
        try AtomicFile.makeFolders(for: output, option: "-o")
        let source = try PackSource.resolve(try PackagingManifest.load(from: manifest), root: root)
        for warning in source.warnings { warn(warning) }
        let (id, total) = (source.manifest.assetPackID, source.installSize)
        return try build(
            source,
            to: output,
            options: options,
            progress: progress.map { report in { report(id, $0, total) } }
        )
    }

    /// ``build(_:to:options:progress:)``, also returning the index written into the archive (what a server
    /// keeps to build deltas from this version later).
    public static func buildIndexed(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions = PackBuildOptions(),
        progress: ((Int64) -> Void)? = nil
    ) throws -> (built: BuiltPack, index: PackIndex) {
        let made = try make(source, to: output, options: options, keepIndex: true, chunked: false, progress: progress)
        return (made.built, made.index ?? header(source, files: []))
    }

    /// ``buildIndexed(_:to:options:progress:)``, also returning the content-defined chunks of the files large
    /// enough for delta recipes: the list ``PackChunks/compute(archive:)`` makes of the archive, cut from the
    /// bytes as they are packed, on the thread that reads them, rather than by reading the archive again.
    public static func buildChunked(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions = PackBuildOptions(),
        progress: ((Int64) -> Void)? = nil
    ) throws -> (built: BuiltPack, index: PackIndex, chunks: PackChunks) {
        let made = try make(source, to: output, options: options, keepIndex: true, chunked: true, progress: progress)
        return (made.built, made.index ?? header(source, files: []), made.chunks)
    }

    /// What a build made: the pack, its index when kept, its chunks when asked (else empty).
    typealias Made = (built: BuiltPack, index: PackIndex?, chunks: PackChunks)

    private static func make(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions,
        keepIndex: Bool,
        chunked: Bool,
        progress: ((Int64) -> Void)?
    ) throws -> Made {
        try options.validate()
        let reader = SourceFileReader(source.files, chunkFrom: chunked ? ContentChunker.wholeFileBelow : nil)
        defer { reader.stop() }
        if options.format == .aar {
            return try makeAppleArchive(
                source,
                to: output,
                options: options,
                keepIndex: keepIndex,
                reader: reader,
                progress: progress
            )
        }
        let spool = try AtomicFile.unnamedFile(in: output.removingLastComponent())
        let ((json, index, chunks), sha256, size) = try spool.closeAfter {
            try AtomicFile.write(to: output) { fd in
                let binaryNames = source.files.contains { $0.path.utf8.contains { $0 >= 0x80 } }
                let expected = source.installSize
                return try withArchiveWriter(to: fd, options: options, expected: expected, binaryNames: binaryNames) {
                    writer in
                    try writeEntries(
                        source,
                        writer: writer,
                        reader: reader,
                        index: IndexJSON(spoolingTo: spool),
                        keepIndex: keepIndex,
                        progress: progress
                    )
                }
            }
        }
        let built = BuiltPack(
            assetPackID: source.manifest.assetPackID,
            sha256: sha256,
            downloadSize: size,
            installSize: json.installSize,
            fileCount: json.count,
            compression: options.compression
        )
        return (built, index, chunks)
    }

    /// The index's fields other than its files.
    static func header(_ source: PackSource, files: [PackIndex.File]) -> PackIndex {
        PackIndex(
            formatVersion: PackIndex.currentFormatVersion,
            assetPackID: source.manifest.assetPackID,
            downloadPolicy: source.manifest.downloadPolicy,
            platforms: source.manifest.platforms,
            language: source.manifest.language,
            installSize: files.reduce(0) { $0 + $1.size },
            fileCount: files.count,
            files: files
        )
    }

    /// Writes every file, then the index, whose JSON grows a row per file packed (the only per-file state
    /// a build holds besides the file list); the rows as ``PackIndex/File`` values only if `keepIndex`, and
    /// the chunks `reader` cut.
    private static func writeEntries(
        _ source: PackSource,
        writer: ArchiveWriter,
        reader: SourceFileReader,
        index: IndexJSON,
        keepIndex: Bool,
        progress: ((Int64) -> Void)?
    ) throws -> (json: IndexJSON, index: PackIndex?, chunks: PackChunks) {
        var json = index
        var chunks = PackChunks()
        var rows: [PackIndex.File] = []
        if keepIndex { rows.reserveCapacity(source.files.count) }
        var packed: Int64 = 0
        for (number, file) in source.files.enumerated() {
            let digest = try writer.addFile(named: PackPath.contentsPrefix + file.path, size: file.size) { append in
                try reader.read(number) { bytes in
                    try append(bytes)
                    packed += Int64(bytes.count)
                    progress?(packed)
                }
            }
            try json.append(path: file.path, size: file.size, sha256: digest)
            if let cut = reader.lastChunks { chunks.files[PathKey(file.path)] = cut }
            if keepIndex { rows.append(PackIndex.File(path: file.path, size: file.size, sha256: digest.hexString)) }
        }
        let (prefix, suffix) = try json.frame(header(source, files: []))
        try writer.addFile(
            named: PackPath.indexEntryName,
            size: Int64(prefix.count + suffix.count) + json.rowBytes
        ) { append in
            try prefix.withUnsafeBytes { try append($0) }
            try json.forEachRowChunk(append)
            try suffix.withUnsafeBytes { try append($0) }
        }
        return (json, keepIndex ? header(source, files: rows) : nil, chunks)
    }
}
