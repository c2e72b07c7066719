import AssetPackFormat
import Foundation

/// An asset pack as the server describes it: Apple's `AssetPack` fields plus what our manifest adds.
public struct AssetPack: Sendable, Hashable, Identifiable, Codable {
    /// The pack's ID.
    public let id: String
    /// The version the server publishes.
    public let version: Int
    /// The archive's size in bytes.
    public internal(set) var downloadSize: Int64
    /// When the system downloads it.
    public let downloadPolicy: DownloadPolicy
    /// The archive's SHA-256; `nil` when the manifest gives none (Apple's tools write none): the size is
    /// still checked, and every file against the pack's own index.
    public internal(set) var sha256: String?
    /// The bytes the files take once installed, when the manifest says.
    public let installSize: Int64?
    /// How many files it holds, when the manifest says.
    public let fileCount: Int?
    /// Where the archive is downloaded from.
    public internal(set) var url: URL
    /// The platforms it is for; `nil` for all.
    public let platforms: [String]?
    /// The language of a localized pack (a BCP-47 tag); `nil` for a pack every language uses (Apple's
    /// `AssetPack.language`).
    public let language: String?
    /// What the packaging manifest's `userInfo` held.
    public let userInfo: JSONValue?
    /// Delta archives from earlier versions (ours; see ``PackDelta``): an update from one of them downloads
    /// only the files that changed.
    public internal(set) var deltas: [Delta]

    /// A delta archive from an earlier version to this one.
    public struct Delta: Sendable, Hashable, Codable {
        /// The base version.
        public let fromVersion: Int
        /// The base version's archive digest.
        public let fromSHA256: String
        /// Where the delta is downloaded from.
        public let url: URL
        public let downloadSize: Int64
        public let sha256: String
        /// How many files it carries, when the manifest says.
        public let fileCount: Int?
    }

    /// The delta that updates `installed` to this version, if the manifest lists one: its base must be the
    /// installed version's very archive.
    func delta(from installed: InstalledPack) -> Delta? {
        // Without both digests a delta cannot be tied to what it starts from and what it produces.
        guard let installedDigest = installed.sha256, sha256 != nil else { return nil }
        return deltas.first { $0.fromSHA256 == installedDigest && $0.fromVersion == installed.version }
    }

    /// The delta as a download: its URL, size and digest, this version's ID and number.
    func download(of delta: Delta) -> AssetPack {
        var pack = self
        pack.url = delta.url
        pack.downloadSize = delta.downloadSize
        pack.sha256 = delta.sha256
        pack.deltas = []
        return pack
    }

    /// Builds a pack from a manifest entry, resolving a relative URL against the manifest's own URL.
    package init(_ entry: DownloadManifest.Entry, manifestURL: URL) throws {
        guard let url = URL(string: entry.url, relativeTo: manifestURL)?.absoluteURL else {
            throw AssetPackClientError(
                code: .badManifest,
                message: "pack \(entry.id) has a URL that does not parse: \(entry.url)",
                assetPackID: entry.id
            )
        }
        if let problem = DownloadManifest.fetchProblem(with: url) {
            throw AssetPackClientError(
                code: .badManifest,
                message: "pack \(entry.id) has a URL that \(problem): \(url.absoluteString)",
                assetPackID: entry.id
            )
        }
        self.id = entry.id
        self.version = entry.version
        self.downloadSize = entry.downloadSize
        self.downloadPolicy = entry.downloadPolicy
        self.sha256 = entry.sha256
        self.installSize = entry.installSize
        self.fileCount = entry.fileCount
        self.url = url
        self.platforms = entry.platforms
        self.language = entry.language.flatMap { try? LanguageTag(parsing: $0).description }
        self.userInfo = entry.userInfo
        // A delta that cannot be fetched is left out: the whole pack still can be.
        self.deltas = (entry.deltas ?? []).compactMap { delta in
            guard let url = URL(string: delta.url, relativeTo: manifestURL)?.absoluteURL,
                DownloadManifest.fetchProblem(with: url) == nil
            else { return nil }
            return Delta(
                fromVersion: delta.fromVersion,
                fromSHA256: delta.fromSHA256,
                url: url,
                downloadSize: delta.downloadSize,
                sha256: delta.sha256,
                fileCount: delta.fileCount
            )
        }
    }

    /// The archive as a short name: the digest's first 12 characters, or `v<version>` without a digest.
    var archiveLabel: String { sha256.map { String($0.prefix(12)) } ?? "v\(version)" }

    /// What identifies this very archive: the digest, or URL, version and size without one.
    var archiveIdentity: String { sha256 ?? "\(url.absoluteString)#\(version)#\(downloadSize)" }

    /// The state of a pack on this device, with Apple's `AssetPack.Status` bits and raw values.
    public struct Status: OptionSet, Sendable, Hashable, Codable {
        public let rawValue: UInt

        public init(rawValue: UInt) { self.rawValue = rawValue }

        /// Available to download.
        public static let downloadAvailable = Status(rawValue: 1 << 0)
        /// An update can be downloaded now.
        public static let updateAvailable = Status(rawValue: 1 << 1)
        /// The downloaded pack is current.
        public static let upToDate = Status(rawValue: 1 << 2)
        /// The downloaded pack is stale.
        public static let outOfDate = Status(rawValue: 1 << 3)
        /// No longer available; cannot be updated or downloaded again once removed.
        public static let obsolete = Status(rawValue: 1 << 4)
        /// Downloading now.
        public static let downloading = Status(rawValue: 1 << 5)
        /// Downloaded and installed.
        public static let downloaded = Status(rawValue: 1 << 6)

        /// The names of the set bits, in Apple's order.
        public var names: [String] {
            let all: [(Status, String)] = [
                (.downloadAvailable, "downloadAvailable"), (.updateAvailable, "updateAvailable"),
                (.upToDate, "upToDate"), (.outOfDate, "outOfDate"), (.obsolete, "obsolete"),
                (.downloading, "downloading"), (.downloaded, "downloaded"),
            ]
            return all.filter { contains($0.0) }.map(\.1)
        }
    }
}
