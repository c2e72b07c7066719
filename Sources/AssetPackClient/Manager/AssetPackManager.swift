import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import SystemPackage

/// Mirrors asset packs from a server into an app-group directory with the meaning of Apple's
/// `AssetPackManager`: download per policy, verify, install atomically, update, remove, re-download, and
/// read through one merged namespace.
///
/// The manager is the face with Apple's names; the work is done by the types behind it: ``ManifestClient``
/// (the server's manifest), ``PackInstaller`` (the install transaction), ``InstallGate`` (one install per
/// pack in flight), ``AppGroupLockHolder`` (one process at a time), ``StatusBroadcaster`` (status updates)
/// and ``AssetPackReader`` (reads, which need no server).
public actor AssetPackManager {
    /// What `ensureLocalAvailability(of: Set<AssetPack>)` reports when some packs failed.
    public struct LocalAvailabilityError: Error, Sendable, CustomStringConvertible {
        /// The packs that are local.
        public var successes: Set<AssetPack>
        /// The packs that are not, with why.
        public var failures: [AssetPack: AssetPackClientError]

        public var description: String {
            failures.sorted { $0.key.id < $1.key.id }.map { "\($0.key.id): \($0.value)" }.joined(separator: "\n")
        }
    }

    /// The server's base URL (the manifest is at `/manifest`), or the manifest's own URL when the manager was
    /// given one and no server (it names the server in messages); `nil` for a manager that only reads, removes
    /// and reports offline status.
    public nonisolated let server: URL?
    /// The app group.
    public nonisolated let store: AppGroupStore
    /// The read side: the merged namespace of what is installed.
    public nonisolated let reader: AssetPackReader
    /// The platform this manager plays (`iOS`, `macOS`, `tvOS`, `visionOS`); packs for other platforms are
    /// invisible to it, as on a device. `nil` sees every pack.
    public nonisolated let platform: String?
    /// The language of the installed localized packs that best matches the preferred language, else the
    /// primary language (Apple's `resolvedLanguage`); `nil` while no such pack is local. Downloads resolve the
    /// same way against the server's packs (``AssetPackManifest/resolvedLanguage``).
    public nonisolated var resolvedLanguage: LanguageTag? { reader.resolvedLanguage }
    /// Downloads `checkForUpdates()` started and did not wait for.
    var backgroundUpdates: Task<[String: AssetPackClientError], Never>?
    let manifests: ManifestClient?
    let installer: PackInstaller
    let gate = InstallGate()
    private let lock: AppGroupLockHolder
    nonisolated let broadcaster = StatusBroadcaster()
    /// The device's conditions, as played now.
    nonisolated let device: SimulatedDevice
    let maxConcurrentDownloads: Int

    /// Opens an app group against a server, as `configuration` says.
    /// - Parameters:
    ///   - configuration: Where the server and the app group are, and how downloads run (``Configuration``).
    ///   - client: The HTTP client (give one that trusts a `ba-mock --tls-self-signed` CA for HTTPS).
    ///   - onLockWait: Called with the holder's PID when another process holds the app group.
    /// - Throws: ``AssetPackClientError`` with code `.io` when the app group exists and is not a folder,
    ///   `.insecureHTTP` when the manifest's URL is plain http to another machine and that is not allowed.
    public init(
        configuration: Configuration,
        client: HTTPClient = .shared,
        onLockWait: @escaping @Sendable (Int32?) -> Void = { _ in }
    ) throws {
        let (server, manifestURL, appGroup) = (configuration.server, configuration.manifestURL, configuration.appGroup)
        let (language, primaryLanguage) = (configuration.language, configuration.primaryLanguage)
        let (retryPolicy, allowInsecureHTTP) = (configuration.retryPolicy, configuration.allowInsecureHTTP)
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: appGroup.string, isDirectory: &isFolder), !isFolder.boolValue {
            throw AssetPackClientError(
                code: .io,
                message: "the app group \(appGroup) is a file, not a folder. Fix: pass a folder to --app-group"
            )
        }
        let manifestLocation = manifestURL ?? server?.appendingPathComponent("manifest")
        if let manifestLocation { try TransportSecurity.check(manifestLocation, allowHTTP: allowInsecureHTTP) }
        self.server = server ?? manifestURL
        var given: LanguageTag?
        let primary: LanguageTag
        if let language {
            do {
                given = try LanguageTag(parsing: language)
            } catch {
                throw AssetPackClientError.invalidLanguage(language, error)
            }
        }
        do {
            primary = try LanguageTag(parsing: primaryLanguage)
        } catch {
            throw AssetPackClientError.invalidLanguage(primaryLanguage, error)
        }
        self.platform = configuration.platform
        let device = SimulatedDevice(configuration.conditions)
        self.device = device
        self.reader = AssetPackReader(
            appGroup: appGroup,
            language: given,
            primaryLanguage: primary,
            collisions: configuration.collisions,
            environment: configuration.environment
        )
        self.store = reader.store
        self.manifests = manifestLocation.map {
            ManifestClient(
                url: $0,
                client: client,
                retryPolicy: retryPolicy,
                timeout: configuration.manifestTimeout,
                device: device
            )
        }
        self.installer = PackInstaller(
            store: reader.store,
            downloader: PackDownloader(
                transfer: PackTransfer(
                    client: client,
                    timeout: configuration.timeout,
                    stallTimeout: configuration.stallTimeout
                ),
                policy: retryPolicy,
                device: device
            ),
            resumableDownloads: configuration.resumableDownloads,
            deltaUpdates: configuration.deltaUpdates,
            allowInsecureHTTP: allowInsecureHTTP
        )
        let broadcaster = self.broadcaster
        self.lock = AppGroupLockHolder(store: reader.store, timeout: configuration.lockTimeout) { holder in
            broadcaster.publish(.waitingForLock(holder: holder))
            onLockWait(holder)
        }
        self.maxConcurrentDownloads = max(1, configuration.maxConcurrentDownloads)
    }

    /// An HTTP client suited to the manager: connection attempts give up after `connectTimeout`, and a CA
    /// file (such as `ba-mock serve --tls-self-signed` prints) can be trusted. The caller shuts it down.
    /// A read that waits longer than `readTimeout` for the next bytes fails, so a stalled download is caught
    /// and resumed.
    public static func makeHTTPClient(
        trusting caFile: String? = nil,
        connectTimeout: Duration = .seconds(5),
        readTimeout: Duration = .seconds(30)
    ) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .file(caFile) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout.connect = TimeAmount(connectTimeout)
        // A refused connection fails at once: the manager's own retry policy decides what to retry, and AHC's
        // retries of connection attempts would hold a refused one until the connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.read = TimeAmount(readTimeout)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    // MARK: Device conditions

    /// The device's conditions played now (``DeviceConditions``).
    public nonisolated var conditions: DeviceConditions { device.conditions }

    /// Changes the device's conditions while the manager works: going offline pauses the downloads under way
    /// (they resume when the network is back) and fails new fetches at once; the free space counts from now.
    public nonisolated func setConditions(_ conditions: DeviceConditions) { device.set(conditions) }

    // MARK: Server information

    /// What the server lists: every pack, and those this manager's platform sees.
    struct Listing: Sendable {
        /// Every pack, for every platform: a pack listed for another platform is not obsolete.
        var all: [String: AssetPack]
        /// The packs for this manager's platform.
        var visible: [String: AssetPack]
    }

    /// Fetches the server's listing.
    /// - Throws: ``AssetPackClientError`` with code `.network` when no server was given.
    func serverListing() async throws -> Listing {
        guard let manifests else {
            throw AssetPackClientError(
                code: .network,
                message: "this needs the server, and none was given. Fix: pass --server URL or set BA_SYNC_SERVER"
            )
        }
        let packs = try await manifests.fetch()
        let store = self.store
        let url = manifests.url
        // Kept for offline answers (`assetPack(withID:)`, `allAssetPacks`); an answer is not worth failing over.
        try? await BlockingIO.shortCall { try store.keepFetchedManifest(packs, from: url) }
        return listing(of: packs)
    }

    /// The packs of a manifest, and those this manager's platform sees.
    nonisolated func listing(of packs: [String: AssetPack]) -> Listing {
        guard let platform else { return Listing(all: packs, visible: packs) }
        let visible = packs.filter { _, pack in
            pack.platforms?.contains { $0.caseInsensitiveCompare(platform) == .orderedSame } ?? true
        }
        return Listing(all: packs, visible: visible)
    }

    /// Every pack the server lists for this manager's platform, by ID.
    func serverPacks() async throws -> [String: AssetPack] { try await serverListing().visible }

    /// The pack with this ID, as the server describes it now (Apple's `assetPack(withID:)`); offline (no
    /// server given, or it cannot be reached), as the manifest last fetched into this app group described it,
    /// as Apple's answers from what the system cached.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` for a pack not listed for this
    ///   platform; ``AssetPackClientError`` for a network error when no manifest was ever fetched here.
    public func assetPack(withID id: String) async throws -> AssetPack {
        let listing = try await listingOrLastFetched()
        guard let pack = listing.visible[id] else { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id) }
        return pack
    }

    /// The pack with this ID as the manifest last fetched into this app group lists it, else as the server
    /// describes it now (Apple's `assetPack(withID:)`: it "might attempt to get the latest asset-pack
    /// information from the server if the system hasn't cached that information locally").
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` for a pack listed for this
    ///   platform neither in the cache nor by the server; a network error when the server must be asked and
    ///   cannot be reached.
    public func cachedAssetPack(withID id: String) async throws -> AssetPack {
        let store = self.store
        if let last = try await BlockingIO.shortCall({ try store.lastFetchedManifest() }),
            let pack = listing(of: Dictionary(last.packs.map { ($0.id, $0) }) { first, _ in first }).visible[id]
        {
            return pack
        }
        return try await assetPack(withID: id)
    }

    /// Why pack `id` is not in the listing for this platform: not published at all, or for other platforms.
    nonisolated func notListed(_ id: String, in listing: Listing) -> AssetPackClientError {
        var error = AssetPackClientError.assetPackNotFound(
            withID: id,
            server: server?.absoluteString ?? "the server",
            near: PackagingManifest.nearMiss(id, in: listing.visible.keys.sorted())
        )
        if let pack = listing.all[id], let platform {
            error.message =
                "pack \(id) is for \(pack.platforms?.joined(separator: ", ") ?? "other platforms"), not \(platform): "
                + "a \(platform) device does not see it. Fix: play its platform (--platform, or any for every "
                + "pack), or add \(platform) to its manifest"
        }
        return error
    }

    /// Every pack the server lists for this platform (Apple's `allAssetPacks`); offline, those of the manifest
    /// last fetched into this app group.
    /// - Throws: ``AssetPackClientError`` for a network error when no manifest was ever fetched here.
    public var allAssetPacks: Set<AssetPack> {
        get async throws { Set(try await listingOrLastFetched().visible.values) }
    }

    /// The server's listing, or offline (no server, or a network failure) the one last fetched into this app
    /// group; the error when there is none.
    func listingOrLastFetched() async throws -> Listing {
        do {
            return try await serverListing()
        } catch let error as AssetPackClientError where error.code == .network {
            let store = self.store
            guard let last = try await BlockingIO.shortCall({ try store.lastFetchedManifest() }) else { throw error }
            return listing(of: Dictionary(last.packs.map { ($0.id, $0) }) { first, _ in first })
        }
    }

    // MARK: Status updates

    /// Every pack's download updates, from now on.
    public nonisolated var statusUpdates: AsyncStream<DownloadStatusUpdate> { broadcaster.subscribe(nil) }

    /// One pack's download updates, from now on.
    public nonisolated func statusUpdates(forAssetPackWithID id: String) -> AsyncStream<DownloadStatusUpdate> {
        broadcaster.subscribe(id)
    }

    /// Everything a tool shows while the manager works, in order: the status updates, and what Apple's API
    /// does not report (retries and why, resumes and from where, waiting for another process).
    public nonisolated var events: AsyncStream<Event> { broadcaster.subscribeToEvents() }

    /// Ends every status-update stream: their consumers see the updates already sent, then the end (a tool
    /// calls it when its work is done, so that its printer finishes).
    public nonisolated func finishStatusUpdates() { broadcaster.finish() }

    // MARK: Exclusive control

    /// Runs `body` while this process holds the app group's lock; the state is recovered from any crashed
    /// run when the process takes it. Tasks of this process share the lock (installs of one pack still run
    /// one at a time); another process waits, up to the lock timeout.
    /// - Throws: What `body` throws; ``AssetPackClientError`` with code `.lockTimeout` or `.io`;
    ///   `CancellationError` when cancelled while waiting.
    public func withExclusiveControl<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await lock.withLock {
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            // Best effort: a full disk must not turn the work done (or the way it failed) into another error.
            try? await self.rememberLanguage()
            return try result.get()
        }
    }

    // MARK: Managing packs

    /// Removes an installed pack (Apple's `remove(assetPackWithID:)`); `ensureLocalAvailability` downloads
    /// it again. Mappings and descriptors taken before keep reading the bytes they had.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when it is not installed;
    ///   ``AssetPackClientError`` with code `.io` or `.lockTimeout`.
    public func remove(assetPackWithID id: String) async throws {
        try await withExclusiveControl {
            await self.gate.waitForInstall(of: id)
            let store = self.store
            try await BlockingIO.longJob {  // a recursive delete of the pack's folder
                PartialDownload.discard(id, in: store)
                guard try store.removeInstalled(id) != nil else {
                    throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
                }
            }
        }
    }

}
