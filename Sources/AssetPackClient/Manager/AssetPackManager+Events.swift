import AssetPackFormat

/// The system events that trigger downloads by policy, as the Background Assets extension sees them.
public enum InstallationEvent: String, Sendable, CaseIterable {
    /// The app was just installed: essential and prefetch packs with `firstInstallation`.
    case install
    /// The app was just updated: packs with `subsequentUpdate`, plus updates of installed packs.
    case update
    /// The periodic check: `checkForUpdates()`.
    case periodic
}

/// What a sync did, pack by pack.
public struct SyncReport: Sendable {
    /// Packs installed or updated, by ID.
    public var installed: [String] = []
    /// Packs already local and current, by ID.
    public var alreadyLocal: [String] = []
    /// Packs removed as obsolete, by ID.
    public var removed: [String] = []
    /// Packs that failed, with why; what was installed before stays.
    public var failures: [String: AssetPackClientError] = [:]
    /// Whether an essential pack failed for good.
    public var essentialFailed = false
    /// The essential packs that failed for good, by ID: the system stops blocking launch, so the app launches
    /// without them and must call `ensureLocalAvailability` itself.
    public var launchesWithout: [String] = []
}

extension AssetPackManager {
    /// Does what the system does on `event`: essential packs first (all of them, before any prefetch pack),
    /// then prefetch packs, concurrently up to the download bound. Localized packs are installed for the
    /// resolved language only, beside the unlocalized ones. An essential pack that fails for good does not
    /// keep the app from launching (the system stops blocking launch): the report lists it in
    /// ``SyncReport/launchesWithout``, and the app makes it local with `ensureLocalAvailability`.
    /// - Parameters:
    ///   - event: The system event.
    ///   - inAppContent: The App Store setting: `false` (the user turned in-app content off) downloads no
    ///     pack by policy, essential or prefetch, on `install` and `update` (no extension runs before launch);
    ///     updates of installed packs and the app's own `ensureLocalAvailability` still work.
    ///   - declining: Packs the app's downloader extension declined (Apple's `shouldDownload(_:)` answered
    ///     `false`): their policy does not download them on this event.
    /// - Returns: What was installed, updated, removed and what failed.
    /// - Throws: Only when the manifest cannot be fetched or the app group cannot be locked; pack failures
    ///   are in the report.
    public func sync(event: InstallationEvent, inAppContent: Bool = true, declining: Set<String> = [])
        async throws -> SyncReport
    {
        try await withExclusiveControl {
            var report = SyncReport()
            let packs = try await self.serverPacks()
            let store = self.store
            let before = try await BlockingIO.shortCall { try store.loadState().installed.mapValues(\.version) }
            if event != .install {
                do {
                    let (_, removed) = try await self.checkForUpdatesAndWait()
                    report.removed = removed.sorted()
                } catch let error as AssetPackClientError {
                    report.failures[error.assetPackID ?? "update"] = error
                }
            }
            if event != .periodic, inAppContent {
                let wanted = try await self.policyPacks(for: event, in: packs).filter { !declining.contains($0.id) }
                for essential in [true, false] {
                    let group = wanted.filter { pack in
                        if case .essential = pack.downloadPolicy { return essential }
                        return !essential
                    }
                    do {
                        try await self.ensureAll(Set(group)) { try await self.ensure($0, latest: event == .update) }
                    } catch let error as LocalAvailabilityError {
                        for (pack, failure) in error.failures {
                            report.failures[pack.id] = failure
                            if essential {
                                report.essentialFailed = true
                                report.launchesWithout.append(pack.id)
                            }
                        }
                    }
                }
            }
            report.launchesWithout.sort()
            let after = try await BlockingIO.shortCall { try store.loadState().installed.mapValues(\.version) }
            // A localized pack this sync brought came for the language: a language switch may remove it.
            try await self.markInstalledForLanguage(after.keys.filter { before[$0] == nil })
            for (id, version) in after.sorted(by: { $0.key < $1.key }) {
                if before[id] != version { report.installed.append(id) } else { report.alreadyLocal.append(id) }
            }
            return report
        }
    }
}

extension AssetPackManager {
    /// The packs whose policy downloads them on `event`, as the system asks the app's downloader extension
    /// about them (Apple's `shouldDownload(_:)`): essential and prefetch packs whose `installationEventTypes`
    /// name the event (`firstInstallation` for `install`, `subsequentUpdate` for `update`), localized ones in
    /// the resolved language only; none for `periodic`.
    /// - Throws: A network error when the manifest cannot be fetched.
    public func policyPacks(for event: InstallationEvent) async throws -> [AssetPack] {
        try await policyPacks(for: event, in: try await serverPacks())
    }

    func policyPacks(for event: InstallationEvent, in packs: [String: AssetPack]) async throws -> [AssetPack] {
        guard event != .periodic else { return [] }
        let trigger: InstallationEventType = event == .install ? .firstInstallation : .subsequentUpdate
        let manifest = try await self.manifest(of: packs)
        return packs.values.filter { pack in
            pack.downloadPolicy.installationEventTypes.contains(trigger) && manifest.isForResolvedLanguage(pack)
        }.sorted { $0.id < $1.id }
    }
}
