import Crypto
import SystemPackage

extension PackArchiveReader {
    static func scanEntries(
        _ reader: ArchiveReader,
        _ archive: String,
        destination: FilePath?,
        limit: Int64?,
        indexCopy: FilePath? = nil,
        delta: DeltaScan? = nil,
        describedAs fallback: PackIndex? = nil,
        hashingFiles: Bool = true
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        if reader.format == .aar, delta != nil {
            throw rule(archive, "is an Apple Archive, but a delta is always a tar made by ba-mock")
        }
        var scan = try PackScan(
            reader: reader,
            archive: archive,
            destination: destination,
            limit: limit,
            indexCopy: indexCopy,
            delta: delta,
            fallback: fallback,
            hashesFiles: hashingFiles
        )
        return try scan.run()
    }
}

/// One pass over an archive's entries: each one checked against the rules of packs, extracted (or only
/// hashed), remembered, and at the end checked against the index.
struct PackScan {
    let reader: ArchiveReader
    let archive: String
    let limit: Int64?
    let indexCopy: FilePath?
    let delta: PackArchiveReader.DeltaScan?
    let fallback: PackIndex?
    /// Whether each file is hashed as it is written; when not (the archive's own digest covers its bytes,
    /// checked by the caller), only its size is checked against the index, and an Apple Archive's row takes
    /// the file's SH2 (a file without one is still hashed: its row needs a digest).
    let hashesFiles: Bool
    let apple: Bool
    let root: FilePath?
    let disk: DiskWriter?
    /// The base's files a recipe may copy from, with their sizes (a delta's only).
    let baseSizes: [PathKey: Int64]
    var carried: PackagingManifest?  // an Apple Archive's own description
    var unreadable: AssetPackFormatError?  // a root JSON entry that is not one
    var appleRows: [PackIndex.File] = []  // an Apple Archive's index, made from its entries
    var digestsCarried = 0  // of its files, those that carry an SH2 (checked when files are hashed)
    var bound: Bool  // whether a delta's binding was checked (true for a pack)
    var seen = SeenFiles()
    var folders: Set<PathKey> = []
    var nameBytes = 0
    var written: Int64 = 0
    var indexFile: FileDescriptor?  // the index entry's bytes, read once every file was seen
    var indexIsChanges = false  // a delta's `IndexDelta.json`

    init(
        reader: ArchiveReader,
        archive: String,
        destination: FilePath?,
        limit: Int64?,
        indexCopy: FilePath?,
        delta: PackArchiveReader.DeltaScan?,
        fallback: PackIndex?,
        hashesFiles: Bool
    ) throws {
        self.reader = reader
        self.archive = archive
        self.limit = limit
        self.indexCopy = indexCopy
        self.delta = delta
        self.fallback = fallback
        self.hashesFiles = hashesFiles
        apple = reader.format == .aar
        root = destination.map { $0.lexicallyNormalized() }
        disk = try root.map(DiskWriter.init(root:))
        bound = delta == nil
        var sizes: [PathKey: Int64] = [:]
        for file in delta?.base.index.files ?? [] { sizes[PathKey(file.path)] = file.size }
        baseSizes = sizes
    }

    mutating func run() throws -> (index: PackIndex, absent: [PackIndex.File]) {
        defer { try? indexFile?.close() }
        while let header = try reader.next() { try entry(header) }
        return try finish()
    }

    private mutating func entry(_ header: ArchiveEntryHeader) throws {
        if apple, try appleEntry(header) { return }
        if let delta, !bound {  // a delta's first entry says what it is for
            try PackArchiveReader.checkBinding(reader, header: header, expected: delta.binding)
            bound = true
            return
        }
        // The index comes last: an entry after it (which a delta's check of rows missed) is refused.
        guard indexFile == nil else {
            throw PackArchiveReader.rule(
                archive,
                "holds \(AssetPackID.printable(header.name)) after \(PackPath.indexEntryName), which comes last"
            )
        }
        let changes = delta != nil && header.name.utf8.elementsEqual(PackPath.indexDeltaEntryName.utf8)
        if !apple, changes || header.name.utf8.elementsEqual(PackPath.indexEntryName.utf8) {
            try spool(header, changes: changes)
            return
        }
        if header.type == ArchiveFileType.directory,
            header.name.hasBytePrefix(PackPath.contentsPrefix)
                || (header.name + "/").utf8.elementsEqual(PackPath.contentsPrefix.utf8)
        {
            return
        }
        if let delta, header.name.hasBytePrefix(PackPath.patchesPrefix) {
            let relative = try PackArchiveReader.entryPath(header, archive: archive, prefix: PackPath.patchesPrefix)
            try claim(relative, header, size: 0)  // a recipe's own size is checked once it is read
            try rebuild(relative, base: delta.base)
            return
        }
        let relative = try PackArchiveReader.entryPath(header, archive: archive)
        try claim(relative, header, size: header.size)
        try extract(header, relative)
    }

