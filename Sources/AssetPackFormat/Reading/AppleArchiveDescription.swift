import Crypto
import Foundation
import SystemPackage

/// What an Apple Archive pack carries besides its files, and the index made from its entries.
///
/// An `.aar` has no `Index.json`: its index is its entries (each file's path, size and SHA-256, checked
/// against the archive's `SH2` field where it has one). Its ID, policy and platforms come from the packaging
/// manifest it carries (a JSON entry at the archive's root, outside `Contents/`: where `ba-package` puts it is
/// unconfirmed, so any root JSON entry that is a packaging manifest is read), else from the caller (a
/// download manifest's entry, or a name).
enum AppleArchiveDescription {
    /// The largest root JSON entry read as a packaging manifest.
    static let maximumManifestSize = 1 << 20

    /// Whether an entry may be the carried packaging manifest: a regular file at the archive's root whose
    /// name ends in `.json`.
    static func isManifestCandidate(_ header: ArchiveEntryHeader) -> Bool {
        header.type == ArchiveFileType.regular && !header.name.utf8.contains(UInt8(ascii: "/"))
            && header.name.hasSuffix(".json")
    }

    /// Reads a root JSON entry: the packaging manifest it is, or why it is not one (it is then ignored, as
    /// files outside `Contents/` are not installed, and the reason given if the pack ends up without a name).
    static func readManifest(_ reader: ArchiveReader, header: ArchiveEntryHeader) throws -> Result<
        PackagingManifest, AssetPackFormatError
    > {
        var bytes: [UInt8] = []
        var tooLarge = header.size > Int64(maximumManifestSize)
        try reader.readData { block in
            if block.count > maximumManifestSize - bytes.count { tooLarge = true }
            if !tooLarge { bytes.append(contentsOf: block) }
        }
        let file = "\(header.name) in \(reader.path)"
        // Its SH2, where it has one, is checked like any file's: a manifest that is not what the archive says
        // is damage, not a description to trust.
        if !tooLarge, let carried = header.sha256, !SHA256.hash(data: bytes).elementsEqual(carried) {
            throw AssetPackFormatError(
                code: .corruptPack,
                message: "Apple Archive \(reader.path) holds \(header.name) whose SHA-256 is not the one its SH2 says"
            )
        }
        guard !tooLarge else {
            return .failure(AssetPackFormatError(code: .invalidManifest, message: "\(file) is larger than 1 MiB"))
        }
        do {
            return .success(try PackagingManifest.parse(bytes, file: file).manifest)
        } catch let error as AssetPackFormatError {
            return .failure(error)
        } catch {
            return .failure(AssetPackFormatError(code: .invalidManifest, message: "\(file): \(error)"))
        }
    }

    /// The index of an Apple Archive: its files, sorted by the bytes of their paths, described by the
    /// manifest it carries or else by `fallback`.
    static func index(
        _ rows: [PackIndex.File],
        described manifest: PackagingManifest?,
        fallback: PackIndex?,
        unreadable: AssetPackFormatError?,
        archive: String
    ) throws -> PackIndex {
        let files = rows.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        let total = files.reduce(Int64(0)) { $0 + $1.size }  // each size was counted as it was read
        let index: PackIndex
        if let manifest {
            index = PackIndex(
                formatVersion: PackIndex.currentFormatVersion,
                assetPackID: manifest.assetPackID,
                downloadPolicy: manifest.downloadPolicy,
                platforms: manifest.platforms,
                language: manifest.language,
                installSize: total,
                fileCount: files.count,
                files: files
            )
        } else if let fallback {
            index = PackIndex(
                formatVersion: PackIndex.currentFormatVersion,
                assetPackID: fallback.assetPackID,
                downloadPolicy: fallback.downloadPolicy,
                platforms: fallback.platforms,
                language: fallback.language,
                installSize: total,
                fileCount: files.count,
                files: files
            )
        } else {
            throw AssetPackFormatError(
                code: .corruptPack,
                message:
                    "Apple Archive \(archive) carries no packaging manifest"
                    + (unreadable.map { " that reads (\($0.message))" } ?? " (\(PackBuilder.appleArchiveManifestName))")
                    + ", so its ID and policy are unknown. Fix: package it with its manifest, or name the pack where "
                    + "it is used"
            )
        }
        if let problem = index.consistencyProblem {
            throw AssetPackFormatError(code: .corruptPack, message: "Apple Archive \(archive) \(problem)")
        }
        return index
    }

    /// Writes the index an install keeps (a new file), as a tar pack's `Index.json` would be kept.
    static func writeCopy(_ index: PackIndex, to copy: FilePath) throws {
        let json = try index.encoded()
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(
                copy,
                .writeOnly,
                options: [.create, .exclusiveCreate, .closeOnExec],
                permissions: [.ownerReadWrite, .groupRead, .otherRead]
            )
        } catch let errno as Errno {
            throw AssetPackFormatError.io("create", copy, errno)
        }
        try fd.closeAfter {
            do {
                _ = try json.withUnsafeBytes { try fd.writeAll($0) }
            } catch let errno as Errno {
                throw AssetPackFormatError.io("write", copy, errno)
            }
        }
    }
}

