import AssetPackClient
import AssetPackFormat
import AsyncHTTPClient
import SystemPackage

/// `ba-sync`'s commands that need a manager, as library calls: each takes what the command was given, as
/// values, and returns its typed result (``SyncOutput``); `ba-sync` only parses its arguments into a runner,
/// calls one method and prints what it returns. A test calls the same methods, in milliseconds, against a
/// server on loopback.
///
/// A run shows the manager's events as they happen (``ManagerSession``: progress on stderr, or JSON lines)
/// and closes its HTTP client whatever happens.
public struct SyncRunner: Sendable {
    /// The manager's configuration (app group, manifest, platform, languages, downloads).
    public var configuration: AssetPackManager.Configuration
    /// JSON lines instead of text.
    public var json: Bool
    /// A PEM CA certificate to trust for https.
    public var caCertificate: String?
    /// Errors that end a command on purpose (an exit code), not failures to print as JSON.
    public var isExit: @Sendable (any Error) -> Bool

    public init(
        configuration: AssetPackManager.Configuration,
        json: Bool = false,
        caCertificate: String? = nil,
        isExit: @escaping @Sendable (any Error) -> Bool = { _ in false }
    ) {
        (self.configuration, self.json, self.caCertificate, self.isExit) = (configuration, json, caCertificate, isExit)
    }

    /// Runs `body` with a manager made from the configuration (see ``ManagerSession``).
    /// - Returns: What `body` returns, and the packs whose failure the progress already showed.
    public func run<T: Sendable>(_ body: (AssetPackManager) async throws -> T) async throws -> (T, shown: Set<String>) {
        // A connection attempt gives up within the manifest's timeout (5 s at most); a read that waits for
        // bytes, after the stall timeout, so that a stalled download is cut and resumed.
        let client = AssetPackManager.makeHTTPClient(
            trusting: caCertificate,
            connectTimeout: min(configuration.manifestTimeout, .seconds(5)),
            readTimeout: configuration.stallTimeout
        )
        let session = ManagerSession(json: json, appGroup: configuration.appGroup, isExit: isExit)
        let configuration = self.configuration
        return try await session.run(
            making: { try AssetPackManager(configuration: configuration, client: client) },
            closing: { try? await client.shutdown() },
            body
        )
    }

    /// `list`: the server's packs for the platform played, with their local status.
    public func list() async throws -> SyncOutput.List {
        let platform = configuration.platform
        return try await run { manager in
            SyncOutput.List(
                entries: try await manager.statusOfAllAssetPacks().filter { $0.pack != nil },
                manifest: try await manager.manifest,
                platform: platform
            )
        }.0
    }

    /// `status`: the installed packs, or the one asked for, with Apple's flags (offline when the server does
    /// not answer).
    /// - Returns: The result, or `nil` when `id` is neither installed nor known to the server.
    public func status(of id: String?) async throws -> SyncOutput.Status? {
        try await run { manager -> SyncOutput.Status? in
            let reader = manager.reader
            let language = try await BlockingIO.shortCall { AppLanguage(reader) }
            let report = try await manager.statusReport(ofAssetPackWithID: id)
            if id != nil, let entry = report.entries.first, entry.installed == nil, entry.status.isEmpty { return nil }
            return SyncOutput.Status(report, language: language)
        }.0
    }

    /// `check-updates`: installs the updates of installed packs and removes obsolete ones, then returns.
    public func checkUpdates() async throws -> SyncOutput.CheckUpdates {
        let ((updated, removed), _) = try await run { manager in try await manager.checkForUpdatesAndWait() }
        return SyncOutput.CheckUpdates(updating: Set(updated), removed: Set(removed))
    }

    /// `remove`: deletes an installed pack.
    /// - Throws: `AssetPackClientError` (`assetPackNotFound`) when it is not installed.
    public func remove(_ id: String) async throws -> SyncOutput.Remove {
        _ = try await run { manager in
            do {
                try await manager.remove(assetPackWithID: id)
            } catch ManagedBackgroundAssetsError.assetPackNotFound(let id) {
                throw AssetPackClientError.notInstalled(id, in: manager.store.root)
            }
        }
        return SyncOutput.Remove(removed: id)
    }

    /// `ensure`: makes the packs local (the latest versions with `latest`), the Info.plist's first-install
    /// limits held when given.
    /// - Returns: The result (failed packs in it, not thrown), and the packs whose failure the progress showed.
    public func ensure(_ ids: [String], latest: Bool, limits: InitialDownloadLimits?) async throws -> (
        SyncOutput.Ensure, shown: Set<String>
    ) {
        let (failures, shown) = try await run { manager -> [AssetPack: AssetPackClientError] in
            if let limits { try await manager.enforceInitialDownloadLimits(limits, for: .packs(ids)) }
            do {
                try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ids, requireLatestVersions: latest)
                return [:]
            } catch let error as AssetPackManager.LocalAvailabilityError {
                return error.failures
            }
        }
        return (SyncOutput.Ensure(ids: ids, failures: failures), shown)
    }

    /// `reconcile`: downloads the localized packs of the app's language and removes the others'; when a
    /// download fails nothing is removed.
    /// - Returns: The result (its `failures` when some failed, not thrown), and the packs whose failure the
    ///   progress showed.
    public func reconcile() async throws -> (SyncOutput.Reconcile, shown: Set<String>) {
        try await run { manager -> SyncOutput.Reconcile in
            let language = try await manager.manifest.resolvedLanguage?.description ?? "none"
            do {
                return SyncOutput.Reconcile(language: language, try await manager.reconcilePreferredLanguages())
            } catch let error as AssetPackManager.LocalAvailabilityError {
                return SyncOutput.Reconcile(language: language, failures: error.failures)
            }
        }
    }

    /// `sync`: what a device does for an installation event (essential, then prefetch packs; updates), the
    /// Info.plist's first-install limits held when given and the App Store's in-app content setting on.
    /// - Returns: The report (failures in it, not thrown), and the packs whose failure the progress showed.
    public func sync(event: InstallationEvent, inAppContent: Bool, limits: InitialDownloadLimits?) async throws -> (
        SyncReport, shown: Set<String>
    ) {
        try await run { manager in
            if let limits, inAppContent {
                try await manager.enforceInitialDownloadLimits(limits, for: .event(event))
            }
            return try await manager.sync(event: event, inAppContent: inAppContent)
        }
    }
}