    /// An Apple Archive's folder or manifest entry, which installs nothing: `true` when `header` is one.
    private mutating func appleEntry(_ header: ArchiveEntryHeader) throws -> Bool {
        // Folders come from their files' paths; an Apple Archive lists them (its root too, with an empty
        // name), and they create nothing here.
        if header.type == ArchiveFileType.directory {
            // Held to the rule for names, though nothing is made of it: a folder named `Contents/../..` is
            // refused as a file of that name would be.
            guard header.name.isEmpty || PackPath.normalize(header.name) == header.name else {
                throw PackArchiveReader.rule(
                    archive,
                    "holds a folder named \"\(AssetPackID.printable(header.name))\", with '..', '.', '//' "
                        + "or an absolute path; refused"
                )
            }
            return true
        }
        guard AppleArchiveDescription.isManifestCandidate(header) else { return false }
        switch try AppleArchiveDescription.readManifest(reader, header: header) {
        case .success(let manifest):
            guard carried == nil else {
                throw PackArchiveReader.rule(archive, "carries two packaging manifests (\(header.name) is the second)")
            }
            carried = manifest
        case .failure(let problem): unreadable = problem
        }
        return true
    }

    /// Keeps the index entry's bytes for the end. An index lists every file once: its size follows from the
    /// entries before it (and for a delta, from the base's files it keeps, up to a 4 KiB path each), so a
    /// small download cannot declare an index of hundreds of megabytes.
    private mutating func spool(_ header: ArchiveEntryHeader, changes: Bool) throws {
        let baseFiles = delta.map { max($0.base.index.files.count, $0.base.index.fileCount) } ?? 0
        let kept = 4352 * Int64(min(baseFiles, 1 << 20))
        let bound = min(
            PackArchiveReader.maximumIndexSize,
            64 << 10 + Int64(nameBytes) + 256 * Int64(seen.count) + kept
        )
        // Index changes are not the index: the copy is written once the index is rebuilt from them.
        indexFile = try PackArchiveReader.spoolIndex(
            reader,
            header: header,
            maximumSize: bound,
            to: changes ? nil : indexCopy,
            beside: root
        )
        indexIsChanges = changes
    }

    /// Refuses a path seen before, or that is a file and a folder at once, or whose declared `size` does not
    /// fit in the install size; remembers its folders.
    private mutating func claim(_ relative: String, _ header: ArchiveEntryHeader, size: Int64) throws {
        let entryKey = PathKey(relative)
        guard !seen.contains(entryKey) else {
            throw PackArchiveReader.rule(archive, "holds \(header.name) twice")
        }
        // A path that is a file and a folder at once cannot be installed: say so, not "cannot create".
        guard !folders.contains(entryKey) else {
            throw PackArchiveReader.rule(archive, "holds \(relative) as a file and as a folder")
        }
        var ancestor = Substring(relative).utf8
        while let slash = ancestor.lastIndex(of: UInt8(ascii: "/")) {
            ancestor = ancestor[..<slash]
            let key = PathKey(String(Substring(ancestor)))
            if seen.contains(key) {
                throw PackArchiveReader.rule(archive, "holds \(key.path) as a file and as a folder")
            }
            // A folder seen before was checked with all of its parents.
            guard folders.insert(key).inserted else { break }
        }
        nameBytes += relative.utf8.count
        // Compared without adding: a declared size near Int64.max cannot overflow.
        if let limit, max(size, 0) > limit - written {
            throw tooLarge(at: header.name)
        }
    }

    private func tooLarge(at name: String? = nil) -> AssetPackFormatError {
        PackArchiveReader.corrupt(
            archive,
            "unpacks to more than its declared install size of \(limit ?? 0) bytes" + (name.map { " (at \($0))" } ?? "")
        )
    }

    /// Writes (or only hashes) one file's bytes, bounded by the install size.
    private mutating func extract(_ header: ArchiveEntryHeader, _ relative: String) throws {
        let hashing = hashesFiles || (apple && header.sha256 == nil)
        var hasher = SHA256()
        var size: Int64 = 0
        var written = self.written
        let (limit, reader, tooLarge) = (self.limit, self.reader, self.tooLarge())
        let consume: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void = { write in
            try reader.readData { block in
                size += Int64(block.count)
                written += Int64(block.count)
                if let limit, written > limit { throw tooLarge }
                if hashing { hasher.update(bufferPointer: block) }
                try write(block)
            }
        }
        if let disk {
            try disk.writeFile(at: relative, consume)
        } else {
            try consume { _ in }
        }
        self.written = written
        let digest = hashing ? hasher.finalize() : nil
        if header.sha256 != nil { digestsCarried += 1 }
        if let digest, let carriedDigest = header.sha256, !digest.elementsEqual(carriedDigest) {
            let (computed, carried) = FileDigest.shown(digest.hexString, carriedDigest.hexString)
            throw PackArchiveReader.corrupt(
                archive,
                "holds \(relative) with SHA-256 \(computed), but its SH2 field says \(carried)"
            )
        }
        seen.insert(PathKey(relative), size: size, sha256: digest)
        if apple {  // not hashed only when it carries an SH2 (above)
            let row = digest?.hexString ?? header.sha256?.hexString ?? ""
            appleRows.append(PackIndex.File(path: relative, size: size, sha256: row))
        }
    }

