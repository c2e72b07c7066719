import AssetPackFormat
import Foundation
import SystemPackage

/// The errors Apple's `AssetPackManager` throws, with Apple's name and cases, so that an app's
/// `catch ManagedBackgroundAssetsError.fileNotFound(let path)` compiles and catches here as on a device.
///
/// The manager's methods with Apple's names throw these for a pack or a file that is not there, and
/// ``AssetPackClientError`` for everything else (a download, an install, the network); the tool-facing
/// methods (``AssetPackReader``, ``AssetPackManager/ensureLocalAvailability(ofAssetPacksWithIDs:requireLatestVersions:)``)
/// throw ``AssetPackClientError`` throughout, whose message says more (the server, the platform, the fix).
public enum ManagedBackgroundAssetsError: LocalizedError, Sendable, Hashable, CustomStringConvertible {
    /// No asset pack with this ID: not listed for this platform, or not installed where one must be.
    case assetPackNotFound(withID: String)
    /// No file at this path in the merged namespace (or in the pack named).
    case fileNotFound(at: FilePath)

    public var description: String {
        switch self {
        case .assetPackNotFound(let id): "no asset pack \"\(AssetPackID.printable(id))\""
        case .fileNotFound(let path): "no file at \(path) in the installed asset packs"
        }
    }

    /// The description, as Apple's `LocalizedError` conformance gives one to `localizedDescription`.
    public var errorDescription: String? { description }
}

extension AssetPackClientError {
    /// This error in Apple's shape, when it is one of the two Apple names: `assetPackNotFound` with the pack's
    /// ID, `fileNotFound` with the path.
    public var managed: ManagedBackgroundAssetsError? {
        switch code {
        case .assetPackNotFound: assetPackID.map { .assetPackNotFound(withID: $0) }
        case .fileNotFound: path.map { .fileNotFound(at: $0) }
        default: nil
        }
    }

    /// Runs `body`, throwing an error that has Apple's shape (see ``managed``) in that shape.
    static func inAppleShape<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AssetPackClientError {
            throw error.managed ?? error
        }
    }
}