extension PackIndex {
    /// The index without its rows (what an extraction that kept a copy of them returns).
    var withoutRows: PackIndex {
        var index = self
        index.files = []
        return index
    }
}

/// One entry of a pack archive, as `ba-mock inspect` lists it.
public struct PackArchiveEntry: Sendable, Hashable, Codable {
    /// `file`, `folder`, `symlink` or `special`.
    public var type: String
    /// The name as stored.
    public var path: String
    /// The data's size in bytes.
    public var size: Int64
    /// The SHA-256 the archive carries for it (Apple Archive's `SH2`), lower-case hex, if any.
    public var sha256: String?
}

/// What a pack archive holds, entry by entry, without checking any digest.
public struct PackArchiveListing: Sendable, Codable {
    /// For an Apple Archive that carries no packaging manifest: a description named after its file (onDemand,
    /// no platforms), to read it with, and the warning that says so; `nil` when it describes itself.
    /// - Parameters:
    ///   - path: The archive.
    ///   - doing: What is done with it, for the warning ("it is served as", "it is shown as").
    public func fallbackDescription(of path: FilePath, doing: String) -> (index: PackIndex, warning: String)? {
        guard format == .aar, manifest == nil else { return nil }
        let id = path.stem.flatMap { AssetPackID.problem(with: $0) == nil ? $0 : nil } ?? "pack"
        let warning =
            "\(path) carries no packaging manifest"
            + (manifestProblem.map { " that reads (\($0))" } ?? " (Manifest.json at its root)")
            + "; \(doing) pack \(id) (from its file name), onDemand, for every platform"
        let index = PackIndex(
            formatVersion: PackIndex.currentFormatVersion,
            assetPackID: id,
            downloadPolicy: .onDemand,
            platforms: [],
            language: nil,
            installSize: 0,
            fileCount: 0,
            files: []
        )
        return (index, warning)
    }

    /// The container.
    public var format: PackFormat
    /// The compression of an Apple Archive (`nil` for a tar, whose filter libarchive finds by itself).
    public var compression: PackCompression?
    /// The packaging manifest an Apple Archive carries, if it carries one that reads.
    public var manifest: PackagingManifestSummary?
    /// Why a root JSON entry was not read as the packaging manifest, if one was not.
    public var manifestProblem: String?
    /// Every entry, in the archive's order.
    public var entries: [PackArchiveEntry]
}

/// The fields of a packaging manifest that describe a pack.
public struct PackagingManifestSummary: Sendable, Hashable, Codable {
    public var assetPackID: String
    public var downloadPolicy: DownloadPolicy
    public var platforms: [String]
    public var language: String?
    /// What the manifest's `userInfo` held (Xcode 27), which a download manifest repeats.
    public var userInfo: JSONValue?

    public init(
        assetPackID: String,
        downloadPolicy: DownloadPolicy,
        platforms: [String],
        language: String?,
        userInfo: JSONValue? = nil
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.platforms = platforms
        self.language = language
        self.userInfo = userInfo
    }
}

extension PackArchiveReader {
    /// Lists an archive's entries (folders and the carried manifest included), reading the archive once and
    /// checking no digest: ``verify(at:describedAs:)`` does that.
    /// - Throws: ``AssetPackFormatError`` for an archive that does not read.
    public static func list(at archive: FilePath) throws -> PackArchiveListing {
        try withArchiveReader(at: archive) { reader in
            var listing = PackArchiveListing(
                format: reader.format,
                compression: reader.appleCompression,
                manifest: nil,
                manifestProblem: nil,
                entries: []
            )
            while let header = try reader.next() {
                let type =
                    switch header.type {
                    case ArchiveFileType.regular: "file"
                    case ArchiveFileType.directory: "folder"
                    case ArchiveFileType.symlink: "symlink"
                    default: "special"
                    }
                listing.entries.append(
                    PackArchiveEntry(
                        type: type,
                        path: header.name,
                        size: max(header.size, 0),
                        sha256: header.sha256?.hexString
                    )
                )
                if reader.format == .aar, AppleArchiveDescription.isManifestCandidate(header) {
                    switch try AppleArchiveDescription.readManifest(reader, header: header) {
                    case .success(let manifest):
                        listing.manifest = PackagingManifestSummary(
                            assetPackID: manifest.assetPackID,
                            downloadPolicy: manifest.downloadPolicy,
                            platforms: manifest.platforms,
                            language: manifest.language,
                            userInfo: manifest.userInfo
                        )
                    case .failure(let problem): listing.manifestProblem = problem.message
                    }
                }
            }
            return listing
        }
    }
}
