import AssetStore
import BackgroundAssets

/// The app's downloader extension, as a device runs it.
@main
struct GameDownloader: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool { GamePacks.shouldDownload(assetPack) }
}
