import Crypto
import Foundation
import SystemPackage

/// Reads pack archives back: their index, a full verification, or an extraction.
public enum PackArchiveReader {
    /// The largest index this reader accepts (a 100 000-file pack's index is about 15 MiB).
    static let maximumIndexSize: Int64 = 256 << 20

    /// Reads a pack's index without writing anything.
    /// - Parameter archive: The pack archive.
    /// - Returns: The index stored in it.
    /// - Throws: ``AssetPackFormatError``: `.notFound`, `.archive` (not a readable archive), `.corruptPack`
    ///   (no index, or an index that does not decode).
    public static func readIndex(at archive: FilePath, describedAs fallback: PackIndex? = nil) throws -> PackIndex {
        try withArchiveReader(at: archive) { reader in
            // An Apple Archive has no index of its own: it is the entries' own, read whole.
            if reader.format == .aar {
                return try scanEntries(reader, reader.path, destination: nil, limit: nil, describedAs: fallback).index
            }
            while let header = try reader.next() {
                if header.name.utf8.elementsEqual(PackPath.indexEntryName.utf8) {
                    let spool = try spoolIndex(
                        reader,
                        header: header,
                        maximumSize: maximumIndexSize,
                        to: nil,
                        beside: nil
                    )
                    return try spool.closeAfter {
                        var parser = IndexParser(reading: spool)
                        return try PackIndex.decode(&parser, source: reader.path)
                    }
                }
            }
            throw missingIndex(archive.string)
        }
    }

    /// Reads every entry, hashes it, and checks it against the index: sizes, digests, no missing and no
    /// extra files.
    /// - Parameter archive: The pack archive.
    /// - Returns: The verified index.
    /// - Throws: ``AssetPackFormatError`` with code `.corruptPack` naming the first mismatch.
    public static func verify(at archive: FilePath, describedAs fallback: PackIndex? = nil) throws -> PackIndex {
        try scan(archive.string, destination: nil, limit: nil, describedAs: fallback) {
            try withArchiveReader(at: archive, $0)
        }.index
    }

    /// Extracts a pack's files into `destination` (without the `Contents/` prefix) and verifies them.
    ///
    /// Refuses anything a pack never holds (symlinks, hard links, devices, FIFOs, names with `..` or a
    /// leading `/`, duplicates, entries outside `Contents/`), stops when the bytes written pass `limit`,
    /// and checks every file against the index at the end. On failure what was written stays for the
    /// caller to remove (it extracts into a staging folder of its own).
    /// - Parameters:
    ///   - archive: The pack archive.
    ///   - destination: An existing, empty folder.
    ///   - limit: The most bytes of file content to write (the declared install size), or `nil`.
    ///   - indexCopy: Where to keep the index's bytes, as the archive holds them, once verified (a new file),
    ///     or `nil`. With a copy the returned index has no rows: they stay in the copy, and an index of
    ///     100 000 files is never held whole (only the files seen, 40-odd bytes each, while they are
    ///     checked against it).
    /// - Returns: The verified index.
    /// - Throws: ``AssetPackFormatError`` with code `.corruptPack`, `.archive` or `.io`.
    public static func extract(
        _ archive: FilePath,
        into destination: FilePath,
        limit: Int64? = nil,
        indexCopy: FilePath? = nil,
        describedAs fallback: PackIndex? = nil
    ) throws -> PackIndex {
        try scan(
            archive.string,
            destination: destination,
            limit: limit,
            indexCopy: indexCopy,
            describedAs: fallback
        ) {
            try withArchiveReader(at: archive, $0)
        }.index
    }

