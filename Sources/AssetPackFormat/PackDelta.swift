import Foundation
import SystemPackage

/// Delta archives: an update that carries only what changed. A delta from a base version to a target version
/// is a pack archive in the same format (pax tar, same compression) holding first `Delta.json` (the
/// ``Binding``: the pack and the archive digests of base and target), then the target's files that the base
/// lacks or holds with other bytes, and the target's full `Index.json` last; the files the index lists and
/// the delta does not hold are the base's, unchanged, and a file the index no longer lists is removed.
public enum PackDelta {
    /// What a delta is for: the pack, the archive it starts from and the archive whose files it produces.
    /// A client checks it before it extracts anything, so a delta offered for another version (a manifest
    /// entry pointing at the wrong file) cannot install one version's files under another's digest.
    public struct Binding: Codable, Sendable, Hashable {
        public var assetPackID: String
        /// The SHA-256 of the base version's pack archive.
        public var fromSHA256: String
        /// The SHA-256 of the target version's pack archive.
        public var toSHA256: String

        public init(assetPackID: String, fromSHA256: String, toSHA256: String) {
            self.assetPackID = assetPackID
            self.fromSHA256 = fromSHA256
            self.toSHA256 = toSHA256
        }

        /// Sorted keys, no spaces: the same binding gives the same bytes.
        func encoded() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try encoder.encode(self)
        }
    }

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
        binding: Binding,
        to output: FilePath,
        options: PackBuildOptions
    ) throws -> BuiltPack {
        let carried = Set(plan(from: base, to: target).carried.map { PathKey($0.path) })
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
