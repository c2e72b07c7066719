import Crypto
import Foundation
import SystemPackage

/// Reads pack archives back: their index, a full verification, or an extraction.
public enum PackReader {
    /// The largest index this reader accepts (a 100 000-file pack's index is about 15 MiB).
    static let maximumIndexSize: Int64 = 256 << 20

    /// Reads a pack's index without writing anything.
    /// - Parameter archive: The pack archive.
    /// - Returns: The index stored in it.
    /// - Throws: ``AssetPackFormatError``: `.notFound`, `.archive` (not a readable archive), `.corruptPack`
    ///   (no index, or an index that does not decode).
    public static func readIndex(at archive: FilePath) throws -> PackIndex {
        try withArchiveReader(at: archive) { reader in
            while let header = try reader.next() {
                if header.name.utf8.elementsEqual(PackPath.indexEntryName.utf8) {
                    return try decodeIndex(reader, header: header, maximumSize: maximumIndexSize)
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
    public static func verify(at archive: FilePath) throws -> PackIndex {
        try scan(archive.string, destination: nil, limit: nil) { try withArchiveReader(at: archive, $0) }.index
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
    /// - Returns: The verified index.
    /// - Throws: ``AssetPackFormatError`` with code `.corruptPack`, `.archive` or `.io`.
    public static func extract(_ archive: FilePath, into destination: FilePath, limit: Int64? = nil) throws
        -> PackIndex
    {
        try scan(archive.string, destination: destination, limit: limit) { try withArchiveReader(at: archive, $0) }
            .index
    }

    /// Extracts a pack that arrives as a stream of blocks (a download in progress), exactly as
    /// ``extract(_:into:limit:)`` extracts a file: the archive is never written to disk whole.
    /// - Parameters:
    ///   - name: The archive's URL, for messages.
    ///   - destination: An existing, empty folder.
    ///   - limit: The most bytes of file content to write (the declared install size), or `nil`.
    ///   - next: Hands out the archive's bytes in order: a block valid until the next call, empty at the end.
    ///     An error it throws ends the extraction and is rethrown as it is.
    /// - Returns: The verified index.
    /// - Throws: ``AssetPackFormatError`` with code `.corruptPack`, `.archive` or `.io`, or `next`'s error.
    public static func extract(
        streamNamed name: String,
        into destination: FilePath,
        limit: Int64? = nil,
        reading next: @escaping () throws -> UnsafeRawBufferPointer
    ) throws -> PackIndex {
        try scan(name, destination: destination, limit: limit) {
            try withArchiveReader(streaming: next, name: name, $0)
        }.index
    }

    /// Extracts a delta archive (see ``PackDelta``) as it arrives, as ``extract(streamNamed:into:limit:reading:)``
    /// does a full one, except that files the index lists may be absent: they are the base version's.
    /// - Returns: The verified index of the new version, and the files it lists that the delta did not hold.
    /// - Throws: As ``extract(streamNamed:into:limit:reading:)``.
    public static func extractDelta(
        streamNamed name: String,
        into destination: FilePath,
        limit: Int64? = nil,
        expecting binding: PackDelta.Binding,
        baseFileCount: Int,
        reading next: @escaping () throws -> UnsafeRawBufferPointer
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        try scan(name, destination: destination, limit: limit, delta: (binding, baseFileCount)) {
            try withArchiveReader(streaming: next, name: name, $0)
        }
    }

    /// Extracts a delta archive file: see ``extractDelta(streamNamed:into:limit:expecting:baseFileCount:reading:)``.
    public static func extractDelta(
        _ archive: FilePath,
        into destination: FilePath,
        limit: Int64? = nil,
        expecting binding: PackDelta.Binding,
        baseFileCount: Int
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        try scan(archive.string, destination: destination, limit: limit, delta: (binding, baseFileCount)) {
            try withArchiveReader(at: archive, $0)
        }
    }

    private static func scan(
        _ archive: String,
        destination: FilePath?,
        limit: Int64?,
        delta: (binding: PackDelta.Binding, baseFiles: Int)? = nil,
        open: ((ArchiveReader) throws -> Void) throws -> Void
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        let root = destination.map { $0.lexicallyNormalized() }
        let partial = delta != nil
        var bound = delta == nil
        var seen: [PathKey: (size: Int64, sha256: SHA256.Digest)] = [:]  // digests inline, not 64-byte strings
        var folders: Set<PathKey> = []
        var nameBytes = 0
        var written: Int64 = 0
        var index: PackIndex?
        let disk = try root.map(DiskWriter.init(root:))
        try open { reader in
            while let header = try reader.next() {
                if let delta, !bound {  // a delta's first entry says what it is for
                    try checkBinding(reader, header: header, expected: delta.binding)
                    bound = true
                    continue
                }
                if header.name.utf8.elementsEqual(PackPath.indexEntryName.utf8) {
                    guard index == nil else { throw rule(archive, "holds two index entries") }
                    // An index lists every file once: its size follows from the entries before it (and for
                    // a delta, from the base's files it keeps, up to a 4 KiB path each), so a small download
                    // cannot declare an index of hundreds of megabytes.
                    let kept = 4352 * Int64(min(delta?.baseFiles ?? 0, 1 << 20))
                    let bound = min(
                        maximumIndexSize,
                        64 << 10 + Int64(nameBytes) + 256 * Int64(seen.count) + kept
                    )
                    index = try decodeIndex(reader, header: header, maximumSize: bound)
                    continue
                }
                if header.type == ArchiveFileType.directory,
                    header.name.hasBytePrefix(PackPath.contentsPrefix)
                        || (header.name + "/").utf8.elementsEqual(PackPath.contentsPrefix.utf8)
                {
                    continue
                }
                let relative = try entryPath(header, archive: archive)
                let entryKey = PathKey(relative)
                guard seen[entryKey] == nil else {
                    throw rule(archive, "holds \(header.name) twice")
                }
                // A path that is a file and a folder at once cannot be installed: say so, not "cannot create".
                guard !folders.contains(entryKey) else {
                    throw rule(archive, "holds \(relative) as a file and as a folder")
                }
                var ancestor = Substring(relative).utf8
                while let slash = ancestor.lastIndex(of: UInt8(ascii: "/")) {
                    ancestor = ancestor[..<slash]
                    let key = PathKey(String(Substring(ancestor)))
                    if seen[key] != nil {
                        throw rule(archive, "holds \(key.path) as a file and as a folder")
                    }
                    // A folder seen before was checked with all of its parents.
                    guard folders.insert(key).inserted else { break }
                }
                nameBytes += relative.utf8.count
                // Compared without adding: a declared size near Int64.max cannot overflow.
                if let limit, max(header.size, 0) > limit - written {
                    throw corrupt(
                        archive,
                        "unpacks to more than its declared install size of \(limit) bytes (at \(header.name))"
                    )
                }
                var hasher = SHA256()
                var size: Int64 = 0
                let consume: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void = { write in
                    try reader.readData { block in
                        size += Int64(block.count)
                        written += Int64(block.count)
                        if let limit, written > limit {
                            throw corrupt(
                                archive,
                                "unpacks to more than its declared install size of \(limit) bytes"
                            )
                        }
                        hasher.update(bufferPointer: block)
                        try write(block)
                    }
                }
                if let disk {
                    try disk.writeFile(at: relative, consume)
                } else {
                    try consume { _ in }
                }
                seen[entryKey] = (size, hasher.finalize())
            }
        }
        guard bound else { throw missingBinding(archive) }
        guard let index else { throw missingIndex(archive) }
        var absent: [PackIndex.File] = []
        for row in index.files {
            guard let found = seen.removeValue(forKey: PathKey(row.path)) else {
                if partial {
                    absent.append(row)
                    continue
                }
                throw corrupt(archive, "lacks \(row.path), which its index lists")
            }
            guard found.size == row.size, found.sha256.hexString == row.sha256 else {
                throw corrupt(
                    archive,
                    "holds \(row.path) with \(found.size) bytes and SHA-256 \(found.sha256.hexString.prefix(12)), but its index "
                        + "says \(row.size) bytes and \(row.sha256.prefix(12))"
                )
            }
        }
        if let extra = seen.keys.min() {
            throw rule(archive, "holds \(extra), which its index does not list")
        }
        return (index, absent)
    }

    /// Validates an entry and returns its path in the namespace (without `Contents/`).
    private static func entryPath(_ header: ArchiveEntryHeader, archive: String) throws -> String {
        if header.hardlink != nil {
            throw rule(archive, "holds a hard link (\(header.name)); packs hold regular files only")
        }
        guard header.type == ArchiveFileType.regular else {
            let kind = header.type == ArchiveFileType.symlink ? "a symlink" : "a special file (device, FIFO or socket)"
            throw rule(archive, "holds \(kind) (\(header.name)); packs hold regular files only")
        }
        // Bytes, not characters: `Contents/` followed by a combining mark is still `Contents/` to a file system.
        let rest = String(Substring(header.name.utf8.dropFirst(PackPath.contentsPrefix.utf8.count)))
        guard header.name.hasBytePrefix(PackPath.contentsPrefix), let relative = PackPath.normalize(rest),
            relative.utf8.elementsEqual(rest.utf8)
        else {
            throw rule(
                archive,
                "holds an entry named \"\(AssetPackID.printable(header.name))\", outside Contents/ or with '..', "
                    + "'.', '//' or an absolute path; refused"
            )
        }
        return relative
    }

    private static func decodeIndex(_ reader: ArchiveReader, header: ArchiveEntryHeader, maximumSize: Int64) throws
        -> PackIndex
    {
        let most = ByteFormat.string(maximumSize)
        guard header.type == ArchiveFileType.regular, header.size <= maximumSize else {
            throw corrupt(
                reader.path,
                "has an index entry that is not a regular file of at most \(most) (the most its files can need)"
            )
        }
        // One buffer of the declared size (bounded above), decoded as it is: growing an array by doubling and
        // copying it into Data held three times the index at the peak (35 MB at 100 000 files).
        var bytes = Data()
        bytes.reserveCapacity(Int(max(0, header.size)))
        try reader.readData { block in
            guard Int64(block.count) <= maximumSize - Int64(bytes.count) else {
                throw corrupt(reader.path, "has an index larger than \(most) (the most its files can need)")
            }
            bytes.append(contentsOf: block)
        }
        return try PackIndex.decode(bytes, source: reader.path)
    }

    /// Reads a delta's `Delta.json` and refuses a delta for another pack, base or target.
    private static func checkBinding(_ reader: ArchiveReader, header: ArchiveEntryHeader, expected: PackDelta.Binding)
        throws
    {
        let maximumSize = 4096
        guard header.name.utf8.elementsEqual(PackPath.deltaEntryName.utf8), header.type == ArchiveFileType.regular,
            header.size <= maximumSize
        else { throw missingBinding(reader.path) }
        var bytes: [UInt8] = []
        try reader.readData { block in
            guard block.count <= maximumSize - bytes.count else { throw missingBinding(reader.path) }
            bytes.append(contentsOf: block)
        }
        guard let found = try? JSONDecoder().decode(PackDelta.Binding.self, from: Data(bytes)) else {
            throw missingBinding(reader.path)
        }
        guard found == expected else {
            throw rule(
                reader.path,
                "is a delta from \(found.fromSHA256.prefix(12)) to \(found.toSHA256.prefix(12)) of pack "
                    + "\(AssetPackID.printable(found.assetPackID)), not from \(expected.fromSHA256.prefix(12)) to "
                    + "\(expected.toSHA256.prefix(12)) of \(expected.assetPackID) as its manifest entry says"
            )
        }
    }

    private static func missingBinding(_ archive: String) -> AssetPackFormatError {
        rule(
            archive,
            "does not start with a \(PackPath.deltaEntryName) entry naming its base and target; it is not a delta"
        )
    }

    private static func missingIndex(_ archive: String) -> AssetPackFormatError {
        corrupt(archive, "has no \(PackPath.indexEntryName) entry; it was not built by ba-mock, or it is truncated")
    }

    private static func corrupt(_ archive: String, _ problem: String) -> AssetPackFormatError {
        AssetPackFormatError(code: .corruptPack, message: "pack \(archive) \(problem)")
    }

    /// An archive that breaks a rule of packs (a link, a special file, a name outside `Contents/`, an entry
    /// twice or unlisted): the same bytes would break it again, unlike damage in transit.
    private static func rule(_ archive: String, _ problem: String) -> AssetPackFormatError {
        var error = corrupt(archive, problem)
        error.isRuleViolation = true
        return error
    }
}