    /// Extracts a pack that arrives as a stream of blocks (a download in progress), exactly as
    /// ``extract(_:into:limit:)`` extracts a file: the archive is never written to disk whole.
    /// - Parameters:
    ///   - name: The archive's URL, for messages.
    ///   - destination: An existing, empty folder.
    ///   - limit: The most bytes of file content to write (the declared install size), or `nil`.
    ///   - hashingFiles: `false` when the caller checks the digest of these very bytes against what was
    ///     published before it keeps anything: each file is then checked against the index by its size, and
    ///     not hashed (that digest covers its bytes, and the index's); an Apple Archive's file without an
    ///     SH2 is hashed still, its row needs a digest.
    ///   - next: Hands out the archive's bytes in order: a block valid until the next call, empty at the end.
    ///     An error it throws ends the extraction and is rethrown as it is.
    /// - Returns: The verified index.
    /// - Throws: ``AssetPackFormatError`` with code `.corruptPack`, `.archive` or `.io`, or `next`'s error.
    public static func extract(
        streamNamed name: String,
        into destination: FilePath,
        limit: Int64? = nil,
        indexCopy: FilePath? = nil,
        describedAs fallback: PackIndex? = nil,
        hashingFiles: Bool = true,
        reading next: @escaping () throws -> UnsafeRawBufferPointer
    ) throws -> PackIndex {
        try scan(
            name,
            destination: destination,
            limit: limit,
            indexCopy: indexCopy,
            describedAs: fallback,
            hashingFiles: hashingFiles
        ) {
            try withArchiveReader(streaming: next, name: name, $0)
        }.index
    }

    static func scan(
        _ archive: String,
        destination: FilePath?,
        limit: Int64?,
        indexCopy: FilePath? = nil,
        delta: DeltaScan? = nil,
        describedAs fallback: PackIndex? = nil,
        hashingFiles: Bool = true,
        open: ((ArchiveReader) throws -> Void) throws -> Void
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        var result: (index: PackIndex, absent: [PackIndex.File])?
        try open { reader in
            result = try scanEntries(
                reader,
                archive,
                destination: destination,
                limit: limit,
                indexCopy: indexCopy,
                delta: delta,
                describedAs: fallback,
                hashingFiles: hashingFiles
            )
        }
        guard let result else { throw missingIndex(archive) }
        return result
    }

    /// Checks rows against the files seen, removing each one found: a row whose file is absent is an error,
    /// or for a delta (`partial`) one of the rows returned. The files seen that remain once every row was
    /// checked are ones the index does not list.
    static func check(
        _ rows: [PackIndex.File],
        against seen: inout SeenFiles,
        partial: Bool,
        archive: String
    ) throws -> [PackIndex.File] {
        var absent: [PackIndex.File] = []
        for row in rows where try !check(row.path, row.size, row.sha256, against: &seen, archive: archive) {
            guard partial else { throw corrupt(archive, "lacks \(row.path), which its index lists") }
            absent.append(row)
        }
        return absent
    }

    /// Checks one row: `false` when no file was seen at its path, an error when the file seen there has
    /// another size or digest (its size only, when it was not hashed); the file is forgotten either way.
    static func check(
        _ path: String,
        _ size: Int64,
        _ sha256: String,
        against seen: inout SeenFiles,
        archive: String
    ) throws -> Bool {
        guard let found = seen.remove(PathKey(path)) else { return false }
        // A file not hashed cannot show a row's digest wrong; one that is not a digest at all is refused still.
        guard found.sha256 != nil || isLowerCaseSHA256(sha256) else {
            throw corrupt(archive, "has an index that gives \(path) a sha256 that is not 64 lower-case hex digits")
        }
        guard found.size == size, found.sha256?.matchesHex(sha256) ?? true else {
            let (seenDigest, rowDigest) = FileDigest.shown(found.sha256?.hexString ?? "", sha256)
            throw corrupt(
                archive,
                "holds \(path) with \(found.size) bytes\(found.sha256 == nil ? "" : " and SHA-256 " + seenDigest), "
                    + "but its index says \(size) bytes and \(rowDigest)"
            )
        }
        return true
    }

