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
        reading next: @escaping () throws -> UnsafeRawBufferPointer
    ) throws -> PackIndex {
        try scan(name, destination: destination, limit: limit, indexCopy: indexCopy, describedAs: fallback) {
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
        indexCopy: FilePath? = nil,
        reading next: @escaping () throws -> UnsafeRawBufferPointer
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        try scan(name, destination: destination, limit: limit, indexCopy: indexCopy, delta: (binding, baseFileCount)) {
            try withArchiveReader(streaming: next, name: name, $0)
        }
    }

    /// Extracts a delta archive file: see ``extractDelta(streamNamed:into:limit:expecting:baseFileCount:reading:)``.
    public static func extractDelta(
        _ archive: FilePath,
        into destination: FilePath,
        limit: Int64? = nil,
        expecting binding: PackDelta.Binding,
        baseFileCount: Int,
        indexCopy: FilePath? = nil
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        try scan(
            archive.string,
            destination: destination,
            limit: limit,
            indexCopy: indexCopy,
            delta: (binding, baseFileCount)
        ) {
            try withArchiveReader(at: archive, $0)
        }
    }

    private static func scan(
        _ archive: String,
        destination: FilePath?,
        limit: Int64?,
        indexCopy: FilePath? = nil,
        delta: (binding: PackDelta.Binding, baseFiles: Int)? = nil,
        describedAs fallback: PackIndex? = nil,
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
                describedAs: fallback
            )
        }
        guard let result else { throw missingIndex(archive) }
        return result
    }

    private static func scanEntries(
        _ reader: ArchiveReader,
        _ archive: String,
        destination: FilePath?,
        limit: Int64?,
        indexCopy: FilePath? = nil,
        delta: (binding: PackDelta.Binding, baseFiles: Int)? = nil,
        describedAs fallback: PackIndex? = nil
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        let apple = reader.format == .aar
        if apple, delta != nil {
            throw rule(archive, "is an Apple Archive, but a delta is always a tar made by ba-mock")
        }
        var carried: PackagingManifest?  // an Apple Archive's own description
        var unreadable: AssetPackFormatError?  // a root JSON entry that is not one
        var appleRows: [PackIndex.File] = []  // an Apple Archive's index, made from its entries
        var digestsCarried = 0  // of its files, those whose SH2 was checked
        let root = destination.map { $0.lexicallyNormalized() }
        let partial = delta != nil
        var bound = delta == nil
        var seen = SeenFiles()
        var folders: Set<PathKey> = []
        var nameBytes = 0
        var written: Int64 = 0
        var indexFile: FileDescriptor?  // the index entry's bytes, read once every file was seen
        defer { try? indexFile?.close() }
        let disk = try root.map(DiskWriter.init(root:))
        do {
            while let header = try reader.next() {
                if apple {
                    // Folders come from their files' paths; an Apple Archive lists them (its root too, with an
                    // empty name), and they create nothing here.
                    if header.type == ArchiveFileType.directory {
                        // Held to the rule for names, though nothing is made of it: a folder named
                        // `Contents/../..` is refused as a file of that name would be.
                        guard header.name.isEmpty || PackPath.normalize(header.name) == header.name else {
                            throw rule(
                                archive,
                                "holds a folder named \"\(AssetPackID.printable(header.name))\", with '..', '.', '//' "
                                    + "or an absolute path; refused"
                            )
                        }
                        continue
                    }
                    if AppleArchivePack.isManifestCandidate(header) {
                        switch try AppleArchivePack.readManifest(reader, header: header) {
                        case .success(let manifest):
                            guard carried == nil else {
                                throw rule(archive, "carries two packaging manifests (\(header.name) is the second)")
                            }
                            carried = manifest
                        case .failure(let problem): unreadable = problem
                        }
                        continue
                    }
                }
                if let delta, !bound {  // a delta's first entry says what it is for
                    try checkBinding(reader, header: header, expected: delta.binding)
                    bound = true
                    continue
                }
                // The index comes last: an entry after it (which a delta's check of rows missed) is refused.
                guard indexFile == nil else {
                    throw rule(
                        archive,
                        "holds \(AssetPackID.printable(header.name)) after \(PackPath.indexEntryName), which comes last"
                    )
                }
                if !apple, header.name.utf8.elementsEqual(PackPath.indexEntryName.utf8) {
                    // An index lists every file once: its size follows from the entries before it (and for
                    // a delta, from the base's files it keeps, up to a 4 KiB path each), so a small download
                    // cannot declare an index of hundreds of megabytes.
                    let kept = 4352 * Int64(min(delta?.baseFiles ?? 0, 1 << 20))
                    let bound = min(
                        maximumIndexSize,
                        64 << 10 + Int64(nameBytes) + 256 * Int64(seen.count) + kept
                    )
                    indexFile = try spoolIndex(
                        reader,
                        header: header,
                        maximumSize: bound,
                        to: indexCopy,
                        beside: root
                    )
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
                guard !seen.contains(entryKey) else {
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
                    if seen.contains(key) {
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
                let digest = hasher.finalize()
                if header.sha256 != nil { digestsCarried += 1 }
                if let carriedDigest = header.sha256, !digest.elementsEqual(carriedDigest) {
                    throw corrupt(
                        archive,
                        "holds \(relative) with SHA-256 \(digest.hexString.prefix(12)), but its SH2 field says "
                            + "\(carriedDigest.hexString.prefix(12))"
                    )
                }
                seen.insert(entryKey, size: size, sha256: digest)
                if apple { appleRows.append(PackIndex.File(path: relative, size: size, sha256: digest.hexString)) }
            }
        }
        if apple {
            var index = try AppleArchivePack.index(
                appleRows,
                described: carried,
                fallback: fallback,
                unreadable: unreadable,
                archive: archive
            )
            index.fileDigestsCarried = digestsCarried
            if let indexCopy { try AppleArchivePack.writeCopy(index, to: indexCopy) }
            return (indexCopy == nil ? index : index.withoutRows, [])
        }
        guard bound else { throw missingBinding(archive) }
        guard let indexFile else { throw missingIndex(archive) }
        var parser = IndexParser(reading: indexFile)
        if partial || indexCopy == nil {
            // Every row kept: a delta's absent rows are the base's files, and a caller without a copy gets
            // the whole index.
            let index = try PackIndex.decode(&parser, source: archive)
            let absent = try check(index.files, against: &seen, partial: partial, archive: archive)
            if let extra = seen.firstKey {  // a delta's files are the new index's too
                throw rule(archive, "holds \(extra), which its index does not list")
            }
            return (index, absent)
        }
        // Rows checked as they are read, and then forgotten: the index is never held whole.
        var rows = 0
        var total: Int64 = 0
        let header: IndexParser.Header
        do {
            header = try parser.parse { path, size, sha256 in
                rows += 1
                let (sum, overflow) = total.addingReportingOverflow(size)
                guard size >= 0, !overflow else {
                    throw corrupt(archive, "has an index that gives \(path) an impossible size")
                }
                total = sum
                guard try check(path, size, sha256, against: &seen, archive: archive) else {
                    throw corrupt(archive, "lacks \(path), which its index lists")
                }
            }
        } catch let error as AssetPackFormatError {
            throw error
        } catch {
            throw corrupt(archive, "has an index that does not decode: \(error)")
        }
        let index: PackIndex
        do {
            index = try PackIndex(header, files: [])
        } catch {
            throw corrupt(archive, "has an index that does not decode: \(error)")
        }
        if let problem = index.versionProblem { throw corrupt(archive, problem) }
        // The rows' paths cannot be a file and a folder at once: each matched a file seen, and those cannot.
        if let problem = index.headerProblem(rows: rows, total: total) {
            throw corrupt(archive, "has an index that \(problem)")
        }
        if let extra = seen.firstKey {
            throw rule(archive, "holds \(extra), which its index does not list")
        }
        return (index, [])
    }

    /// Checks rows against the files seen, removing each one found: a row whose file is absent is an error,
    /// or for a delta (`partial`) one of the rows returned. The files seen that remain once every row was
    /// checked are ones the index does not list.
    private static func check(
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
    /// another size or digest; the file is forgotten either way.
    private static func check(
        _ path: String,
        _ size: Int64,
        _ sha256: String,
        against seen: inout SeenFiles,
        archive: String
    ) throws -> Bool {
        guard let found = seen.remove(PathKey(path)) else { return false }
        guard found.size == size, found.sha256.matchesHex(sha256) else {
            throw corrupt(
                archive,
                "holds \(path) with \(found.size) bytes and SHA-256 \(found.sha256.hexString.prefix(12)), but its index "
                    + "says \(size) bytes and \(sha256.prefix(12))"
            )
        }
        return true
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

    /// Writes the index entry's bytes to `copy` (a new file), or to an unnamed file beside the extraction,
    /// for reading once every file was seen: a regular file of at most `maximumSize` bytes, its declared size
    /// checked before anything is written and its real size as it comes.
    private static func spoolIndex(
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

/// The files an extraction has seen, until the index is checked against them: each one's size and digest
/// (40 bytes), and its path. Packs are written in byte order, so while entries keep arriving in it the
/// paths are kept as one run of bytes, found by binary search; an entry out of order moves them into a
/// dictionary of positions. At 100 000 files a dictionary of the 56-byte records took 22 MB while it
/// grew, and the path strings 6 more; the run of bytes takes about 2.5.
struct SeenFiles {
    private var files: [(size: Int64, sha256: SHA256.Digest)] = []
    // In byte order: the paths' bytes end to end, where each ends, and which were removed.
    private var pathBytes: [UInt8] = []
    private var ends: [Int] = []
    private var removed: [Bool] = []
    // Out of order: where each path's record is.
    private var positions: [PathKey: Int]?

    /// How many were seen.
    var count: Int { files.count }

    func contains(_ key: PathKey) -> Bool { find(key) != nil }

    mutating func insert(_ key: PathKey, size: Int64, sha256: SHA256.Digest) {
        if positions == nil {
            if let last = ends.indices.last, !path(last).lexicographicallyPrecedes(key.path.utf8) {
                moveToDictionary()
            } else {
                pathBytes.append(contentsOf: key.path.utf8)
                ends.append(pathBytes.count)
                removed.append(false)
            }
        }
        positions?[key] = files.count
        files.append((size, sha256))
    }

    /// The file at `key`, forgotten from now on.
    mutating func remove(_ key: PathKey) -> (size: Int64, sha256: SHA256.Digest)? {
        guard let at = find(key) else { return nil }
        if positions != nil {
            positions?[key] = nil
        } else {
            removed[at] = true
        }
        return files[at]
    }

    /// The first in byte order of the files not removed.
    var firstKey: PathKey? {
        if let positions { return positions.keys.min() }
        guard let at = removed.firstIndex(of: false) else { return nil }
        return PathKey(String(decoding: path(at), as: UTF8.self))
    }

    private func path(_ at: Int) -> ArraySlice<UInt8> {
        pathBytes[(at == 0 ? 0 : ends[at - 1])..<ends[at]]
    }

    private func find(_ key: PathKey) -> Int? {
        if let positions { return positions[key] }
        var low = 0
        var high = ends.count
        while low < high {
            let middle = (low + high) / 2
            if path(middle).lexicographicallyPrecedes(key.path.utf8) { low = middle + 1 } else { high = middle }
        }
        guard low < ends.count, !removed[low], path(low).elementsEqual(key.path.utf8) else { return nil }
        return low
    }

    private mutating func moveToDictionary() {
        var positions: [PathKey: Int] = [:]
        positions.reserveCapacity(ends.count)
        for at in ends.indices where !removed[at] {
            positions[PathKey(String(decoding: path(at), as: UTF8.self))] = at
        }
        self.positions = positions
        pathBytes = []
        ends = []
        removed = []
    }
}
