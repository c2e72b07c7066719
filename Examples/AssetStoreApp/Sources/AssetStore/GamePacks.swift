import BackgroundAssets

/// Which packs the downloader extension lets the system download on install and update.
public enum GamePacks {
    /// High-resolution textures wait until the player asks for them, even where a policy would prefetch them.
    public static func shouldDownload(_ assetPack: AssetPack) -> Bool {
        !assetPack.id.hasPrefix("HighRes")
    }
}

/// The downloader extension's logic, shared with the extension target.
public struct GameDownloaderRules: ManagedDownloaderExtension {
    public init() {}

    public func shouldDownload(_ assetPack: AssetPack) -> Bool { GamePacks.shouldDownload(assetPack) }
}
