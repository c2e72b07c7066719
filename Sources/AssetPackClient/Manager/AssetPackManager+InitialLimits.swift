import AssetPackFormat
import Foundation

extension AssetPackManager {
    /// What a command is about to download, for ``enforceInitialDownloadLimits(_:for:)``.
    public enum InitialDownload: Sendable, Hashable {
        /// `sync(event:)`: for `.install`, the packs whose `installationEventTypes` include `firstInstallation`
        /// (in the resolved language); other events download nothing a first install limits.
        case event(InstallationEvent)
        /// `ensureLocalAvailability`: these packs.
        case packs([String])
    }

    /// Stops a first install that would go over the Info.plist's limits, before anything downloads; does
    /// nothing when the app group has held a pack before (see ``InitialDownloadLimits``).
    /// - Parameters:
    ///   - limits: The Info.plist's limits.
    ///   - download: What the command is about to download.
    /// - Returns: Whether the packs were held to the limits: the app group was at its first install, and the
    ///   command downloads what they cover.
    /// - Throws: ``AssetPackClientError`` with code `.downloadWouldExceedAllowance` or
    ///   `.downloadDisallowedByDomain`, or the manifest's fetch errors.
    @discardableResult
    public func enforceInitialDownloadLimits(_ limits: InitialDownloadLimits, for download: InitialDownload)
        async throws -> Bool
    {
        let store = self.store
        if case .event(let event) = download, event != .install { return false }
        guard try await BlockingIO.shortCall({ try InitialDownloadLimits.isFirstInstall(store) }) else { return false }
        guard let manifests else { return false }  // the command itself says a server is needed
        let (all, bytes) = try await manifests.fetchCountingBytes()
        let visible = listing(of: all).visible
        let packs: [AssetPack]
        switch download {
        case .event:
            let manifest = try await manifest(of: visible)
            packs = visible.values.filter {
                $0.downloadPolicy.installationEventTypes.contains(.firstInstallation)
                    && manifest.isForResolvedLanguage($0)
            }
        case .packs(let ids):
            packs = ids.compactMap { visible[$0] }  // a pack not listed fails in the command, saying so
        }
        if let error = limits.violation(downloading: packs, manifestURL: manifests.url, manifestSize: bytes) {
            throw error
        }
        return true
    }
}
