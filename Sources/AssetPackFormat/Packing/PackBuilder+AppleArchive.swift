import Crypto
import Foundation
import SystemPackage

extension PackBuilder {
    /// The name of the packaging manifest inside an Apple Archive pack: at the archive's root, beside
    /// `Contents/`, as `ba-package`'s archives are reported to carry it.
    public static let appleArchiveManifestName = "Manifest.json"

    /// The largest file packed from one read: held in memory, hashed as it is read, then written after its
    /// header. A larger file is hashed in a pass of its own first, since its header (with the digest) must
    /// come before its bytes.
    static let heldFileLimit: Int64 = 4 << 20

    /// Builds an Apple Archive pack: the packaging manifest (the file's own bytes) at the root, then every file
    /// under `Contents/` with its SHA-256 in its header (`SH2`), folders before what they hold.
    ///
    /// A file's digest goes into its header, before its bytes. A file of up to ``heldFileLimit`` is read once by
    /// `reader` and held until its digest is known; a larger one is read twice: once to hash it, once to pack
    /// it by `reader` (hashed again, and a file that changed in between is refused). Files are chunked by
    /// `reader` when it chunks.
    static func makeAppleArchive(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions,
        keepIndex: Bool,
        reader: SourceFileReader,
        progress: ((Int64) -> Void)?
    ) throws -> Made {
        let manifest = try manifestBytes(source)
        let digests = try hashLargeFiles(source.files)
        var rows: [PackIndex.File] = []
        var chunks = PackChunks()
        var held = [UInt8]()
        var packed: Int64 = 0
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
                for (number, file) in source.files.enumerated() {
                    let name = PackPath.contentsPrefix + file.path
                    let digest: SHA256.Digest
                    if let expected = digests[number] {
                        digest = try writer.addFile(named: name, size: file.size, sha256: Array(expected)) { append in
                            try reader.read(number) { bytes in
                                try append(bytes)
                                packed += Int64(bytes.count)
                                progress?(packed)
                            }
                        }
                        guard digest == expected else {
                            throw AssetPackFormatError.changedWhilePacking(file.source.string, "changed")
                        }
                    } else {
                        held.removeAll(keepingCapacity: true)
                        digest = try reader.read(number) { bytes in
                            guard held.count + bytes.count <= heldFileLimit else {
                                throw AssetPackFormatError.changedWhilePacking(file.source.string, "grew")
                            }
                            held.append(contentsOf: bytes)
                        }
                        try writer.addFile(named: name, size: file.size, sha256: Array(digest)) { append in
                            try held.withUnsafeBytes { try append($0) }
                        }
                        packed += file.size
                        progress?(packed)
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

    /// The SHA-256 of every listed file larger than ``heldFileLimit`` (`nil` for the others), read in order on
    /// a thread of its own.
    private static func hashLargeFiles(_ files: [PackFile]) throws -> [SHA256.Digest?] {
        let large = files.indices.filter { files[$0].size > heldFileLimit }
        guard !large.isEmpty else { return Array(repeating: nil, count: files.count) }
        let reader = SourceFileReader(large.map { files[$0] })
        defer { reader.stop() }
        var digests = [SHA256.Digest?](repeating: nil, count: files.count)
        for (number, index) in large.enumerated() { digests[index] = try reader.read(number) { _ in } }
        return digests
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
        throw sink.failure ?? error
    }
    let (sha256, size) = try sink.finish().get()
    return (result, sha256, size)
}
