internal import AssetPackClient
internal import AssetPackFormat
internal import Foundation

/// An actor that manages asset packs, with Apple's declaration
/// (developer.apple.com/documentation/backgroundassets/assetpackmanager): `shared`, the status updates, the
/// manifest, `ensureLocalAvailability`, updates, removal, status and the reads of one merged namespace.
///
/// `shared` plays the app group and manifest URL the environment names, as `ba-sync` reads them
/// (`BA_SYNC_APP_GROUP`, `BA_SYNC_MANIFEST_URL` or `BA_SYNC_SERVER`, `BA_SYNC_INFO_PLIST`, `BA_SYNC_PLATFORM`,
/// `BA_SYNC_LANGUAGE`); without an app group it traps with Apple's message, as a device does for a bundle
/// without `BAAppGroupID`. A test points it elsewhere with `BackgroundAssetsTesting` (for the test's task and
/// the tasks it starts, so that tests run side by side).
public actor AssetPackManager {
    /// The shared manager.
    public static let shared = AssetPackManager()

    private init() {}

    /// What this call works with: the test's configuration, else the environment's.
    package nonisolated var backend: Backend { Backend.current }

    /// The engine of this call.
    nonisolated var engine: AssetPackClient.AssetPackManager { backend.engine }

    // MARK: Tracking downloads

    /// An asynchronous sequence of download-status updates for all asset packs.
    public nonisolated var statusUpdates: some Sendable & AsyncSequence<AssetPackManager.DownloadStatusUpdate, Never> {
        backend.subscribe(nil)
    }

    /// Gets an asynchronous sequence of download-status updates for the asset pack with the specified
    /// identifier; it ends after the download's `finished` or `failed` update.
    public nonisolated func statusUpdates(
        forAssetPackWithID assetPackID: String
    ) -> some Sendable & AsyncSequence<AssetPackManager.DownloadStatusUpdate, Never> {
        backend.subscribe(assetPackID)
    }

    // MARK: Accessing asset packs

    /// Gets the asset pack with the specified identifier: from what this app group cached of the last
    /// manifest, else from the server ("might attempt to get the latest asset-pack information from the
    /// server if the system hasn't cached that information locally").
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` for a pack not listed for this
    ///   platform; a network error when nothing was cached and the server cannot be reached.
    @available(*, deprecated, message: "Obtain a manifest with `manifest` instead.")
    public func assetPack(withID assetPackID: String) async throws -> AssetPack {
        let engine = self.engine
        return AssetPack(try await FaceError.translating { try await engine.cachedAssetPack(withID: assetPackID) })
    }

    /// Every asset pack the server lists for this platform (offline, those of the manifest last fetched).
    @available(*, deprecated, message: "Obtain a manifest with `manifest` instead.")
    public var allAssetPacks: Set<AssetPack> {
        get async throws {
            let engine = self.engine
            return Set(try await FaceError.translating { try await engine.allAssetPacks }.map(AssetPack.init))
        }
    }

    /// The manifest: the asset packs the server publishes for this app, localized or not (OS 27).
    public var manifest: AssetPackManifest {
        get async throws {
            let engine = self.engine
            return AssetPackManifest(try await FaceError.translating { try await engine.manifest })
        }
    }
}

extension Backend {
    /// The backend a test set for its task tree (`BackgroundAssetsTesting`).
    @TaskLocal package static var override: Backend?

    /// Runs `body` with `shared` playing a backend made from `configuration` (for this task and the tasks it
    /// starts), then ends its status updates and closes its connections: an app's tests
    /// (`BackgroundAssetsTesting`) and `ba-sync bench --layers`.
    /// - Throws: The engine's errors for the configuration, or what `body` throws.
    package static func playing<T: Sendable>(
        _ configuration: ManagerConfiguration,
        _ body: () async throws -> T
    ) async throws -> T {
        let backend = try await BlockingIO.shortCall { try Backend(configuration) }
        let result: Result<T, any Error>
        do {
            result = .success(try await $override.withValue(backend) { try await body() })
        } catch {
            result = .failure(error)
        }
        await backend.shutdown()
        return try result.get()
    }

    /// The backend the environment configures, made at its first use; a process without one traps with
    /// Apple's message, as a device does for a bundle without `BAAppGroupID`.
    package static let fromEnvironment: Backend = {
        switch ManagerConfiguration.fromEnvironment(ProcessInfo.processInfo.environment) {
        case .success(let configuration):
            do {
                return try Backend(configuration)
            } catch {
                fatalError("The app couldn't be validated: \(error)")
            }
        case .failure(let problem):
            fatalError(problem.description)
        }
    }()

    /// The backend of the current task.
    package static var current: Backend { override ?? fromEnvironment }
}
