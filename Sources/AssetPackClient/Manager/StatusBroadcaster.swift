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

extension AssetPackManager {
    /// What a tool shows while the manager works: Apple's status updates, and what Apple's API does not
    /// report.
    public enum Event: Sendable {
        /// A status update, as ``AssetPackManager/statusUpdates`` delivers it.
        case status(DownloadStatusUpdate)
        /// An attempt failed and another follows.
        case retrying(AssetPack, RetryNotice)
        /// A download goes on from this byte (after a cut connection, or from a partial file of an earlier run).
        case resuming(AssetPack, from: Int64)
        /// Another process holds the app group (its PID, when known); this one waits for it.
        case waitingForLock(holder: Int32?)
        /// An update downloads a delta archive instead of the whole pack.
        case delta(AssetPack, DeltaNotice)
        /// The delta failed (why, in a few words); the whole pack is downloaded instead, once.
        case deltaFailed(AssetPack, reason: String)
        /// Installed from an Apple Archive whose files do not all carry their SHA-256 (`SH2`): how many do, of
        /// how many, and whether the archive's own digest was checked (said once, at install; `status` keeps it).
        case unverifiedFiles(AssetPack, carried: Int, of: Int, archiveDigestChecked: Bool)
    }
}

/// An update through a delta archive: from which version, and how much less it downloads.
public struct DeltaNotice: Sendable, Hashable {
    /// The installed version the delta starts from.
    public var fromVersion: Int
    /// The files it carries, when the manifest says.
    public var fileCount: Int?
    /// The delta's size.
    public var downloadSize: Int64
    /// The whole pack's size.
    public var fullSize: Int64

    init(fromVersion: Int, delta: AssetPack.Delta, fullSize: Int64) {
        self.fromVersion = fromVersion
        self.fileCount = delta.fileCount
        self.downloadSize = delta.downloadSize
        self.fullSize = fullSize
    }
}

/// Why a download is tried again, and when.
public struct RetryNotice: Sendable, Hashable {
    /// What went wrong, in a few words: `status 503`, `stalled for 30 s at byte 1200`, `digest mismatch`.
    public var reason: String
    /// The attempt about to be made, from 2.
    public var attempt: Int
    /// The most attempts the policy makes for this kind of failure.
    public var of: Int
    /// The wait before it (zero when the download starts over at once).
    public var delay: Duration
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
    >([:])
    private let eventSubscribers = Mutex<[UUID: AsyncStream<AssetPackManager.Event>.Continuation]>([:])

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

    /// A stream of every event from now on (unbounded: a tool's printer keeps up, and must see them all).
    func subscribeToEvents() -> AsyncStream<AssetPackManager.Event> {
        let (stream, continuation) = AsyncStream<AssetPackManager.Event>.makeStream()
        let key = UUID()
        eventSubscribers.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.eventSubscribers.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }

    /// Sends `update` to every stream that wants it.
    func publish(_ update: AssetPackManager.DownloadStatusUpdate) {
        let id = update.assetPack.id
        for (filter, continuation) in subscribers.withLock({ Array($0.values) }) where filter == nil || filter == id {
            continuation.yield(update)
        }
        publish(.status(update))
    }

    /// Sends `event` to every event stream.
    func publish(_ event: AssetPackManager.Event) {
        for continuation in eventSubscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
    }

    /// Ends every stream (the manager is done): consumers see the end after the updates already sent.
    func finish() {
        for (_, continuation) in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
        for continuation in eventSubscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
