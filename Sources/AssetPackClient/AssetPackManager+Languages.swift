import AssetPackFormat

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
    /// What the server publishes for this manager's platform (Apple's OS 27 `manifest`).
    /// - Throws: A network error, or ``AssetPackClientError`` with code `.badManifest`.
    public var manifest: AssetPackManifest {
        get async throws { AssetPackManifest(assetPacks: Set(try await serverPacks().values)) }
    }

    /// The languages of the installed localized packs, sorted (offline).
    public nonisolated var locallyAvailableLanguages: [String] { reader.locallyAvailableLanguages }

    /// Sets the resolved language (Apple's `resolvedLanguage` setter): later reads, syncs and
    /// ``reconcilePreferredLanguages()`` follow it; nothing is downloaded or removed until then.
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
    /// that are missing, waits for them, then removes the localized packs of other languages. An on-demand
    /// localized pack is downloaded when the app ensures it, as before.
    /// - Returns: What was downloaded and removed, and the languages local afterwards.
    /// - Throws: ``LocalAvailabilityError`` when a download failed: nothing is removed then, so the app keeps
    ///   the language it had; a network error when the manifest cannot be fetched.
    @discardableResult
    public func reconcilePreferredLanguages() async throws -> LanguageReconciliation {
        try await withExclusiveControl {
            let language = self.resolvedLanguage
            let packs = try await self.serverPacks()
            let installed = self.reader.installedPacks
            let local = Set(installed.map(\.id))
            let missing = packs.values.filter { pack in
                guard pack.language != nil, pack.isFor(language), !local.contains(pack.id) else { return false }
                if case .onDemand = pack.downloadPolicy { return false }
                return true
            }
            var result = LanguageReconciliation()
            try await self.ensureAll(Set(missing)) { try await self.ensure($0, latest: false) }
            result.downloaded = missing.map(\.id).sorted()
            for pack in installed {
                guard let tag = pack.language, !((try? LanguageTag(parsing: tag))?.matches(language) ?? false)
                else { continue }
                try await self.remove(assetPackWithID: pack.id)
                result.removed.append(pack.id)
            }
            result.locallyAvailableLanguages = self.reader.locallyAvailableLanguages
            return result
        }
    }
}
