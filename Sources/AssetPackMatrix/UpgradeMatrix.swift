import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

/// Every update a user can take, played as a device plays it: releases of an asset folder (or folders
/// `ba-mock export` wrote) are published side by side on loopback, and for each pair a fresh app group is
/// brought to the older release, then updated to the newer one (`sync --event update`: what the system does
/// after an app update), and checked: every pack at the new version, obsolete packs removed, every file's
/// digest right.
///
/// `ba-sync upgrade-matrix` is this call; a test calls it the same way.
public enum UpgradeMatrix {
    /// What to play.
    public struct Request: Sendable {
        /// The releases, oldest first: asset folders (built in turn, so that versions go up as a server's do),
        /// folders `ba-mock export` wrote (a `manifest` file inside), or download manifests (a file, as
        /// `ba-mock download-manifest create` writes; relative pack URLs resolve beside it), served as they are.
        public var releases: [FilePath]
        /// Which pairs: every older release to the newest and a first install at the newest (the default),
        /// or every older release to every newer one.
        public var allPairs = false
        /// Only this pair (release numbers from 1; `from` 0 is a first install), to replay one.
        public var only: (from: Int, to: Int)?
        /// The platform played; `nil` sees every pack.
        public var platform: String? = "iOS"
        /// Update through deltas (ours) where the newer release lists one; whole packs by default, as a device.
        public var deltaUpdates = false
        /// How packs are built from asset folders: Apple Archives by default, as `ba-mock serve` publishes them
        /// and a device downloads them.
        public var packOptions = PackBuildOptions(format: .aar)
        /// Where to keep each pair's app group (`<from>-to-<to>`), to look at; a temporary folder otherwise.
        public var keepAppGroups: FilePath?
        /// Where to write the report as one HTML page (``Report/html``), or `nil`.
        public var htmlFile: FilePath?

        public init(releases: [FilePath]) {
            self.releases = releases
        }
    }

    /// A release as published.
    public struct Release: Sendable, Codable, Equatable {
        /// Its number, from 1, oldest first.
        public var number: Int
        /// What it was made from.
        public var source: String
        /// Its packs' versions, by ID: those the platform played sees.
        public var packs: [String: Int]
        /// Its manifest's name where the matrix serves it (`/r<number>/<name>`).
        var manifestName = "manifest"
        /// Its packs' archive digests, by ID, where the manifest gives them.
        var digests: [String: String] = [:]

        enum CodingKeys: String, CodingKey { case number, source, packs }

        /// Its manifest's URL on the matrix's server at `base`.
        func manifestURL(_ base: URL) -> URL { base.appendingPathComponent("r\(number)/\(manifestName)") }
    }

    /// One pair's outcome.
    public struct Pair: Sendable, Codable, Equatable {
        /// The release the app group held first; `0` for a first install.
        public var from: Int
        /// The release it was updated to.
        public var to: Int
        /// Whether every check held.
        public var ok: Bool
        /// Seconds the update took (the first install of the older release not counted).
        public var seconds: Double
        /// The bytes the update downloaded.
        public var bytesDownloaded: Int64
        /// Each pack's status flags against the newer release, before the update (Apple's names).
        public var statusBefore: [String: [String]]
        /// Each pack's status updates during the update (`began`, `paused`, `downloading`, `finished`,
        /// `failed`; consecutive `downloading` as one).
        public var updates: [String: [String]]
        /// What the app group holds after, by ID: the version.
        public var installed: [String: Int]
        /// The packs the update removed.
        public var removed: [String]
        /// What went wrong, one line each; empty when `ok`.
        public var problems: [String]
        /// What a device does that users may not expect, one line each (a new pack the update does not
        /// download); not failures.
        public var notes: [String] = []
        /// The command that plays this pair alone, keeping its app group.
        public var replay: String
    }

    /// The whole matrix.
    public struct Report: Sendable, Codable, Equatable {
        public let event = "result"
        /// The releases, oldest first.
        public var releases: [Release]
        /// The pairs played.
        public var pairs: [Pair]
        /// Seconds in all, releases built and pairs played.
        public var seconds: Double
        /// How many pairs failed.
        public var failures: Int { pairs.filter { !$0.ok }.count }

        enum CodingKeys: String, CodingKey { case event, releases, pairs, seconds, failures }

        public init(releases: [Release], pairs: [Pair], seconds: Double) {
            (self.releases, self.pairs, self.seconds) = (releases, pairs, seconds)
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            releases = try container.decode([Release].self, forKey: .releases)
            pairs = try container.decode([Pair].self, forKey: .pairs)
            seconds = try container.decode(Double.self, forKey: .seconds)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event, forKey: .event)
            try container.encode(releases, forKey: .releases)
            try container.encode(pairs, forKey: .pairs)
            try container.encode(seconds, forKey: .seconds)
            try container.encode(failures, forKey: .failures)
        }
    }

    /// What the matrix tells its watcher as it goes.
    public enum Progress: Sendable {
        /// A release was built or read.
        case release(Release)
        /// A pair is about to be played (its index from 1, of how many).
        case pair(from: Int, to: Int, index: Int, of: Int)
        /// A pair was played.
        case played(Pair)
        /// A line from the build (a warning).
        case note(String)
    }

    /// The pairs `request` asks for, among `count` releases.
    static func pairs(_ request: Request, count: Int) -> [(from: Int, to: Int)] {
        if let only = request.only { return [only] }
        guard count > 0 else { return [] }
        let targets = request.allPairs ? Array(1...count) : [count]
        return targets.flatMap { to in (0..<to).map { (from: $0, to: to) } }
    }
}

/// A request the matrix cannot play: the message says which and why.
public struct UpgradeMatrixError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// Whether the request itself is wrong (a release that is no folder, a pair out of range), rather than
    /// something found while playing it (a release that does not build).
    public var isUsage: Bool
    init(_ description: String, isUsage: Bool = true) { (self.description, self.isUsage) = (description, isUsage) }
}