    /// Rebuilds a file from a delta's recipe into the extraction, bounded by the install size.
    private mutating func rebuild(_ relative: String, base: PackDelta.Base) throws {
        guard let disk else {
            throw PackArchiveReader.rule(archive, "holds a recipe (\(relative)), which only an extraction can follow")
        }
        var result: (size: Int64, sha256: SHA256.Digest)?
        let (reader, baseSizes, room) = (self.reader, self.baseSizes, limit.map { $0 - written })
        try disk.writeFile(at: relative) { write in
            result = try PackArchiveReader.rebuild(
                relative,
                from: reader,
                base: base,
                baseSizes: baseSizes,
                room: room,
                write: write
            )
        }
        guard let result else { return }
        // Within the room: the recipe's size was checked against it, and its pieces add up to that size.
        written += result.size
        seen.insert(PathKey(relative), size: result.size, sha256: result.sha256)
    }

    /// Checks the index against the files seen.
    private mutating func finish() throws -> (index: PackIndex, absent: [PackIndex.File]) {
        if apple {
            var index = try AppleArchiveDescription.index(
                appleRows,
                described: carried,
                fallback: fallback,
                unreadable: unreadable,
                archive: archive
            )
            index.fileDigestsCarried = digestsCarried
            if let indexCopy { try AppleArchiveDescription.writeCopy(index, to: indexCopy) }
            return (indexCopy == nil ? index : index.withoutRows, [])
        }
        guard bound else { throw PackArchiveReader.missingBinding(archive) }
        guard let indexFile else { throw PackArchiveReader.missingIndex(archive) }
        if let delta {
            return try PackArchiveReader.finishDelta(
                indexFile,
                asChanges: indexIsChanges,
                base: delta.base,
                indexCopy: indexCopy,
                seen: &seen,
                archive: archive
            )
        }
        var parser = IndexParser(reading: indexFile)
        if indexCopy == nil {
            // Every row kept: a caller without a copy gets the whole index.
            let index = try PackIndex.decode(&parser, source: archive)
            _ = try PackArchiveReader.check(index.files, against: &seen, partial: false, archive: archive)
            if let extra = seen.firstKey {
                throw PackArchiveReader.rule(archive, "holds \(extra), which its index does not list")
            }
            return (index, [])
        }
        return (try checkRowsAsRead(&parser), [])
    }

    /// Checks the rows as they are read, and then forgets them: the index is never held whole.
    private mutating func checkRowsAsRead(_ parser: inout IndexParser) throws -> PackIndex {
        var rows = 0
        var total: Int64 = 0
        let header: IndexParser.Header
        let archive = self.archive
        var seen = SeenFiles()
        swap(&seen, &self.seen)  // moved, not copied
        defer { swap(&seen, &self.seen) }
        do {
            header = try parser.parse { path, size, sha256 in
                rows += 1
                let (sum, overflow) = total.addingReportingOverflow(size)
                guard size >= 0, !overflow else {
                    throw PackArchiveReader.corrupt(archive, "has an index that gives \(path) an impossible size")
                }
                total = sum
                guard try PackArchiveReader.check(path, size, sha256, against: &seen, archive: archive) else {
                    throw PackArchiveReader.corrupt(archive, "lacks \(path), which its index lists")
                }
            }
        } catch let error as AssetPackFormatError {
            throw error
        } catch {
            throw PackArchiveReader.corrupt(archive, "has an index that does not decode: \(error)")
        }
        let index: PackIndex
        do {
            index = try PackIndex(header, files: [])
        } catch {
            throw PackArchiveReader.corrupt(archive, "has an index that does not decode: \(error)")
        }
        if let problem = index.versionProblem { throw PackArchiveReader.corrupt(archive, problem) }
        // The rows' paths cannot be a file and a folder at once: each matched a file seen, and those cannot.
        if let problem = index.headerProblem(rows: rows, total: total) {
            throw PackArchiveReader.corrupt(archive, "has an index that \(problem)")
        }
        if let extra = seen.firstKey {
            throw PackArchiveReader.rule(archive, "holds \(extra), which its index does not list")
        }
        return index
    }
}
