/// Why the system asks for content, with Apple's declaration
/// (developer.apple.com/documentation/backgroundassets/bacontentrequest) and the SDK's raw values.
public enum BAContentRequest: Int, Sendable, Hashable {
    /// The app was just installed.
    case install = 1
    /// The app was just updated.
    case update = 2
    /// The system's periodic check.
    case periodic = 3
    /// Someone changed the app's preferred language (OS 27).
    case languageChange = 4
}

/// The app's downloader extension for self-hosted managed asset packs
/// (developer.apple.com/documentation/backgroundassets/manageddownloaderextension).
///
/// On a device the system runs it as an extension (`@main struct …: ManagedDownloaderExtension {}`) and asks
/// ``shouldDownload(_:)`` for each pack an installation event's policy applies to. Linux has no extension
/// host: `BackgroundAssetsTesting`'s `simulate(_:downloaderExtension:)` plays the event and asks the app's
/// extension the same question. `main()` exists so that an extension target's `@main` compiles; it does
/// nothing here.
public protocol ManagedDownloaderExtension {
    init()

    /// Whether the system downloads this pack, which an essential or prefetch policy applies to for the
    /// current installation event; by default every such pack is downloaded.
    func shouldDownload(_ assetPack: AssetPack) -> Bool
}

extension ManagedDownloaderExtension {
    public func shouldDownload(_ assetPack: AssetPack) -> Bool { true }

    /// An extension's entry point: the system runs extensions, so on Linux it returns at once.
    public static func main() {}
}

/// How `localSize(ofAssetPackWithID:calculationMethod:)` counts, with Apple's declaration
/// (developer.apple.com/documentation/backgroundassets/sizecalculationmethod, 27.2).
public enum SizeCalculationMethod: Int, Sendable, Hashable, CustomStringConvertible {
    /// The bytes in the files.
    case logical = 0
    /// The bytes the file system allocated for them.
    case allocated = 1

    public var description: String {
        switch self {
        case .logical: "logical"
        case .allocated: "allocated"
        }
    }
}
