import Foundation
import SystemPackage

extension PackDelta {
    /// Builds the delta from `base` to the pack archive `full`, whose index is `target`, by copying the
    /// entries it carries out of `full`: the same inputs give the same bytes. A changed file that has chunks
    /// in common with any file of the base (both chunk lists given) is sent as a ``Recipe``; the others whole.
    /// - Parameters:
    ///   - full: The target version's archive (built by ``PackBuilder``).
    ///   - target: Its index.
    ///   - base: The base version's index.
    ///   - chunks: The chunk lists of the target and of the base, or `nil` for whole files only.
    ///   - binding: The pack and the archive digests of base and target, written first.
    ///   - output: Where to write the delta; replaced only when the build succeeds.
    ///   - options: Compression (the full archive's).
    /// - Returns: The delta archive's digest and size (install size and file count are the target's).
    /// - Throws: ``AssetPackFormatError`` (`.io`, `.archive`, `.corruptPack` when `full` lacks a file `target`
    ///   lists).
    public static func build(
        full: FilePath,
        target: PackIndex,
        base: PackIndex,
        chunks: (target: PackChunks, base: PackChunks)? = nil,
        binding: Binding,
        to output: FilePath,
        options: PackBuildOptions
    ) throws -> BuiltPack {
        let carried = Set(plan(from: base, to: target).carried.map { PathKey($0.path) })
        let recipes = chunks.map { makeRecipes(for: carried, target: target, chunks: $0) } ?? [:]
        let changes = try IndexChanges(from: base, to: target)
        // The client rebuilds the index as `apply` does: where that would not give the target's very bytes
        // (an index not in byte order), the whole index goes instead.
        let indexEntry =
            try changes.apply(to: base).encoded() == target.encoded()
            ? (PackPath.indexDeltaEntryName, try changes.encoded()) : (PackPath.indexEntryName, try target.encoded())
        let binaryNames = target.files.contains { $0.path.utf8.contains { $0 >= 0x80 } }
        let (_, sha256, size) = try AtomicFile.write(to: output) { fd in
            try withArchiveWriter(to: fd, options: options, binaryNames: binaryNames) { writer in
                let named = try binding.encoded()
                try writer.addFile(named: PackPath.deltaEntryName, size: Int64(named.count)) { append in
                    try named.withUnsafeBytes { try append($0) }
                }
                var copied = 0
                try withArchiveReader(at: full) { reader in
                    while let header = try reader.next() {
                        guard header.name.hasBytePrefix(PackPath.contentsPrefix), header.size >= 0 else { continue }
                        let path = String(Substring(header.name.utf8.dropFirst(PackPath.contentsPrefix.utf8.count)))
                        guard carried.contains(PathKey(path)) else { continue }
                        if let recipe = recipes[PathKey(path)] {
                            try addPatch(path, recipe, from: reader, to: writer)
                        } else {
                            try writer.addFile(named: header.name, size: header.size) { append in
                                try reader.readData { try append($0) }
                            }
                        }
                        copied += 1
                    }
                }
                guard copied == carried.count else {
                    throw AssetPackFormatError(
                        code: .corruptPack,
                        message: "\(full) holds \(copied) of the \(carried.count) files a delta needs from it"
                    )
                }
                try writer.addFile(named: indexEntry.0, size: Int64(indexEntry.1.count)) { append in
                    try indexEntry.1.withUnsafeBytes { try append($0) }
                }
            }
        }
        return BuiltPack(
            assetPackID: target.assetPackID,
            sha256: sha256,
            downloadSize: size,
            installSize: target.installSize,
            fileCount: target.fileCount,
            compression: options.compression
        )
    }

    /// The recipes of the carried files that share chunks with the base: each chunk of the target file found
    /// anywhere in the base (the first place in byte order of paths) is copied from there, the rest is
    /// literal; runs of either are merged. A file with nothing in common with the base is sent whole.
    static func makeRecipes(
        for carried: Set<PathKey>,
        target: PackIndex,
        chunks: (target: PackChunks, base: PackChunks)
    ) -> [PathKey: Recipe] {
        // By digest and length: a chunk of another length under the same digest is not taken.
        var known: [ContentChunker.Chunk: (path: String, offset: Int64)] = [:]
        for key in chunks.base.files.keys.sorted() {
            var offset: Int64 = 0
            for chunk in chunks.base.files[key] ?? [] {
                if known[chunk] == nil { known[chunk] = (key.path, offset) }
                offset += Int64(chunk.length)
            }
        }
        var recipes: [PathKey: Recipe] = [:]
        for file in target.files where carried.contains(PathKey(file.path)) {
            guard let list = chunks.target.files[PathKey(file.path)] else { continue }
            var pieces: [Recipe.Piece] = []
            var size: Int64 = 0
            var copiedAny = false
            for chunk in list {
                let length = Int64(chunk.length)
                size += length
                var piece = Recipe.Piece(length: length)
                if let found = known[chunk] {
                    piece = Recipe.Piece(from: found.path, offset: found.offset, length: length)
                    copiedAny = true
                }
                if var last = pieces.last, last.from == piece.from,
                    piece.from == nil || (last.offset ?? 0) + last.length == piece.offset
                {
                    last.length += length
                    pieces[pieces.count - 1] = last
                } else {
                    pieces.append(piece)
                }
            }
            guard copiedAny, size == file.size else { continue }  // a list of other bytes: sent whole
            recipes[PathKey(file.path)] = Recipe(size: size, pieces: pieces)
        }
        return recipes
    }

    /// Writes `Patches/<path>`: the recipe's line, then the file's bytes that its literal pieces cover, read
    /// from the target archive's entry as it streams.
    private static func addPatch(_ path: String, _ recipe: Recipe, from reader: ArchiveReader, to writer: ArchiveWriter)
        throws
    {
        var line = try recipe.encoded()
        line.append(UInt8(ascii: "\n"))
        // The file's offsets that are literal, in order.
        var literal: [(start: Int64, end: Int64)] = []
        var offset: Int64 = 0
        for piece in recipe.pieces {
            if piece.from == nil { literal.append((offset, offset + piece.length)) }
            offset += piece.length
        }
        try writer.addFile(named: PackPath.patchesPrefix + path, size: Int64(line.count) + recipe.literalSize) {
            append in
            try line.withUnsafeBytes { try append($0) }
            var position: Int64 = 0
            var next = 0
            try reader.readData { block in
                let blockEnd = position + Int64(block.count)
                while next < literal.count, literal[next].start < blockEnd {
                    let from = max(literal[next].start, position)
                    let to = min(literal[next].end, blockEnd)
                    if from < to {
                        try append(UnsafeRawBufferPointer(rebasing: block[Int(from - position)..<Int(to - position)]))
                    }
                    if literal[next].end <= blockEnd { next += 1 } else { break }
                }
                position = blockEnd
            }
        }
    }
}

extension PackDelta.Recipe {
    /// Sorted keys, no spaces, one line: the same recipe gives the same bytes.
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
