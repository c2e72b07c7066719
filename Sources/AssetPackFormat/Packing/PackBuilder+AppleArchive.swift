import Crypto
import Foundation
import SystemPackage

extension PackBuilder {
    /// The name of the packaging manifest inside an Apple Archive pack: at the archive's root, beside
    /// `Contents/`, as `ba-package`'s archives are reported to carry it.
    public static let appleArchiveManifestName = "Manifest.json"

    /// Builds an Apple Archive pack: the packaging manifest (the file's own bytes) at the root, then every file
    /// under `Contents/` with its SHA-256 in its header (`SH2`), folders before what they hold.
    ///
    /// A file's digest goes into its header, before its bytes, so files are read twice: once to hash them,
    /// once to pack them by `reader` (hashed again, and a file that changed in between is refused; chunked
    /// there when `reader` chunks).
    static func makeAppleArchive(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions,
        keepIndex: Bool,
        reader: SourceFileReader,
        progress: ((Int64) -> Void)?
    ) throws -> Made {
        let manifest = try manifestBytes(source)
        let digests = try hashFiles(source.files)
        var rows: [PackIndex.File] = []
        var chunks = PackChunks()
        let (_, sha256, size) = try AtomicFile.write(to: output) { fd in
            try withAppleArchiveWriter(to: fd, compression: options.compression, threads: options.threads) {
                writer in
                try writer.addFile(
                    named: appleArchiveManifestName,
                    size: Int64(manifest.count),
                    sha256: Array(SHA256.hash(data: manifest))
                ) { append in
                    try manifest.withUnsafeBytes { try append($0) }
                }
                var packed: Int64 = 0
                for (number, file) in source.files.enumerated() {
                    let name = PackPath.contentsPrefix + file.path
                    let digest = try writer.addFile(named: name, size: file.size, sha256: Array(digests[number])) {
                        append in
                        try reader.read(number) { bytes in
                            try append(bytes)
                            packed += Int64(bytes.count)
                            progress?(packed)
                        }
                    }
                    guard digest == digests[number] else {
                        throw AssetPackFormatError(
                            code: .changedWhilePacking,
                            message: "\(file.source) changed while it was being packed. Fix: pack again when nothing "
                                + "writes to it"
                        )
                    }
                    if keepIndex {
                        rows.append(PackIndex.File(path: file.path, size: file.size, sha256: digest.hexString))
                    }
                    if let cut = reader.lastChunks { chunks.files[PathKey(file.path)] = cut }
                }
            }
        }
        let built = BuiltPack(
            assetPackID: source.manifest.assetPackID,
            sha256: sha256,
            downloadSize: size,
            installSize: source.installSize,
            fileCount: source.files.count,
            compression: options.compression,
            format: .aar
        )
        return (built, keepIndex ? header(source, files: rows) : nil, chunks)
    }

    /// The manifest file's bytes, as the pack was resolved from it.
    private static func manifestBytes(_ source: PackSource) throws -> Data {
        let path = FilePath(source.manifestFile)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
        } catch let errno as Errno {
            throw AssetPackFormatError.io("open", path, errno)
        }
        return try fd.closeAfter {
            var bytes = Data()
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count: Int
                do {
                    count = try buffer.withUnsafeMutableBytes { try fd.read(into: $0, retryOnInterrupt: true) }
                } catch let errno as Errno {
                    throw AssetPackFormatError.io("read", path, errno)
                }
                if count == 0 { return bytes }
                guard bytes.count + count <= PackagingManifest.maximumFileSize else {
                    throw AssetPackFormatError(
                        code: .invalidManifest,
                        message:
                            "\(path) grew past \(PackagingManifest.maximumFileSize) bytes while it was being packed"
                    )
                }
                bytes.append(contentsOf: buffer[0..<count])
            }
        }
    }

    /// Every listed file's SHA-256, read in order on a thread of its own.
    private static func hashFiles(_ files: [PackFile]) throws -> [SHA256.Digest] {
        let reader = SourceFileReader(files)
        defer { reader.stop() }
        return try files.indices.map { try reader.read($0) { _ in } }
    }
}

/// Opens an Apple Archive writer over `fd` (hashing and writing on threads of their own, as a tar's are), runs
/// `body`, and finishes the stream.
/// - Returns: What `body` returns, the SHA-256 of the bytes written and their count.
func withAppleArchiveWriter<T>(
    to fd: FileDescriptor,
    compression: PackCompression,
    threads: Int,
    _ body: (AppleArchiveWriter) throws -> T
) throws -> (result: T, sha256: String, size: Int64) {
    let sink = ArchiveSink(fd: fd)
    let result: T
    do {
        let writer = AppleArchiveWriter(sink: sink, compression: compression, threads: threads)
        try writer.start()
        result = try body(writer)
        try writer.finish()
    } catch {
        sink.abandon()
        if let failure = sink.failure {
            throw AssetPackFormatError(code: .io, message: "cannot write the pack: \(failure)", cause: failure)
        }
        throw error
    }
    switch sink.finish() {
    case .failure(let failure):
        throw AssetPackFormatError(code: .io, message: "cannot write the pack: \(failure)", cause: failure)
    case .success(let (sha256, size)):
        return (result, sha256, size)
    }
}
