public import Foundation

extension AssetPackManager {
    /// A download's status, with Apple's declaration
    /// (developer.apple.com/documentation/backgroundassets/assetpackmanager/downloadstatusupdate).
    public enum DownloadStatusUpdate: Sendable, CustomStringConvertible {
        /// The download began, or resumed after being paused.
        case began(AssetPack)
        /// The download is in progress: one `Progress` per download, the same in each update; cancelling it
        /// cancels the download (the waiting `ensureLocalAvailability` throws `CancellationError`).
        case downloading(AssetPack, Progress)
        /// The download paused (a cut connection, about to be resumed).
        case paused(AssetPack)
        /// The download completed and the asset pack is available locally.
        case finished(AssetPack)
        /// The download failed; what was installed before stays.
        case failed(AssetPack, any Error)

        public var description: String {
            switch self {
            case .began(let pack): "began(\(pack.id))"
            case .downloading(let pack, let progress):
                "downloading(\(pack.id), \(progress.completedUnitCount) of \(progress.totalUnitCount) bytes)"
            case .paused(let pack): "paused(\(pack.id))"
            case .finished(let pack): "finished(\(pack.id))"
            case .failed(let pack, let error): "failed(\(pack.id), \(error))"
            }
        }

        /// The pack concerned.
        var assetPack: AssetPack {
            switch self {
            case .began(let pack), .downloading(let pack, _), .paused(let pack), .finished(let pack),
                .failed(let pack, _):
                pack
            }
        }
    }

    /// What `ensureLocalAvailability(of:requireLatestVersions:)` throws when some packs are not local, with
    /// Apple's declaration (developer.apple.com/documentation/backgroundassets/assetpackmanager/localavailabilityerror).
    public struct LocalAvailabilityError: Error, LocalizedError, CustomStringConvertible, Sendable {
        /// The asset packs that are available locally.
        public let successes: Set<AssetPack>
        /// The asset packs that are not, each with its error.
        public let failures: [AssetPack: any Error]

        package init(successes: Set<AssetPack>, failures: [AssetPack: any Error]) {
            self.successes = successes
            self.failures = failures
        }

        public var description: String {
            failures.sorted { $0.key.id < $1.key.id }.map { "\($0.key.id): \($0.value)" }.joined(separator: "\n")
        }

        public var errorDescription: String? { description }
    }
}
