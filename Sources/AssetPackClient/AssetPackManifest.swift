import AssetPackFormat

/// What the server publishes, as the manager sees it (Apple's OS 27 `AssetPackManifest`, which replaces
/// `allAssetPacks` and `assetPack(withID:)`): the packs for the manager's platform, localized or not.
public struct AssetPackManifest: Sendable, Hashable {
    /// Every pack, localized or not.
    public let assetPacks: Set<AssetPack>

    public init(assetPacks: Set<AssetPack>) { self.assetPacks = assetPacks }

    /// The pack with this ID, if the server lists it.
    public func assetPack(withID id: String) -> AssetPack? { assetPacks.first { $0.id == id } }

    /// The packs that belong to one language.
    public var localizedAssetPacks: Set<AssetPack> { assetPacks.filter { $0.language != nil } }

    /// The localized packs for `language` (`en` matches `en-US`, not `en-CA`).
    public func localizedAssetPacks(for language: LanguageTag) -> Set<AssetPack> {
        localizedAssetPacks.filter { $0.isFor(language) }
    }

    /// The languages of the localized packs, sorted.
    public var availableLanguages: [String] { Set(assetPacks.compactMap(\.language)).sorted() }
}
