import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import SystemPackage

/// `ba-mock publish`: an asset folder's packs into an S3-compatible store, the way packs ship behind a CDN.
///
/// Packs and deltas go under immutable keys that carry their version and SHA-256
/// (`PREFIX/packs/<id>/<version>-<sha256>`), with a year's `Cache-Control` and `immutable`; only what the store
/// does not already hold with that size and SHA-256 is uploaded. The download manifest (`PREFIX/manifest`, the
/// one object that changes) goes **last**, after every object it names has been confirmed by a HEAD, so a
/// device never reads a manifest that names a missing or partial object. Old versions are never deleted.
public enum Publisher {
    /// What to publish, where, and how.
    public struct Options: Sendable {
        /// The asset folder, if any.
        public var folder: FilePath?
        /// Pack archives published byte for byte (.aar from ba-package, or ba-mock's own), as `serve` takes them.
        public var archives: [FilePath] = []
        /// The versions of `archives`, by position (1 for those past the end), as ba-serve takes them.
        public var archiveVersions: [Int] = []
        /// `s3://BUCKET/PREFIX`.
        public var destination: String
        /// The store's address; `nil` takes `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the profile's
        /// `endpoint_url`, or AWS's own for the region.
        public var endpointURL: String?
        /// The region of the signature; `nil` takes the environment's or the profile's, else `us-east-1`.
        public var region: String?
        /// The AWS profile; `nil` takes `AWS_PROFILE`, else `default`.
        public var profile: String?
        /// How the bucket is named in requests.
        public var addressing = Addressing.auto
        /// Written before each object's path in the manifest's URLs (a CDN's or the bucket's public address
        /// for PREFIX); `nil` writes URLs relative to the manifest.
        public var downloadBaseURL: String?
        /// The manifest's `max-age`, in seconds.
        public var manifestMaxAge = 60
        /// After publishing, fetch the manifest from `downloadBaseURL` and HEAD every object it names, unsigned,
        /// as a device would (only with a download base URL).
        public var check = true
        /// Platforms to publish a manifest of their own for (`PREFIX/manifest-iOS.json`), as
        /// ``DownloadManifest/platform(named:)`` spells them, as `export --platform` writes them.
        public var platforms: [String] = []
        /// Requests at once.
        public var jobs = 4
        /// An object larger than this is sent in parts of this size (S3 takes 5 MiB to 5 GiB).
        public var partSize: Int64 = 16 << 20
        /// Plan only: report what would be uploaded and kept, change nothing.
        public var dryRun = false
        /// Delete old versions, keeping those of the last `keep` releases (the live one counts); `nil` deletes
        /// nothing.
        public var keep: Int?
        /// How long after the release that replaced it an old version may be deleted: at least the
        /// manifest's `max-age`, so an edge or a device still holding the older manifest finds what it names.
        public var grace: Duration = .seconds(86_400)
        /// Retries of a request after a 5xx, 429 or broken connection.
        public var retries = 5
        /// The waits between those retries.
        public var backoff = Backoff(base: .milliseconds(500), maximum: .seconds(30))
        /// The environment credentials and settings are read from.
        public var environment: [String: String]
        /// Packs published at a version whatever their content.
        public var pinnedVersions: [String: Int] = [:]
        /// How packs are built.
        public var packOptions = PackBuildOptions()
        /// How many earlier versions each pack keeps a delta from.
        public var deltaDepth = 3

        /// Options that publish `folder` (and `archives`) to `destination`, with the process's environment.
        public init(folder: FilePath?, destination: String, environment: [String: String]) {
            self.folder = folder
            self.destination = destination
            self.environment = environment
        }
    }

    /// How a request names the bucket.
    public enum Addressing: String, Sendable, CaseIterable, Codable {
        /// Virtual-hosted on AWS (for a name without dots), path style on any other endpoint.
        case auto
        /// `https://endpoint/BUCKET/KEY`.
        case path
        /// `https://BUCKET.endpoint/KEY`.
        case virtual
    }

    /// One object of a publish, and what was done with it.
    public struct Step: Sendable, Hashable, Codable {
        /// What the object is.
        public enum Kind: String, Sendable, Codable { case pack, delta, platformManifest, manifest }
        /// What was done.
        public enum Action: String, Sendable, Codable {
            /// Sent (or, in a dry run, to be sent).
            case upload
            /// Already in the store with this size and SHA-256.
            case keep
            /// An old version deleted (or, in a dry run, to be deleted).
            case delete
        }

        public var kind: Kind
        /// The object's key in the bucket.
        public var key: String
        /// The pack it belongs to (not for the manifest).
        public var id: String?
        public var version: Int?
        public var bytes: Int64
        /// Its SHA-256, in hex.
        public var sha256: String
        public var action = Action.upload
        /// The parts it was sent in, when it was sent in parts.
        public var parts: Int?
        /// Bytes of its parts that an earlier, interrupted run had sent, and that were not sent again.
        public var resumedBytes: Int64?

        /// Creates a step.
        public init(
            kind: Kind,
            key: String,
            id: String? = nil,
            version: Int? = nil,
            bytes: Int64,
            sha256: String,
            action: Action = .upload
        ) {
            self.kind = kind
            self.key = key
            self.id = id
            self.version = version
            self.bytes = bytes
            self.sha256 = sha256
            self.action = action
        }
    }

    /// What a publish did (or, in a dry run, would do).
    public struct Report: Sendable, Codable {
        /// `s3://BUCKET/PREFIX/manifest`.
        public var manifest: String
        /// The manifest's URL for clients, when a download base URL was given.
        public var manifestURL: String?
        public var endpoint: String
        public var dryRun: Bool
        /// Every object: the archives, the manifest, then old versions deleted.
        public var steps: [Step]
        /// Bytes sent (or to send), not counting the parts an earlier run had sent.
        public var uploadedBytes: Int64
        /// Bytes of old versions deleted (or to delete).
        public var deletedBytes: Int64
        /// Whether the manifest changed (or would).
        public var manifestChanged: Bool
        /// What the public address served afterwards, when it was checked.
        public var publicCheck: PublicCheck?

        /// Creates a report of `steps`, the manifest's last.
        public init(manifest: String, manifestURL: String?, endpoint: String, dryRun: Bool, steps: [Step]) {
            self.manifest = manifest
            self.manifestURL = manifestURL
            self.endpoint = endpoint
            self.dryRun = dryRun
            self.steps = steps
            // What was sent: a part an earlier run had sent is not sent again.
            uploadedBytes = steps.filter { $0.action == .upload }.reduce(0) { $0 + $1.bytes - ($1.resumedBytes ?? 0) }
            deletedBytes = steps.filter { $0.action == .delete }.reduce(0) { $0 + $1.bytes }
            manifestChanged = steps.contains { $0.kind == .manifest && $0.action == .upload }
        }
    }
}
