import Foundation
import SystemPackage

/// Delta archives: an update that carries only what changed. A delta from a base version to a target version
/// is a pack archive in the same format (pax tar, same compression) holding first `Delta.json` (the
/// ``Binding``: the pack and the archive digests of base and target), then the target's files that the base
/// lacks or holds with other bytes, each either whole (`Contents/<path>`) or as a ``Recipe`` that rebuilds it
/// from pieces of the base's files and the bytes that are new (`Patches/<path>`), and last the target's index
/// as ``IndexChanges`` (`IndexDelta.json`); the files the index lists and the delta does not hold are the
/// base's, unchanged, and a file the index no longer lists is removed.
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

    /// How a delta rebuilds one file from pieces of the base version's files and bytes it carries: the entry
    /// `Patches/<path>` holds this recipe as one line of JSON, a newline, then the literal pieces' bytes end
    /// to end, in order.
    public struct Recipe: Codable, Sendable, Hashable {
        /// One piece: `length` bytes from `offset` of the base file `from`, or, without `from`, the next
        /// `length` literal bytes of the entry.
        public struct Piece: Codable, Sendable, Hashable {
            /// The base file copied from (its path in the pack), or `nil` for literal bytes.
            public var from: String?
            /// Where the copy starts in the base file (`nil` for literal bytes).
            public var offset: Int64?
            /// How many bytes the piece gives.
            public var length: Int64

            /// A piece: a copy when `from` is given, else literal bytes.
            public init(from: String? = nil, offset: Int64? = nil, length: Int64) {
                self.from = from
                self.offset = offset
                self.length = length
            }
        }

        /// The rebuilt file's size.
        public var size: Int64
        /// The pieces, in the file's order.
        public var pieces: [Piece]

        /// A recipe of `pieces` that rebuilds a file of `size` bytes.
        public init(size: Int64, pieces: [Piece]) {
            self.size = size
            self.pieces = pieces
        }

        /// The bytes of its literal pieces.
        public var literalSize: Int64 { pieces.reduce(0) { $0 + ($1.from == nil ? $1.length : 0) } }
    }

    /// The index of the target as changes to the base's (`IndexDelta.json`, the delta's last entry): the
    /// target's header, the rows that are new or changed, the paths removed, and the SHA-256 of the
    /// target's whole `Index.json`, which the client rebuilds from its base's and checks against it.
    public struct IndexChanges: Codable, Sendable, Hashable {
        /// The target's index with only its new and changed rows.
        public var index: PackIndex
        /// The base's paths the target no longer lists.
        public var removed: [String]
        /// The SHA-256 of the target's `Index.json` as ``PackIndex/encoded()`` writes it.
        public var sha256: String

        /// The changes from `base` to `target`.
        public init(from base: PackIndex, to target: PackIndex) throws {
            let plan = PackDelta.plan(from: base, to: target)
            index = target
            index.files = plan.carried
            removed = plan.removed
            sha256 = FileDigest.sha256(of: try target.encoded())
        }

        /// The target's index: the base's rows less the removed and changed ones, plus the changed ones, in
        /// byte order of their paths (as a pack lists them).
        public func apply(to base: PackIndex) -> PackIndex {
            var gone = Set(removed.map(PathKey.init))
            for file in index.files { gone.insert(PathKey(file.path)) }
            var result = index
            result.files = (base.files.filter { !gone.contains(PathKey($0.path)) } + index.files).sorted {
                PathKey($0.path) < PathKey($1.path)
            }
            return result
        }

        /// Sorted keys, no spaces: the same changes give the same bytes.
        func encoded() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try encoder.encode(self)
        }
    }

    /// What a client gives a delta extraction of its installed base version: the base's index (every row)
    /// and a way to open one of its folders (by path in the pack, "" for its root) without following a
    /// symlink (`FileDescriptor.openFolder(_:creating:)` below the version's folder).
    public struct Base: Sendable {
        /// The base's index, every row.
        public var index: PackIndex
        /// Opens a folder of the base (by its path in the pack) without following a symlink.
        public var openFolder: @Sendable (String) throws -> FileDescriptor

        /// A base of `index` whose folders `openFolder` opens.
        public init(index: PackIndex, openFolder: @escaping @Sendable (String) throws -> FileDescriptor) {
            self.index = index
            self.openFolder = openFolder
        }

        /// Opens a base file to read: a regular file, never a symlink, FIFO or device.
        func open(_ path: String) throws -> FileDescriptor {
            let (folderPath, name) = PackPath.split(path)
            let folder = try openFolder(folderPath)
            return try folder.closeAfter { try FileDigest.openRegular(name, in: folder) }
        }
    }
}