    /// Whether `hex` is written as an index writes a SHA-256: 64 lower-case hexadecimal digits.
    static func isLowerCaseSHA256(_ hex: String) -> Bool {
        hex.utf8.count == 64 && hex.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Validates an entry and returns its path in the namespace (without `Contents/`).
    static func entryPath(
        _ header: ArchiveEntryHeader,
        archive: String,
        prefix: String = PackPath.contentsPrefix
    ) throws -> String {
        if header.hardlink != nil {
            throw rule(archive, "holds a hard link (\(header.name)); packs hold regular files only")
        }
        guard header.type == ArchiveFileType.regular else {
            let kind = header.type == ArchiveFileType.symlink ? "a symlink" : "a special file (device, FIFO or socket)"
            throw rule(archive, "holds \(kind) (\(header.name)); packs hold regular files only")
        }
        // Bytes, not characters: `Contents/` followed by a combining mark is still `Contents/` to a file system.
        let rest = String(Substring(header.name.utf8.dropFirst(prefix.utf8.count)))
        guard header.name.hasBytePrefix(prefix), let relative = PackPath.normalize(rest),
            relative.utf8.elementsEqual(rest.utf8)
        else {
            throw rule(
                archive,
                "holds an entry named \"\(AssetPackID.printable(header.name))\", outside \(prefix) or with '..', "
                    + "'.', '//' or an absolute path; refused"
            )
        }
        return relative
    }

    /// Writes the index entry's bytes to `copy` (a new file), or to an unnamed file beside the extraction,
    /// for reading once every file was seen: a regular file of at most `maximumSize` bytes, its declared size
    /// checked before anything is written and its real size as it comes.
    static func spoolIndex(
        _ reader: ArchiveReader,
        header: ArchiveEntryHeader,
        maximumSize: Int64,
        to copy: FilePath?,
        beside destination: FilePath?
    ) throws -> FileDescriptor {
        let most = ByteFormat.string(maximumSize)
        guard header.type == ArchiveFileType.regular, header.size <= maximumSize else {
            throw corrupt(
                reader.path,
                "has an index entry that is not a regular file of at most \(most) (the most its files can need)"
            )
        }
        let fd: FileDescriptor
        if let copy {
            do {
                fd = try FileDescriptor.open(
                    copy,
                    .readWrite,
                    options: [.create, .exclusiveCreate, .closeOnExec],
                    permissions: [.ownerReadWrite, .groupRead, .otherRead]
                )
            } catch let errno as Errno {
                throw AssetPackFormatError.io("create", copy, errno)
            }
        } else {
            let folder = destination?.removingLastComponent() ?? FilePath(NSTemporaryDirectory())
            fd = try AtomicFile.unnamedFile(in: folder)
        }
        var written: Int64 = 0
        do {
            try reader.readData { block in
                guard Int64(block.count) <= maximumSize - written else {
                    throw corrupt(reader.path, "has an index larger than \(most) (the most its files can need)")
                }
                do {
                    _ = try fd.writeAll(toAbsoluteOffset: written, block)
                } catch let errno as Errno {
                    throw AssetPackFormatError.io(
                        "write the index of \(reader.path) to",
                        copy ?? "a temporary file",
                        errno
                    )
                }
                written += Int64(block.count)
            }
        } catch {
            try? fd.close()
            throw error
        }
        return fd
    }

    static func missingIndex(_ archive: String) -> AssetPackFormatError {
        corrupt(archive, "has no \(PackPath.indexEntryName) entry; it was not built by ba-mock, or it is truncated")
    }

    static func corrupt(_ archive: String, _ problem: String) -> AssetPackFormatError {
        AssetPackFormatError(code: .corruptPack, message: "pack \(archive) \(problem)")
    }

    /// An archive that breaks a rule of packs (a link, a special file, a name outside `Contents/`, an entry
    /// twice or unlisted): the same bytes would break it again, unlike damage in transit.
    static func rule(_ archive: String, _ problem: String) -> AssetPackFormatError {
        var error = corrupt(archive, problem)
        error.isRuleViolation = true
        return error
    }
}
