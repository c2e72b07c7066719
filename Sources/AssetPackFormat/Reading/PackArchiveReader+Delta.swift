import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension PackArchiveReader {
    /// What a delta extraction checks the delta against: what it must say it is for, and the installed base.
    typealias DeltaScan = (binding: PackDelta.Binding, base: PackDelta.Base)

    /// Extracts a delta archive (see ``PackDelta``) as it arrives, as ``extract(streamNamed:into:limit:reading:)``
    /// does a full one, except that files the index lists may be absent (they are the base version's), files
    /// may come as recipes (rebuilt in `destination` from pieces of the base's files, read through
    /// `base.open`), and the index may come as changes to the base's (rebuilt from `base.index`). A recipe
    /// that names a file the base's index does not list, or bytes past the end of one, is refused; a rebuilt
    /// file is checked against the new index as an extracted one is.
    /// - Returns: The verified index of the new version, and the files it lists that the delta did not hold.
    /// - Throws: As ``extract(streamNamed:into:limit:reading:)``.
    public static func extractDelta(
        streamNamed name: String,
        into destination: FilePath,
        limit: Int64? = nil,
        expecting binding: PackDelta.Binding,
        base: PackDelta.Base,
        indexCopy: FilePath? = nil,
        reading next: @escaping () throws -> UnsafeRawBufferPointer
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        try scan(name, destination: destination, limit: limit, indexCopy: indexCopy, delta: (binding, base)) {
            try withArchiveReader(streaming: next, name: name, $0)
        }
    }

    /// Extracts a delta archive file: see ``extractDelta(streamNamed:into:limit:expecting:base:indexCopy:reading:)``.
    public static func extractDelta(
        _ archive: FilePath,
        into destination: FilePath,
        limit: Int64? = nil,
        expecting binding: PackDelta.Binding,
        base: PackDelta.Base,
        indexCopy: FilePath? = nil
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        try scan(archive.string, destination: destination, limit: limit, indexCopy: indexCopy, delta: (binding, base)) {
            try withArchiveReader(at: archive, $0)
        }
    }

    /// Extracts a delta archive file whose base is known only by its file count: one without recipes or index
    /// changes (which need the base's files and index), as deltas were before them.
    public static func extractDelta(
        _ archive: FilePath,
        into destination: FilePath,
        limit: Int64? = nil,
        expecting binding: PackDelta.Binding,
        baseFileCount: Int,
        indexCopy: FilePath? = nil
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        let unknown = PackIndex(
            formatVersion: PackIndex.currentFormatVersion,
            assetPackID: binding.assetPackID,
            downloadPolicy: .onDemand,
            platforms: [],
            language: nil,
            installSize: 0,
            fileCount: baseFileCount,
            files: []
        )
        let base = PackDelta.Base(index: unknown) { _ in throw Errno.noSuchFileOrDirectory }
        return try extractDelta(
            archive,
            into: destination,
            limit: limit,
            expecting: binding,
            base: base,
            indexCopy: indexCopy
        )
    }

    /// The new version's index, from the delta's `Index.json` or `IndexDelta.json` (spooled to `indexFile`),
    /// checked against the files the delta held: those left are the base's.
    static func finishDelta(
        _ indexFile: FileDescriptor,
        asChanges: Bool,
        base: PackDelta.Base,
        indexCopy: FilePath?,
        seen: inout SeenFiles,
        archive: String
    ) throws -> (index: PackIndex, absent: [PackIndex.File]) {
        let index: PackIndex
        if asChanges {
            var bytes: [UInt8] = []
            do {
                try indexFile.forEachChunk { bytes += $0 }
            } catch let errno as Errno {
                throw AssetPackFormatError.io("read the index changes of", FilePath(archive), errno)
            }
            guard let changes = try? JSONDecoder().decode(PackDelta.IndexChanges.self, from: Data(bytes)) else {
                throw corrupt(archive, "has an \(PackPath.indexDeltaEntryName) that does not decode")
            }
            let rebuilt = try changes.apply(to: base.index).encoded()
            guard FileDigest.sha256(of: rebuilt) == changes.sha256 else {
                throw corrupt(
                    archive,
                    "gives index changes that rebuild an index of another SHA-256 than the "
                        + "\(changes.sha256.prefix(12)) it says (is the installed index the delta's base?)"
                )
            }
            // Decoded again as any index is: every row held to the rules of names, sizes and digests.
            index = try PackIndex.decode(rebuilt, source: archive)
            if let problem = index.versionProblem { throw corrupt(archive, problem) }
            if let indexCopy { try AtomicFile.write(rebuilt, to: indexCopy) }
        } else {
            var parser = IndexParser(reading: indexFile)
            index = try PackIndex.decode(&parser, source: archive)
        }
        let absent = try check(index.files, against: &seen, partial: true, archive: archive)
        if let extra = seen.firstKey {  // a delta's files are the new index's too
            throw rule(archive, "holds \(extra), which its index does not list")
        }
        return (index, absent)
    }

    /// Rebuilds one file from a `Patches/<path>` entry: its recipe's line, then its literal bytes. Every
    /// piece is checked before a byte is written: a copy from a file the base's index lists, inside its
    /// size; sizes that add up to the recipe's, which fits in `room`.
    /// - Parameter write: Receives the rebuilt file's bytes in order.
    /// - Returns: The rebuilt file's size and SHA-256.
    static func rebuild(
        _ path: String,
        from reader: ArchiveReader,
        base: PackDelta.Base,
        baseSizes: [PathKey: Int64],
        room: Int64?,
        write: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> (size: Int64, sha256: SHA256.Digest) {
        var recipe = RecipeRebuild(path: path, archive: reader.path, base: base, baseSizes: baseSizes, room: room)
        defer { for fd in recipe.opened.values { try? fd.close() } }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        try reader.readData { block in
            try recipe.take(block, buffer: buffer, write: write)
        }
        return try recipe.finish()
    }

    /// A file being rebuilt from its recipe: the recipe's line, the piece at hand, base files opened, size and hash.
    private struct RecipeRebuild {
        let path: String
        let archive: String
        let base: PackDelta.Base
        let baseSizes: [PathKey: Int64]
        let room: Int64?
        var line: [UInt8] = []
        var pieces: [PackDelta.Recipe.Piece]?
        var at = 0  // the piece being written
        var literalLeft: Int64 = 0  // of the piece at `at`, when it is literal
        var hasher = SHA256()
        var size: Int64 = 0
        var opened: [PathKey: FileDescriptor] = [:]

        /// Takes one block of the entry, recipe line first; throws on a long line or bytes the recipe lacks.
        mutating func take(
            _ block: UnsafeRawBufferPointer,
            buffer: UnsafeMutableRawBufferPointer,
            write: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            let maximumLine = 16 << 20
            var rest = block[...]
            if pieces == nil {
                guard let newline = rest.firstIndex(of: UInt8(ascii: "\n")) else {
                    guard rest.count <= maximumLine - line.count else {
                        throw PackArchiveReader.rule(
                            archive,
                            "holds a recipe for \(path) longer than \(maximumLine) bytes"
                        )
                    }
                    line += rest
                    return
                }
                line += rest[..<newline]
                rest = rest[(newline + 1)...]
                pieces = try PackArchiveReader.checkedPieces(line, path, base: baseSizes, room: room, archive: archive)
                try advance(buffer: buffer, write: write)
            }
            while !rest.isEmpty {
                guard let pieces, at < pieces.count else {
                    throw PackArchiveReader.rule(archive, "holds more bytes for \(path) than its recipe uses")
                }
                let count = Int(min(Int64(rest.count), literalLeft))
                try emit(UnsafeRawBufferPointer(rebasing: rest.prefix(count)), write: write)
                rest = rest.dropFirst(count)
                literalLeft -= Int64(count)
                if literalLeft == 0 {
                    at += 1
                    try advance(buffer: buffer, write: write)
                }
            }
        }

        /// Hashes, counts and passes on bytes of the rebuilt file; throws what `write` throws.
        mutating func emit(_ bytes: UnsafeRawBufferPointer, write: (UnsafeRawBufferPointer) throws -> Void) throws {
            hasher.update(bufferPointer: bytes)
            size += Int64(bytes.count)
            try write(bytes)
        }

        /// Writes a copied piece from the base's file; throws when that file cannot be opened or read, or is short.
        mutating func copy(
            _ piece: PackDelta.Recipe.Piece,
            buffer: UnsafeMutableRawBufferPointer,
            write: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            let from = piece.from ?? ""
            let fd: FileDescriptor
            if let known = opened[PathKey(from)] {
                fd = known
            } else {
                do {
                    fd = try base.open(from)
                } catch {
                    throw PackArchiveReader.corrupt(
                        archive,
                        "rebuilds \(path) from the installed \(from), which cannot be read: \(error)"
                    )
                }
                opened[PathKey(from)] = fd
            }
            var offset = piece.offset ?? 0
            let end = offset + piece.length
            while offset < end {
                let want = Int(min(Int64(buffer.count), end - offset))
                let count: Int
                do {
                    count = try fd.read(
                        fromAbsoluteOffset: offset,
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]),
                        retryOnInterrupt: true
                    )
                } catch let errno as Errno {
                    throw AssetPackFormatError.io("read", FilePath(from), errno)
                }
                guard count > 0 else {
                    throw PackArchiveReader.corrupt(
                        archive,
                        "rebuilds \(path) from bytes past the end of the installed \(from)"
                    )
                }
                try emit(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), write: write)
                offset += Int64(count)
            }
        }

        /// Writes the copies from `at` up to the next literal piece, and starts that one; throws as `copy`.
        mutating func advance(
            buffer: UnsafeMutableRawBufferPointer,
            write: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            guard let pieces else { return }
            while at < pieces.count, pieces[at].from != nil {
                try copy(pieces[at], buffer: buffer, write: write)
                at += 1
            }
            if at < pieces.count { literalLeft = pieces[at].length }
        }

        /// The rebuilt file's size and SHA-256; throws when the entry ended before its recipe did.
        func finish() throws -> (size: Int64, sha256: SHA256.Digest) {
            guard let pieces, at == pieces.count else {
                throw PackArchiveReader.corrupt(archive, "holds fewer bytes for \(path) than its recipe uses")
            }
            return (size, hasher.finalize())
        }
    }

    /// Decodes a recipe's line and checks every piece against the base's files and the room left.
    private static func checkedPieces(
        _ line: [UInt8],
        _ path: String,
        base: [PathKey: Int64],
        room: Int64?,
        archive: String
    ) throws -> [PackDelta.Recipe.Piece] {
        guard let recipe = try? JSONDecoder().decode(PackDelta.Recipe.self, from: Data(line)) else {
            throw rule(archive, "holds a recipe for \(path) that does not decode")
        }
        guard recipe.size >= 0, recipe.size <= room ?? .max else {
            throw corrupt(archive, "unpacks to more than its declared install size (at the recipe for \(path))")
        }
        var total: Int64 = 0
        for piece in recipe.pieces {
            let (sum, overflow) = total.addingReportingOverflow(piece.length)
            guard piece.length > 0, !overflow, sum <= recipe.size else {
                throw rule(archive, "holds a recipe for \(path) whose pieces do not add up to its size")
            }
            total = sum
            guard let from = piece.from else {
                guard piece.offset == nil else { throw rule(archive, "holds a recipe for \(path) with a bad piece") }
                continue
            }
            guard let available = base[PathKey(from)] else {
                throw rule(
                    archive,
                    "rebuilds \(path) from \(AssetPackID.printable(from)), which the base version does not hold"
                )
            }
            let offset = piece.offset ?? -1
            guard offset >= 0, offset <= available, piece.length <= available - offset else {
                throw rule(archive, "rebuilds \(path) from bytes outside the base version's \(from)")
            }
        }
        guard total == recipe.size else {
            throw rule(archive, "holds a recipe for \(path) whose pieces do not add up to its size")
        }
        return recipe.pieces
    }

    /// Reads a delta's `Delta.json` and refuses a delta for another pack, base or target.
    static func checkBinding(_ reader: ArchiveReader, header: ArchiveEntryHeader, expected: PackDelta.Binding)
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

    static func missingBinding(_ archive: String) -> AssetPackFormatError {
        rule(
            archive,
            "does not start with a \(PackPath.deltaEntryName) entry naming its base and target; it is not a delta"
        )
    }

}
