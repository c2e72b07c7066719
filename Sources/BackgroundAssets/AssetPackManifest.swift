package import AssetPackClient
internal import AssetPackFormat
public import Foundation

/// The asset packs a server publishes, with Apple's declaration
/// (developer.apple.com/documentation/backgroundassets/assetpackmanifest): the packs, and (OS 27) the
/// languages of the localized ones and the one they resolve to.
public struct AssetPackManifest: Sendable, CustomStringConvertible, Encodable, DecodableWithConfiguration {
    /// What decoding a manifest needs besides its JSON: the app group, and the URL its relative pack URLs
    /// resolve against.
    public struct DecodingConfiguration: Sendable, CustomStringConvertible {
        /// The app group (Apple: where packs downloaded from this manifest are stored).
        public var appGroupID: String
        /// The manifest's own URL; relative pack URLs resolve against it.
        var manifestURL: URL

        public var description: String { "DecodingConfiguration(appGroupID: \(appGroupID))" }
    }

    /// Every asset pack in the manifest, localized or not.
    public let assetPacks: Set<AssetPack>
    package let engine: AssetPackClient.AssetPackManifest

    package init(_ engine: AssetPackClient.AssetPackManifest) {
        self.engine = engine
        self.assetPacks = Set(engine.assetPacks.map(AssetPack.init))
    }

    /// Reads a download manifest from a JSON file.
    /// - Throws: The file's read error, `DecodingError`, or an error naming a pack URL that cannot be fetched.
    public init(contentsOf url: URL, appGroupID: String) throws {
        let data = try Data(contentsOf: url)
        try self.init(decoding: data, configuration: DecodingConfiguration(appGroupID: appGroupID, manifestURL: url))
    }

    /// Decodes a download manifest from its JSON; relative pack URLs stay relative to `file:///`.
    /// - Throws: `DecodingError`, or an error naming a pack URL that cannot be fetched.
    public init(from data: Data, appGroupID: String) throws {
        let base = URL(fileURLWithPath: "/")
        try self.init(decoding: data, configuration: DecodingConfiguration(appGroupID: appGroupID, manifestURL: base))
    }

    public init(from decoder: any Decoder, configuration: DecodingConfiguration) throws {
        let manifest = try DownloadManifest(from: decoder)
        let packs = try manifest.assetPacks.map {
            try AssetPackClient.AssetPack($0, manifestURL: configuration.manifestURL)
        }
        self.init(Self.resolved(packs))
    }

    private init(decoding data: Data, configuration: DecodingConfiguration) throws {
        self = try JSONDecoder().decode(AssetPackManifest.self, from: data, configuration: configuration)
    }

    /// The packs as a manifest resolved for the current configuration's languages (a test's, else the
    /// environment's preferred languages with English as the primary one).
    private static func resolved(_ packs: [AssetPackClient.AssetPack]) -> AssetPackClient.AssetPackManifest {
        let preferred = Backend.override?.engine.reader.preferredLanguages ?? LanguageTag.preferredLanguages()
        let primary = Backend.override?.engine.reader.primaryLanguage ?? .english
        return AssetPackClient.AssetPackManifest(
            assetPacks: Set(packs),
            preferredLanguages: preferred,
            primaryLanguage: primary
        )
    }

    /// The asset pack with this identifier, or `nil` when the manifest does not list it (OS 27).
    public func assetPack(withID id: String) -> AssetPack? { assetPacks.first { $0.id == id } }

    /// The languages of the localized asset packs (OS 27).
    public var availableLanguages: [Locale.Language] { engine.availableLanguages.map(Locale.Language.init(bcp47:)) }

    /// The app's primary language, the fallback when no localized pack matches the preferred languages (OS 27).
    public var primaryLanguage: Locale.Language? { Locale.Language(bcp47: engine.primaryLanguage.description) }

    /// The localized asset packs that best match the current preferred languages (OS 27).
    public var localizedAssetPacks: Set<AssetPack> { Set(engine.localizedAssetPacks.map(AssetPack.init)) }

    /// The localized asset packs that best match `language`; their language may not match it exactly (OS 27).
    public func localizedAssetPacks(for language: Locale.Language) -> Set<AssetPack> {
        guard let tag = try? LanguageTag(parsing: language.bcp47) else { return [] }
        return Set(engine.localizedAssetPacks(for: tag).map(AssetPack.init))
    }

    /// The language of the localized packs that best matches the preferred languages, else the primary
    /// language; `nil` when no localized pack has either (OS 27).
    public var resolvedLanguage: Locale.Language? {
        engine.resolvedLanguage.map { Locale.Language(bcp47: $0.description) }
    }

    public var description: String {
        "AssetPackManifest(" + assetPacks.map(\.id).sorted().joined(separator: ", ") + ")"
    }

    private enum CodingKeys: String, CodingKey { case assetPacks }

    /// Encodes the packs as a download manifest's `assetPacks` (Apple's fields of each; see
    /// ``AssetPack/encode(to:)``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(assetPacks.sorted { $0.id < $1.id }, forKey: .assetPacks)
    }
}
