import AssetPackFormat
import Foundation
import SystemPackage

extension AssetPackManager {
    /// How a manager finds, downloads, installs and reads packs: a value to build, keep and change, as
    /// AsyncHTTPClient's `HTTPClient.Configuration` is; the HTTP client and the lock-wait callback are given
    /// beside it (``AssetPackManager/init(configuration:client:onLockWait:)``).
    public struct Configuration: Sendable {
        /// The server's base URL, e.g. `http://127.0.0.1:8443`; `nil` for offline work only (reads, `remove`,
        /// local status): anything that needs the server then fails saying so.
        public var server: URL?
        /// Where the download manifest is, any URL (Apple's `BAManifestURL`); `nil` for `<server>/manifest`.
        /// Relative pack URLs resolve against it. Only https, or plain http to this machine, unless
        /// ``allowInsecureHTTP``, as "Background Assets uses HTTPS for all downloads".
        public var manifestURL: URL?
        /// The app-group directory (created when something is first installed).
        public var appGroup: FilePath
        /// How many packs download at once.
        public var maxConcurrentDownloads = ClientSettings.defaultConcurrency
        /// How failed downloads and manifest fetches are retried (downloads resume each time).
        public var retryPolicy = RetryPolicy()
        /// The deadline of one download request, body included.
        public var timeout: Duration = .seconds(30 * 60)
        /// The deadline of one manifest fetch, body included.
        public var manifestTimeout: Duration = .seconds(ClientSettings.defaultTimeoutSeconds)
        /// How long a download may receive nothing before it is cut and resumed.
        public var stallTimeout: Duration = .seconds(ClientSettings.defaultTimeoutSeconds)
        /// Download each archive into a file first, so that a process killed mid-download resumes in a later
        /// run, then install from it. By default an archive is extracted as it arrives and never written whole
        /// (about half the disk writes); a cut connection still resumes within the run, and a partial file
        /// left by a resumable run is resumed either way.
        public var resumableDownloads = false
        /// How long to wait for another process that holds the app group; `nil` waits as long as it takes (a
        /// cancelled task stops waiting).
        public var lockTimeout: Duration?
        /// The platform to play; packs for others are invisible. `nil` sees every pack.
        public var platform: String?
        /// The app's preferred language (a BCP-47 tag), which the resolved language best matches; kept in the
        /// app group at the first change there, as a device keeps an app's language. `nil` takes the one the
        /// app group keeps, else the environment's (`LC_ALL`, then `LANG`), else `en`.
        public var language: String?
        /// The app's primary language, the resolved language when the preferred one matches no localized pack
        /// (Apple's `AssetPackManifest.primaryLanguage`).
        public var primaryLanguage = ClientSettings.defaultPrimaryLanguage
        /// Which pack a path held by several packs is read from.
        public var collisions: CollisionRule = .first
        /// Update through a delta archive when the manifest lists one from the installed version (only the
        /// changed files are downloaded): deltas are ours, not Apple's. By default whole packs are downloaded,
        /// as a device does, so the bytes measured are the bytes users download.
        public var deltaUpdates = false
        /// Fetch plain http from any host.
        public var allowInsecureHTTP = false
        /// Where the preferred languages come from when none is given or kept in the app group (GNU's
        /// `LANGUAGE` list, then `LC_ALL` or `LANG`).
        public var environment: [String: String] = ProcessInfo.processInfo.environment
        /// The device played: its free space and its network (``DeviceConditions``); a happy device by default.
        /// ``AssetPackManager/setConditions(_:)`` changes them while the manager works.
        public var conditions = DeviceConditions()

        /// A configuration with every default; set what differs.
        public init(server: URL?, manifestURL: URL? = nil, appGroup: FilePath) {
            (self.server, self.manifestURL, self.appGroup) = (server, manifestURL, appGroup)
        }

        /// A configuration with what differs from the defaults given by name.
        public init(
            server: URL?,
            manifestURL: URL? = nil,
            appGroup: FilePath,
            maxConcurrentDownloads: Int = ClientSettings.defaultConcurrency,
            retryPolicy: RetryPolicy = RetryPolicy(),
            timeout: Duration = .seconds(30 * 60),
            manifestTimeout: Duration = .seconds(ClientSettings.defaultTimeoutSeconds),
            stallTimeout: Duration = .seconds(ClientSettings.defaultTimeoutSeconds),
            resumableDownloads: Bool = false,
            lockTimeout: Duration? = nil,
            platform: String? = nil,
            language: String? = nil,
            primaryLanguage: String = ClientSettings.defaultPrimaryLanguage,
            collisions: CollisionRule = .first,
            deltaUpdates: Bool = false,
            allowInsecureHTTP: Bool = false,
            environment: [String: String] = ProcessInfo.processInfo.environment
        ) {
            self.init(server: server, manifestURL: manifestURL, appGroup: appGroup)
            self.maxConcurrentDownloads = maxConcurrentDownloads
            self.retryPolicy = retryPolicy
            self.timeout = timeout
            self.manifestTimeout = manifestTimeout
            self.stallTimeout = stallTimeout
            self.resumableDownloads = resumableDownloads
            self.lockTimeout = lockTimeout
            self.platform = platform
            self.language = language
            self.primaryLanguage = primaryLanguage
            self.collisions = collisions
            self.deltaUpdates = deltaUpdates
            self.allowInsecureHTTP = allowInsecureHTTP
            self.environment = environment
        }
    }
}
