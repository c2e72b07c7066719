internal import AssetPackClient
internal import AssetPackFormat
public import Foundation
public import System

/// The errors Apple's `AssetPackManager` throws for a pack or a file that is not there
/// (developer.apple.com/documentation/backgroundassets/managedbackgroundassetserror), so that an app's
/// `catch ManagedBackgroundAssetsError.fileNotFound(let path)` compiles and catches here as on a device.
///
/// No network and a full disk are thrown as the system's errors (`URLError`, `CocoaError`; see
/// `FaceError.systemError`); every other failure (a server's answer, a digest) as the engine's error, whose
/// `description` names the pack and the fix; an app sees it as `any Error`, as on a device.
public enum ManagedBackgroundAssetsError: Error, Hashable, Sendable {
    /// No asset pack with this ID.
    case assetPackNotFound(withID: String)
    /// No file at this path in the asset packs searched.
    case fileNotFound(at: System.FilePath)
}

extension ManagedBackgroundAssetsError: LocalizedError, CustomStringConvertible {
    public var description: String {
        switch self {
        case .assetPackNotFound(let id): "no asset pack \"\(AssetPackID.printable(id))\""
        case .fileNotFound(let path): "no file at \(path) in the asset packs searched"
        }
    }

    public var errorDescription: String? { description }
}

/// The face's errors from the engine's: Apple's two cases in Apple's type, a batch failure in Apple's
/// `LocalAvailabilityError`, anything else as it is.
package enum FaceError {
    package static func translate(_ error: any Error) -> any Error {
        switch error {
        case let error as AssetPackClient.ManagedBackgroundAssetsError:
            switch error {
            case .assetPackNotFound(let id): return ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
            case .fileNotFound(let path): return ManagedBackgroundAssetsError.fileNotFound(at: System.FilePath(path))
            }
        case let error as AssetPackClientError:
            if let managed = error.managed { return translate(managed) }
            return systemError(error) ?? error
        case let error as AssetPackClient.AssetPackManager.LocalAvailabilityError:
            return AssetPackManager.LocalAvailabilityError(
                successes: Set(error.successes.map(AssetPack.init)),
                failures: Dictionary(error.failures.map { (AssetPack($0.key), translate($0.value)) }) { a, _ in a }
            )
        default:
            return error
        }
    }

    /// The system's error for what a device reports in the system's terms. Apple documents neither, so the
    /// forms are those of the frameworks Background Assets works through: no network is `URLSession`'s
    /// `URLError(.notConnectedToInternet)` (a cancelled download of it logs `NSURLErrorDomain -999`, Apple
    /// Developer Forums thread 814877), and a full disk is Foundation's `CocoaError(.fileWriteOutOfSpace)`
    /// over `POSIXError(.ENOSPC)`. The engine's message is the description in both.
    static func systemError(_ error: AssetPackClientError) -> (any Error)? {
        if let cause = error.cause as? URLError {
            return URLError(cause.code, userInfo: [NSLocalizedDescriptionKey: error.description])
        }
        guard AssetPackClientError.isDiskFull(error) else { return nil }
        return CocoaError(
            .fileWriteOutOfSpace,
            userInfo: [NSLocalizedDescriptionKey: error.description, NSUnderlyingErrorKey: POSIXError(.ENOSPC)]
        )
    }

    /// Runs `body`, throwing what it throws in the face's shape.
    package static func translating<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw translate(error) }
    }

    /// Runs `body`, throwing what it throws in the face's shape.
    package static func translating<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw translate(error) }
    }
}
