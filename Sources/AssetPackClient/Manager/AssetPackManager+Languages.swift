import AssetPackFormat
import Foundation
import SystemPackage

/// What a language switch does: the packs downloaded and removed, and the languages local after it.
public struct LanguageReconciliation: Sendable {
    /// Localized packs of the resolved language that were downloaded, by ID.
    public var downloaded: [String] = []
    /// Localized packs of other languages that were removed, by ID.
    public var removed: [String] = []
    /// The languages of the installed localized packs afterwards (Apple's `locallyAvailableLanguages`).
    public var locallyAvailableLanguages: [String] = []
}

/// Localized packs (OS 27): the manifest, the resolved language, and switching it.
extension AssetPackManager {
    /// What the server publishes for this manager's platform, with the language its localized packs resolve
    /// to (Apple's OS 27 `manifest`).
    /// - Throws: A network error, or ``AssetPackClientError`` with code `.badManifest`.
    public var manifest: AssetPackManifest {
        get async throws { try await manifest(of: try await serverPacks()) }
    }

    /// The manifest of these packs, resolved for this manager's preferred and primary languages (the
    /// remembered language is read from the app group: a short call).
    nonisolated func manifest(of packs: [String: AssetPack]) async throws -> AssetPackManifest {
        let reader = self.reader
        let (preferred, primary) = try await BlockingIO.shortCall {
            (reader.preferredLanguages, reader.primaryLanguage)
        }
        return AssetPackManifest(assetPacks: Set(packs.values), preferredLanguages: preferred, primaryLanguage: primary)
    }

    /// The languages of the installed localized packs, sorted (offline).
    public nonisolated var locallyAvailableLanguages: [String] { reader.locallyAvailableLanguages }

    /// Sets the app's language (Apple's `resolvedLanguage` setter): later reads, syncs and
    /// ``reconcilePreferredLanguages()`` resolve for it, and the app group keeps it at the next change there;
    /// nothing is downloaded or removed until then.
    /// - Throws: ``AssetPackClientError`` with code `.invalidLanguage` for a tag that is not BCP-47.
    public nonisolated func setResolvedLanguage(_ language: String) throws {
        do {
            reader.language = try LanguageTag(parsing: language)
        } catch {
            throw AssetPackClientError.invalidLanguage(language, error)
        }
    }

    /// Makes the installed localized packs follow the resolved language (Apple's
    /// `reconcilePreferredLanguages`): downloads the essential and prefetch localized packs of that language
    /// that are missing, waits for them, then removes the localized packs of other languages that came for a
    /// language; one the app ensured by hand stays (Apple: it "won't remove any localized asset packs that
    /// you've downloaded manually"). An on-demand localized pack is downloaded when the app ensures it.
    /// - Returns: What was downloaded and removed, and the languages local afterwards.
    /// - Throws: ``LocalAvailabilityError`` when a download failed: nothing is removed then, so the app keeps
    ///   the language it had; a network error when the manifest cannot be fetched.
    /// - Parameter includingOnDemand: Download the missing on-demand localized packs of that language too, as
    ///   Apple's does ("downloads any missing localized asset packs"; `BackgroundAssets` passes `true`); by
    ///   default, `ba-sync reconcile` leaves them to `ensure`.
    @discardableResult
    public func reconcilePreferredLanguages(includingOnDemand: Bool = false) async throws -> LanguageReconciliation {
        try await withExclusiveControl {
            let manifest = try await self.manifest(of: try await self.serverPacks())
            let reader = self.reader
            let installed = try await BlockingIO.shortCall { reader.installedPacks }
            let local = Set(installed.map(\.id))
            let missing = manifest.localizedAssetPacks.filter { pack in
                if local.contains(pack.id) { return false }
                if case .onDemand = pack.downloadPolicy { return includingOnDemand }
                return true
            }
            var result = LanguageReconciliation()
            do {
                try await self.ensureAll(missing) { try await self.ensure($0, latest: false) }
            } catch let error as LocalAvailabilityError {
                try await self.markInstalledForLanguage(error.successes.map(\.id))
                throw error
            }
            try await self.markInstalledForLanguage(missing.map(\.id))
            result.downloaded = missing.map(\.id).sorted()
            let keep = manifest.resolvedLanguage?.maximized
            for pack in installed where pack.installedForLanguage == true {
                guard let tag = pack.language.flatMap({ try? LanguageTag(parsing: $0) }), tag.maximized != keep
                else { continue }
                try await self.remove(assetPackWithID: pack.id)
                result.removed.append(pack.id)
            }
            result.locallyAvailableLanguages = self.reader.locallyAvailableLanguages
            return result
        }
    }

    /// Records that these packs, if installed and localized, came for the app's language (so a language switch
    /// may remove them).
    func markInstalledForLanguage(_ ids: some Sequence<String>) async throws {
        let ids = Set(ids)
        guard !ids.isEmpty else { return }
        let store = self.store
        try await BlockingIO.shortCall {
            try store.update { state in
                for id in ids where state.installed[id]?.language != nil {
                    state.installed[id]?.installedForLanguage = true
                }
            }
        }
    }

    /// Keeps the language the app set in the app group, as a device keeps an app's language, once the app
    /// group has a state (nothing is created for it).
    func rememberLanguage() async throws {
        let store = self.store
        if reader.followsSystemLanguage {
            try await BlockingIO.shortCall {
                guard FileManager.default.fileExists(atPath: store.stateFilePath.string),
                    try store.loadState().language != nil
                else { return }
                try store.update { $0.language = nil }
            }
            return
        }
        guard let language = reader.language?.description else { return }
        try await BlockingIO.shortCall {
            guard FileManager.default.fileExists(atPath: store.stateFilePath.string),
                try store.loadState().language != language
            else { return }
            try store.update { $0.language = language }
        }
    }
}
