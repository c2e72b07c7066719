internal import AssetPackClient
internal import AssetPackFormat
public import BackgroundAssets
public import Foundation
public import System
internal import SystemPackage

/// What `AssetPackManager.shared` plays for a test that configures it in code: the settings `ba-sync` and
/// the environment (`BA_SYNC_*`) give it otherwise.
public struct SharedManagerConfiguration: Sendable {
    /// The app-group folder packs are installed into (created when a pack is).
    public var appGroup: System.FilePath
    /// The download manifest's URL (Apple's `BAManifestURL`); `nil` for reads, removal and local status only.
    public var manifestURL: URL?
    /// The platform played (`iOS`, `macOS`, `tvOS`, `visionOS`); `nil` sees every pack.
    public var platform: String? = "iOS"
    /// The app's preferred language (a BCP-47 tag); `nil` takes the app group's, then the environment's.
    public var language: String?
    /// The app's primary language, the resolved language's fallback.
    public var primaryLanguage = "en"
    /// A PEM CA certificate to trust for https (`ba-mock serve --tls-self-signed` prints one).
    public var caCertificate: String?
    /// Update through ba-mock's delta archives (ours; a device downloads whole packs).
    public var deltaUpdates = false
    /// The app's Info.plist: its first-install limits hold an `install` event (``AssetPackManager/simulate(_:downloaderExtension:)``).
    public var infoPlist: System.FilePath?

    public init(appGroup: System.FilePath, manifestURL: URL? = nil) {
        self.appGroup = appGroup
        self.manifestURL = manifestURL
    }

    /// The configuration of the package's backend.
    func managerConfiguration() throws -> ManagerConfiguration {
        var configuration = ManagerConfiguration(appGroup: appGroup.underlying, manifestURL: manifestURL)
        configuration.engine.platform = platform
        configuration.engine.language = language
        configuration.engine.primaryLanguage = primaryLanguage
        configuration.engine.deltaUpdates = deltaUpdates
        configuration.caCertificate = caCertificate
        if let infoPlist {
            do {
                configuration.initialDownloadLimits = InitialDownloadLimits(
                    try AppInfoPlist.readValid(file: infoPlist.underlying)
                )
            } catch let error as AssetPackFormatError where error.code == .invalidManifest {
                throw MockAssetPackServerError(description: "the Info.plist \(infoPlist): \(error.message)")
            }
        }
        return configuration
    }
}

extension BackgroundAssets.AssetPackManager {
    /// Runs `body` with `shared` playing `configuration` (for this task and the tasks it starts), then ends
    /// its status updates and closes its connections.
    /// - Throws: An error naming what is wrong with the configuration (a URL that will not be fetched, an
    ///   app group that is a file, a language that is not BCP-47), or what `body` throws.
    public static func withConfiguration<T: Sendable>(
        _ configuration: SharedManagerConfiguration,
        _ body: () async throws -> T
    ) async throws -> T {
        let made = try configuration.managerConfiguration()
        let backend = try await BlockingIO.shortCall { try Backend(made) }
        let result: Result<T, any Error>
        do {
            result = .success(try await Backend.$override.withValue(backend) { try await body() })
        } catch {
            result = .failure(error)
        }
        await backend.shutdown()
        return try result.get()
    }

    /// Waits for the updates `checkForUpdates()` scheduled (Apple's returns without waiting, and a device
    /// installs them in the background; a test waits to look at the result).
    /// - Returns: The packs whose update failed, with the error.
    @discardableResult
    public func waitForScheduledUpdates() async -> [String: any Error] {
        await backend.engine.waitForScheduledUpdates().mapValues { FaceError.translate($0) }
    }

    /// The app group `shared` installs into, to look at what a device would hold.
    public nonisolated var appGroup: System.FilePath { System.FilePath(backend.configuration.appGroup) }
}
