import Foundation
import Synchronization

extension AssetPackManager {
    /// A change in a download's life, as Apple's `AssetPackManager.DownloadStatusUpdate`.
    public enum DownloadStatusUpdate: Sendable {
        /// The download began, or resumed.
        case began(AssetPack)
        /// The download paused (a cut connection about to be resumed).
        case paused(AssetPack)
        /// Bytes arrived.
        case downloading(AssetPack, DownloadProgress)
        /// The pack is installed and available locally.
        case finished(AssetPack)
        /// The download or install failed; what was installed before stays.
        case failed(AssetPack, AssetPackClientError)

        /// The pack concerned.
        public var assetPack: AssetPack {
            switch self {
            case .began(let pack), .paused(let pack), .downloading(let pack, _), .finished(let pack),
                .failed(let pack, _):
                pack
            }
        }
    }
}

/// Progress of one download, in bytes.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes received so far (resumed bytes included).
    public var completed: Int64
    /// The archive's size.
    public var total: Int64
}

/// Hands every download's status updates to the streams that subscribed to them (all packs, or one).
final class StatusBroadcaster: Sendable {
    private let subscribers = Mutex<
        [UUID: (id: String?, continuation: AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation)]
    >(
        [:]
    )

    /// A stream of the updates of pack `id` (every pack when `nil`) from now on; it ends when the consumer
    /// stops iterating. The newest 1024 updates are kept for a slow consumer.
    func subscribe(_ id: String?) -> AsyncStream<AssetPackManager.DownloadStatusUpdate> {
        let (stream, continuation) = AsyncStream<AssetPackManager.DownloadStatusUpdate>.makeStream(
            bufferingPolicy: .bufferingNewest(1024)
        )
        let key = UUID()
        subscribers.withLock { $0[key] = (id, continuation) }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }

    /// Sends `update` to every stream that wants it.
    func publish(_ update: AssetPackManager.DownloadStatusUpdate) {
        let id = update.assetPack.id
        for (filter, continuation) in subscribers.withLock({ Array($0.values) }) where filter == nil || filter == id {
            continuation.yield(update)
        }
    }

    /// Ends every stream (the manager is done): consumers see the end after the updates already sent.
    func finish() {
        for (_, continuation) in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
