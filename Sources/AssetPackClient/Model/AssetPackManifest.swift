import AssetPackFormat

/// What the server publishes, as the manager sees it (Apple's OS 27 `AssetPackManifest`, which replaces
/// `allAssetPacks` and `assetPack(withID:)`): the packs for the manager's platform, localized or not, and the
/// language its localized packs resolve to.
public struct AssetPackManifest: Sendable, Hashable {
    /// Every pack, localized or not.
    public let assetPacks: Set<AssetPack>
    /// The app's primary language, taken when no preferred language matches a localized pack (Apple's
    /// `primaryLanguage`, the App Store Connect primary language).
    public let primaryLanguage: LanguageTag
    /// The preferred languages the resolved language is chosen for, most preferred first.
    public let preferredLanguages: [LanguageTag]
    /// The language of the localized packs that best matches the preferred languages, else the primary
    /// language (Apple's `resolvedLanguage`); `nil` when no localized pack has either.
    public let resolvedLanguage: LanguageTag?

    /// A manifest of `assetPacks`, resolved for `preferredLanguages` with `primaryLanguage` as the fallback.
    public init(
        assetPacks: Set<AssetPack>,
        preferredLanguages: [LanguageTag] = [LanguageTag.preferred()],
        primaryLanguage: LanguageTag = LanguageTag.english
    ) {
        self.assetPacks = assetPacks
        self.primaryLanguage = primaryLanguage
        self.preferredLanguages = preferredLanguages
        self.resolvedLanguage = LanguageTag.bestMatch(
            preferred: preferredLanguages,
            available: Self.languages(of: assetPacks),
            primary: primaryLanguage
        )
    }

    /// The pack with this ID, if the server lists it.
    public func assetPack(withID id: String) -> AssetPack? { assetPacks.first { $0.id == id } }

    /// The localized packs of the resolved language (Apple: "the subset of asset packs in this manifest that
    /// best match the current preferred languages").
    public var localizedAssetPacks: Set<AssetPack> {
        guard let resolvedLanguage else { return [] }
        return assetPacks.filter { $0.language.flatMap { try? LanguageTag(parsing: $0) } == resolvedLanguage }
    }

    /// The localized packs that best match `language`, whose own language may be another region of it
    /// (Apple: they "may not exactly match the specified language"): `en` and `en-CA` take `en-US` packs when
    /// those are the only English ones. Empty when no pack is in that language and script.
    public func localizedAssetPacks(for language: LanguageTag) -> Set<AssetPack> {
        guard let match = LanguageTag.bestMatch(for: language, in: Self.languages(of: assetPacks)) else { return [] }
        return assetPacks.filter { $0.language.flatMap { try? LanguageTag(parsing: $0) } == match }
    }

    /// Whether a device in this manifest's resolved language uses `pack`: an unlocalized pack, or a localized
    /// one of the resolved language.
    public func isForResolvedLanguage(_ pack: AssetPack) -> Bool {
        guard let language = pack.language else { return true }
        return resolvedLanguage != nil && (try? LanguageTag(parsing: language)) == resolvedLanguage
    }

    /// The languages of the localized packs, sorted.
    public var availableLanguages: [String] { Set(assetPacks.compactMap(\.language)).sorted() }

    private static func languages(of packs: Set<AssetPack>) -> [LanguageTag] {
        Set(packs.compactMap { $0.language.flatMap { try? LanguageTag(parsing: $0) } }).sorted {
            $0.description < $1.description
        }
    }
}
