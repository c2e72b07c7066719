import AssetPackFormat
import Foundation
import SystemPackage

/// A pack as the server publishes it right now: a built, immutable archive and its manifest fields.
public struct ServedPack: Sendable, Hashable {
    /// The pack's ID.
    public var id: String
    /// The published version (pinned, or counted from 1).
    public var version: Int
    /// The pack's download policy.
    public var downloadPolicy: DownloadPolicy
    /// The archive on disk. It is never rewritten in place: a new version is a new file.
    public var archive: FilePath
    /// The archive's SHA-256 (also its strong ETag).
    public var sha256: String
    /// The archive's size.
    public var downloadSize: Int64
    /// The bytes its files take once installed.
    public var installSize: Int64
    /// How many files it holds.
    public var fileCount: Int
    /// Its compression filter.
    public var compression: PackCompression
    /// When this version was built (`Last-Modified`, whole seconds).
    public var lastModified: Date
    /// The packaging manifest's platforms, language and userInfo.
    public var platforms: [String]? = nil
    public var language: String? = nil
    public var userInfo: JSONValue? = nil
    /// Delta archives from earlier versions to this one.
    public var deltas: [Delta] = []
    /// Its container: Apple Archive or ba-mock's tar.
    public var format: PackFormat = .tar

    /// A delta archive from a base version to the published one (see ``PackDelta``).
    public struct Delta: Sendable, Hashable {
        /// The base version, as it was published.
        public var fromVersion: Int
        /// The base version's archive digest.
        public var fromSHA256: String
        /// The delta archive on disk.
        public var archive: FilePath
        public var sha256: String
        public var downloadSize: Int64
        /// How many files it carries.
        public var fileCount: Int?

        /// The last component of its URL: the base digest's first 16 hex digits.
        public var urlName: String { String(fromSHA256.prefix(16)) }
    }

    /// The path of a delta's URL under the base URL (also its file in an export).
    public func deltaPath(_ delta: Delta) -> String { "deltas/\(id)/\(delta.urlName)" }

    /// A delta, as a pack to serve: its archive, digest and size, this version's number and date.
    func served(_ delta: Delta) -> ServedPack {
        var pack = self
        pack.archive = delta.archive
        pack.sha256 = delta.sha256
        pack.downloadSize = delta.downloadSize
        pack.deltas = []
        return pack
    }

    /// The strong entity tag of this version.
    public var etag: String { "\"\(sha256)\"" }

    /// The manifest entry, with the pack's URL under `baseURL` (empty for a relative URL).
    /// - Parameters:
    ///   - baseURL: Written before the pack's path, with a `/` between them.
    ///   - packFolder: Written between the base URL and the ID: `assets/` as `serve` and `export` publish
    ///     packs, empty for Apple's layout (base URL + "/" + ID).
    public func manifestEntry(baseURL: String, packFolder: String = "assets/") -> DownloadManifest.Entry {
        let prefix = baseURL.isEmpty ? "" : (baseURL.hasSuffix("/") ? baseURL : baseURL + "/")
        return DownloadManifest.Entry(
            id: id,
            url: prefix + packFolder + id,
            version: version,
            downloadSize: downloadSize,
            downloadPolicy: downloadPolicy,
            sha256: sha256,
            installSize: installSize,
            fileCount: fileCount,
            compression: compression,
            platforms: platforms,
            language: language,
            userInfo: userInfo,
            deltas: deltas.isEmpty
                ? nil
                : deltas.map { delta in
                    DownloadManifest.Delta(
                        fromVersion: delta.fromVersion,
                        fromSHA256: delta.fromSHA256,
                        url: prefix + deltaPath(delta),
                        downloadSize: delta.downloadSize,
                        sha256: delta.sha256,
                        fileCount: delta.fileCount
                    )
                }
        )
    }
}

/// Every pack published at one moment; swapped whole when a pack changes.
public struct CatalogSnapshot: Sendable, Hashable {
    /// The packs, sorted by ID.
    public var packs: [ServedPack]
    /// Each pack's previously published version, for the `stale-manifest` fault.
    public var previous: [String: ServedPack] = [:]
    /// Packs being built for the first time: not published yet (a request for one gets 503 and
    /// `Retry-After`, not 404).
    public var building: Set<String> = []
    /// Whether the first build after start is still under way with packs not built yet: the manifest is not
    /// served then (it would tell clients those packs are gone).
    public var incomplete = false
    /// The errors of the folder's manifests and builds right now: each pack concerned keeps its last good
    /// version published meanwhile.
    public var problems: [ManifestProblem] = []

    /// Creates a snapshot.
    public init(packs: [ServedPack], previous: [String: ServedPack] = [:]) {
        self.packs = packs
        self.previous = previous
    }

    /// The pack with this ID, if published.
    public func pack(withID id: String) -> ServedPack? {
        packs.first { $0.id == id }
    }

    /// The download manifest for these packs.
    /// - Parameters:
    ///   - baseURL: Written before `assets/<id>`.
    ///   - stale: Describe each pack by its previous version (where it has one) while the URL serves the
    ///     current bytes, as a lagging CDN would.
    public func manifest(baseURL: String, stale: Bool = false) -> DownloadManifest {
        var manifest = DownloadManifest(
            assetPacks: packs.map { pack in
                var entry = (stale ? previous[pack.id] ?? pack : pack).manifestEntry(baseURL: baseURL)
                entry.url = pack.manifestEntry(baseURL: baseURL).url
                if stale { entry.deltas = nil }
                return entry
            }
        )
        manifest.mockProblems = problems.isEmpty ? nil : problems
        return manifest
    }
}

extension ServedPack {
    /// A pack archive served as it is, byte for byte (`ba-mock serve A.aar`, as `ba-serve A.aar`): read whole
    /// once, every file checked against the digests it carries, its manifest fields taken from what it
    /// carries, else its ID from the file name.
    /// - Parameters:
    ///   - path: An Apple Archive (or a tar pack of ba-mock's own).
    ///   - version: The version to publish it at.
    /// - Returns: The pack, and a warning when its ID was taken from the file name.
    /// - Throws: ``AssetPackFormatError`` for an archive that does not read or does not verify.
    public static func archive(at path: FilePath, version: Int) throws -> (pack: ServedPack, warning: String?) {
        let listing = try PackArchiveReader.list(at: path)
        let fallback = listing.fallbackDescription(of: path, doing: "it is served as")
        let index = try PackArchiveReader.verify(at: path, describedAs: fallback?.index)
        let sha256 = try FileDigest.sha256(of: path)
        let attributes = try? FileManager.default.attributesOfItem(atPath: path.string)
        let size = (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        let modified = attributes?[.modificationDate] as? Date
        let pack = ServedPack(
            id: index.assetPackID,
            version: version,
            downloadPolicy: index.downloadPolicy,
            archive: path,
            sha256: sha256,
            downloadSize: size,
            installSize: index.installSize,
            fileCount: index.fileCount,
            compression: listing.compression ?? .zstd,
            lastModified: Date(timeIntervalSince1970: (modified ?? Date()).timeIntervalSince1970.rounded(.down)),
            platforms: index.platforms.isEmpty ? nil : index.platforms,
            language: index.language,
            userInfo: listing.manifest?.userInfo,
            format: listing.format
        )
        return (pack, fallback?.warning)
    }
}
