import Foundation
import SystemPackage

/// Delta archives: an update that carries only what changed. A delta from a base version to a target version
/// is a pack archive in the same format (pax tar, same compression) holding the target's files that the base
/// lacks or holds with other bytes, and the target's full `Index.json` last; the files the index lists and
/// the delta does not hold are the base's, unchanged, and a file the index no longer lists is removed.
public enum PackDelta {
    /// What a delta from `base` to `target` carries.
    public struct Plan: Sendable, Hashable {
        /// Target files the base lacks, or holds with other bytes: the delta holds these.
        public var carried: [PackIndex.File]
        /// Target files the base holds with the same bytes: taken from the base.
        public var kept: [PackIndex.File]
        /// Base paths the target no longer lists.
        public var removed: [String]

        /// The bytes of the files the delta carries (before compression).
        public var carriedSize: Int64 { carried.reduce(0) { $0 + $1.size } }
    }

    /// Compares two indexes of a pack.
    public static func plan(from base: PackIndex, to target: PackIndex) -> Plan {
        var baseFiles: [PathKey: String] = [:]
        for file in base.files { baseFiles[PathKey(file.path)] = file.sha256 }
        var plan = Plan(carried: [], kept: [], removed: [])
        var listed = Set<PathKey>()
        for file in target.files {
            listed.insert(PathKey(file.path))
            if baseFiles[PathKey(file.path)] == file.sha256 {
                plan.kept.append(file)
            } else {
                plan.carried.append(file)
            }
        }
        plan.removed = base.files.filter { !listed.contains(PathKey($0.path)) }.map(\.path)
        return plan
    }

    /// Builds the delta from `base` to the pack archive `full`, whose index is `target`, by copying the
    /// entries it carries out of `full`: the same `full` and `base` give the same bytes.
    /// - Parameters:
    ///   - full: The target version's archive (built by ``PackBuilder``).
    ///   - target: Its index.
    ///   - base: The base version's index.
    ///   - output: Where to write the delta; replaced only when the build succeeds.
    ///   - options: Compression (the full archive's).
    /// - Returns: The delta archive's digest and size (install size and file count are the target's).
    /// - Throws: ``AssetPackFormatError`` (`.io`, `.archive`, `.corruptPack` when `full` lacks a file `target`
    ///   lists).
    public static func build(
        full: FilePath,
        target: PackIndex,
        base: PackIndex,
        to output: FilePath,
        options: PackBuildOptions
    ) throws -> BuiltPack {
        let carried = Set(plan(from: base, to: target).carried.map { PathKey($0.path) })
        let binaryNames = target.files.contains { $0.path.utf8.contains { $0 >= 0x80 } }
        let (_, sha256, size) = try AtomicFile.write(to: output) { fd in
            try withArchiveWriter(to: fd, options: options, binaryNames: binaryNames) { writer in
                var copied = 0
                try withArchiveReader(at: full) { reader in
                    while let header = try reader.next() {
                        guard header.name.hasBytePrefix(PackPath.contentsPrefix), header.size >= 0 else { continue }
                        let path = String(Substring(header.name.utf8.dropFirst(PackPath.contentsPrefix.utf8.count)))
                        guard carried.contains(PathKey(path)) else { continue }
                        try writer.addFile(named: header.name, size: header.size) { append in
                            try reader.readData { try append($0) }
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
                let json = try target.encoded()
                try writer.addFile(named: PackPath.indexEntryName, size: Int64(json.count)) { append in
                    try json.withUnsafeBytes { try append($0) }
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
}
