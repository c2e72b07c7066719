package import AssetPackClient
internal import AssetPackFormat
public import Foundation

/// An asset pack as the server describes it, with Apple's declaration
/// (developer.apple.com/documentation/backgroundassets/assetpack): `id`, `version`, `downloadSize: Int`,
/// `userInfo: Data?` and (OS 27) `language: Locale.Language?`.
///
/// "Can be invalidated when the asset pack that it represents is updated on the server": a value from an
/// earlier listing still names the pack, and `ensureLocalAvailability` installs what the server publishes now.
public struct AssetPack: Hashable, Identifiable, Sendable {
    /// The pack's identifier, as the packaging manifest's `assetPackID` gives it.
    public let id: String
    /// The version the server publishes.
    public let version: Int
    /// The size of the download file containing the asset pack, in bytes.
    public let downloadSize: Int
    /// The packaging manifest's `userInfo`, JSON-encoded (keys sorted); `nil` when it had none.
    public let userInfo: Data?
    /// The language of a localized pack; `nil` for a pack that is not localized (OS 27).
    public let language: Locale.Language?
    /// The engine's description, with what our manifest adds (digest, URL, policy, deltas).
    package let engine: AssetPackClient.AssetPack

    package init(_ engine: AssetPackClient.AssetPack) {
        self.engine = engine
        self.id = engine.id
        self.version = engine.version
        self.downloadSize = Int(clamping: engine.downloadSize)
        self.userInfo = engine.userInfo.flatMap { value in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try? encoder.encode(value)
        }
        self.language = engine.language.map(Locale.Language.init(bcp47:))
    }

    /// The state of an asset pack (Apple's `AssetPack.Status`, an option set with the SDK's raw values).
    public struct Status: OptionSet, Hashable, Sendable {
        public let rawValue: Int

        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The asset pack is available to download.
        public static let downloadAvailable = Status(.downloadAvailable)
        /// An update is available to download.
        public static let updateAvailable = Status(.updateAvailable)
        /// The downloaded asset pack is up to date.
        public static let upToDate = Status(.upToDate)
        /// The downloaded asset pack is out of date (an update may not be downloadable on this network).
        public static let outOfDate = Status(.outOfDate)
        /// The asset pack is no longer available: it can't be updated, or downloaded again once removed.
        public static let obsolete = Status(.obsolete)
        /// The asset pack is downloading.
        public static let downloading = Status(.downloading)
        /// The asset pack is downloaded.
        public static let downloaded = Status(.downloaded)

        /// The engine's status, whose bits are Apple's (each constant above is taken from it, so the two never
        /// disagree).
        package init(_ engine: AssetPackClient.AssetPack.Status) { self.init(rawValue: Int(engine.rawValue)) }
    }
}

extension AssetPack: CustomStringConvertible {
    public var description: String {
        "AssetPack(id: \(id), version: \(version), downloadSize: \(downloadSize)"
            + (language.map { ", language: \($0.bcp47)" } ?? "") + ")"
    }
}

extension AssetPack: Encodable, DecodableWithConfiguration {
    private enum CodingKeys: String, CodingKey {
        case id, version, downloadSize, userInfo, language
    }

    /// Decodes an entry of a download manifest (the keys `ba-package download-manifest create` writes:
    /// `id`, `url`, `version`, `downloadSize`, `downloadPolicy`, and ours), its URL resolved against the
    /// manifest's.
    /// - Throws: `DecodingError` for a malformed entry, or an error naming a URL that cannot be fetched.
    public init(from decoder: any Decoder, configuration: AssetPackManifest.DecodingConfiguration) throws {
        let entry = try DownloadManifest.Entry(from: decoder)
        self.init(try AssetPackClient.AssetPack(entry, manifestURL: configuration.manifestURL))
    }

    /// Encodes Apple's fields: `id`, `version`, `downloadSize`, `userInfo` (the JSON object itself) and
    /// `language` (a BCP-47 tag), the keys of a download manifest's entry.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(version, forKey: .version)
        try container.encode(downloadSize, forKey: .downloadSize)
        try container.encodeIfPresent(engine.userInfo, forKey: .userInfo)
        try container.encodeIfPresent(engine.language, forKey: .language)
    }
}

extension Locale.Language {
    /// The language of a BCP-47 tag the engine checked (`fr`, `pt-BR`, `zh-Hant-TW`).
    init(bcp47 tag: String) { self.init(identifier: tag) }

    /// The BCP-47 tag of this language as written: language, then the script and region it was given with
    /// (not the likely ones `maximalIdentifier` adds).
    var bcp47: String {
        [languageCode?.identifier, script?.identifier, region?.identifier].compactMap { $0 }.joined(separator: "-")
    }
}
