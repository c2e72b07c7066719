internal import AssetPackClient
public import BackgroundAssets

/// What an installation event did, pack by pack.
public struct SimulatedContentRequest: Sendable {
    /// The event played.
    public var request: BAContentRequest
    /// The packs the event's policy applies to, which the extension was asked about, by ID.
    public var offered: [String] = []
    /// The packs the extension declined (`shouldDownload(_:)` answered `false`), by ID.
    public var declined: [String] = []
    /// The packs installed or updated, by ID.
    public var downloaded: [String] = []
    /// The packs removed (obsolete, or localized for another language), by ID.
    public var removed: [String] = []
    /// The packs that failed, with the error, as `statusUpdates` reported it.
    public var failures: [String: any Error] = [:]
    /// The essential packs that failed for good: the system stops blocking launch, and the app calls
    /// `ensureLocalAvailability` for them itself.
    public var launchesWithout: [String] = []
}

extension BackgroundAssets.AssetPackManager {
    /// Plays an installation event as the system does, which an app cannot call: for `install` and `update`,
    /// asks `downloaderExtension.shouldDownload(_:)` about each essential and prefetch pack whose
    /// `installationEventTypes` name the event (localized ones in the resolved language), then downloads the
    /// accepted ones, essential packs first, and returns when those downloads end; `update` and `periodic`
    /// also update the installed packs and remove obsolete ones (`checkForUpdates()`); `languageChange`
    /// reconciles the localized packs with the resolved language. An `install` is held to the Info.plist's
    /// first-install limits when the configuration names one.
    /// - Returns: What was offered, declined, downloaded, removed and what failed.
    /// - Throws: When the manifest cannot be fetched, the app group cannot be locked, or (`install`) the
    ///   packs would go over the Info.plist's limits; a pack's failure is in the result, as a device goes on
    ///   with the others.
    @discardableResult
    public func simulate(
        _ contentRequest: BAContentRequest,
        downloaderExtension: some ManagedDownloaderExtension
    ) async throws -> SimulatedContentRequest {
        let backend = self.backend
        let engine = backend.engine
        var result = SimulatedContentRequest(request: contentRequest)
        do {
            if contentRequest == .languageChange {
                let reconciled = try await engine.reconcilePreferredLanguages()
                result.downloaded = reconciled.downloaded
                result.removed = reconciled.removed
                return result
            }
            let event: InstallationEvent =
                switch contentRequest {
                case .install: .install
                case .update: .update
                default: .periodic
                }
            let offered = try await engine.policyPacks(for: event)
            result.offered = offered.map(\.id)
            result.declined = offered.filter { !downloaderExtension.shouldDownload(AssetPack($0)) }.map(\.id)
            if event == .install, let limits = backend.configuration.initialDownloadLimits {
                try await engine.enforceInitialDownloadLimits(
                    limits,
                    for: .packs(
                        result.offered.filter {
                            !result.declined.contains($0)
                        }
                    )
                )
            }
            let report = try await engine.sync(event: event, declining: Set(result.declined))
            result.downloaded = report.installed
            result.removed = report.removed
            result.failures = report.failures.mapValues { FaceError.translate($0) }
            result.launchesWithout = report.launchesWithout
            return result
        } catch {
            throw FaceError.translate(error)
        }
    }
}
