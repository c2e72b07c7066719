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
        try await Backend.playing(try configuration.managerConfiguration(), body)
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

/// The device a test plays on purpose, which an app cannot set on a device: its free space, its network, and
/// the known OS behaviours an app must survive. The default is a happy device on a fixed OS.
public struct SimulatedConditions: Sendable, Hashable {
    /// The network.
    public enum Network: Sendable, Hashable {
        /// A working network.
        case wifi
        /// No network: fetches fail at once with `URLError(.notConnectedToInternet)`; a download under way
        /// pauses and resumes when the network is back.
        case offline
    }

    /// A behaviour of Apple's OS, played on purpose, each with its source.
    public enum OSBehaviour: Sendable, Hashable, CaseIterable {
        /// iOS 26.0–26.3: once a download was cancelled through its `Progress`, a later cancel in the same
        /// process does nothing and that download runs to `finished` (Apple Developer Forums thread 814877).
        case laterCancelsIgnored
    }

    /// The network.
    public var network: Network = .wifi
    /// The bytes free for the app group from now on; `nil` for as much as the disk has. An install that would
    /// not fit fails before a byte of it is written, with `CocoaError(.fileWriteOutOfSpace)`.
    public var freeSpace: Int64?
    /// A drop of the network in each pack's download: after `afterBytes` bytes, for `downFor` (the download
    /// pauses, then resumes where it stopped).
    public var networkDrop: (afterBytes: Int64, downFor: Duration)?
    /// The OS behaviours played.
    public var osBehaviours: Set<OSBehaviour> = []

    public init(
        network: Network = .wifi,
        freeSpace: Int64? = nil,
        networkDrop: (afterBytes: Int64, downFor: Duration)? = nil,
        osBehaviours: Set<OSBehaviour> = []
    ) {
        (self.network, self.freeSpace, self.networkDrop, self.osBehaviours) =
            (network, freeSpace, networkDrop, osBehaviours)
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.network == b.network && a.freeSpace == b.freeSpace && a.osBehaviours == b.osBehaviours
            && a.networkDrop?.afterBytes == b.networkDrop?.afterBytes
            && a.networkDrop?.downFor == b.networkDrop?.downFor
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(network)
        hasher.combine(freeSpace)
        hasher.combine(osBehaviours)
        hasher.combine(networkDrop?.afterBytes)
        hasher.combine(networkDrop?.downFor)
    }

    /// The engine's conditions.
    var device: DeviceConditions {
        DeviceConditions(
            network: network == .offline ? .offline : .wifi,
            freeSpace: freeSpace,
            drop: networkDrop.map { .init(afterBytes: $0.afterBytes, downFor: $0.downFor) }
        )
    }
}

extension BackgroundAssets.AssetPackManager {
    /// Plays `conditions` from now on, while downloads run too: going offline pauses a download under way
    /// (fetches fail at once), free space counts from now.
    public nonisolated func simulate(_ conditions: SimulatedConditions) {
        backend.engine.setConditions(conditions.device)
        backend.knownBehaviours = Set(
            conditions.osBehaviours.map { behaviour in
                switch behaviour {
                case .laterCancelsIgnored: .laterCancelsIgnored
                }
            }
        )
    }
}
