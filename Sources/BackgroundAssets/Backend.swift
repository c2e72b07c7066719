package import AssetPackClient
internal import AsyncHTTPClient
internal import Foundation
internal import Synchronization
internal import SystemPackage

/// What `AssetPackManager.shared` works with: the engine (the client's `AssetPackManager`), its HTTP client,
/// and the status updates in Apple's shape, each download's with one Foundation `Progress` that every
/// subscriber sees.
package final class Backend: Sendable {
    /// The engine.
    package let engine: AssetPackClient.AssetPackManager
    /// What the backend was made from.
    package let configuration: ManagerConfiguration
    private let client: HTTPClient
    private let updates = UpdateFanOut()
    private let pump: Task<Void, Never>
    /// The tasks running `ensureLocalAvailability` calls, by pack ID, so that cancelling a download's
    /// `Progress` cancels them.
    private let waiting = Mutex<[String: [UUID: Task<Void, any Error>]]>([:])
    /// The OS behaviours played (`BackgroundAssetsTesting`), and how many downloads were cancelled so far.
    private let behaviours = Mutex<(played: Set<KnownOSBehaviour>, cancels: Int)>(([], 0))

    /// The OS behaviours played, which an app must survive on a device (none by default).
    package var knownBehaviours: Set<KnownOSBehaviour> {
        get { behaviours.withLock { $0.played } }
        set { behaviours.withLock { $0.played = newValue } }
    }

    /// Opens the app group with `configuration`.
    /// - Throws: The engine's errors: a manifest URL it will not fetch, an app group that is a file, a
    ///   language that is not BCP-47.
    package init(_ configuration: ManagerConfiguration) throws {
        let client = AssetPackClient.AssetPackManager.makeHTTPClient(trusting: configuration.caCertificate)
        do {
            // A device's app-group container exists from the app's install on, so that what the system caches
            // (the last manifest, for `assetPack(withID:)`) has a place before the first pack is installed.
            var isFolder: ObjCBool = false
            let appGroup = configuration.engine.appGroup.string
            if !FileManager.default.fileExists(atPath: appGroup, isDirectory: &isFolder) {
                try FileManager.default.createDirectory(atPath: appGroup, withIntermediateDirectories: true)
            }
            engine = try AssetPackClient.AssetPackManager(configuration: configuration.engine, client: client)
        } catch {
            try? client.syncShutdown()
            throw error
        }
        self.client = client
        self.configuration = configuration
        let source = engine.statusUpdates  // subscribed before any work, so that no update is missed
        let updates = self.updates
        pump = Task { [updates] in
            var progress: [String: Progress] = [:]
            for await update in source { updates.publish(Self.translate(update, progress: &progress)) }
            updates.finish()
        }
        updates.onCancel = { [weak self] id in self?.cancelWaiting(id) }
    }

    /// Ends the status updates and closes the HTTP client (a test's backend, at the end of the test).
    package func shutdown() async {
        engine.finishStatusUpdates()
        await pump.value
        try? await client.shutdown()
    }

    /// Every pack's updates (`id` nil), or one pack's, which end after its `finished` or `failed`.
    package func subscribe(_ id: String?) -> AsyncStream<AssetPackManager.DownloadStatusUpdate> {
        updates.subscribe(id)
    }

    /// Runs `body` (an `ensureLocalAvailability`) so that cancelling the `Progress` of a download of one of
    /// `ids` cancels it: it then throws `CancellationError`.
    package func cancellable(for ids: [String], _ body: @escaping @Sendable () async throws -> Void) async throws {
        let task = Task { try await body() }
        let key = UUID()
        waiting.withLock { table in for id in ids { table[id, default: [:]][key] = task } }
        defer { waiting.withLock { table in for id in ids { table[id]?[key] = nil } } }
        do {
            try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch {
            // Apple: a download's sequence ends with `failed`; the engine reports a cancel as no failure.
            if task.isCancelled { updates.cancelled(ids) }
            throw error
        }
    }

    private func cancelWaiting(_ id: String) {
        let ignored = behaviours.withLock { state in
            defer { state.cancels += 1 }
            return state.played.contains(.laterCancelsIgnored) && state.cancels > 0
        }
        if ignored { return }  // the download goes on to the end, as on iOS 26.0–26.3
        for task in waiting.withLock({ Array(($0[id] ?? [:]).values) }) { task.cancel() }
    }

    /// An engine update in Apple's shape: `downloading` carries the download's `Progress` (made at `began`,
    /// kept across a pause, completed at `finished`), `failed` Apple's error where there is one.
    private static func translate(
        _ update: AssetPackClient.AssetPackManager.DownloadStatusUpdate,
        progress: inout [String: Progress]
    ) -> AssetPackManager.DownloadStatusUpdate {
        let pack = AssetPack(update.assetPack)
        func current(total: Int64) -> Progress {
            // A download cancelled through its Progress starts again with a new one.
            if let existing = progress[pack.id], !existing.isCancelled { return existing }
            let made = Progress(totalUnitCount: max(total, 1))
            progress[pack.id] = made
            return made
        }
        switch update {
        case .began:
            _ = current(total: Int64(pack.downloadSize))
            return .began(pack)
        case .paused:
            return .paused(pack)
        case .downloading(_, let bytes):
            let made = current(total: bytes.total)
            made.totalUnitCount = max(bytes.total, 1)
            made.completedUnitCount = min(bytes.completed, made.totalUnitCount)
            return .downloading(pack, made)
        case .finished:
            if let done = progress.removeValue(forKey: pack.id) { done.completedUnitCount = done.totalUnitCount }
            return .finished(pack)
        case .failed(_, let error):
            progress[pack.id] = nil
            return .failed(pack, FaceError.translate(error))
        }
    }
}

/// Hands Apple-shaped updates to the sequences that asked for them, and gives each new download's
/// `Progress` a cancellation handler.
private final class UpdateFanOut: Sendable {
    private typealias Continuation = AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation
    private let subscribers = Mutex<[UUID: (id: String?, continuation: Continuation)]>([:])
    private let cancelHandler = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// The downloads begun and not yet finished or failed, by pack ID.
    private let inFlight = Mutex<[String: AssetPack]>([:])

    /// Called with a pack's ID when its download's `Progress` is cancelled.
    var onCancel: (@Sendable (String) -> Void)? {
        get { cancelHandler.withLock { $0 } }
        set { cancelHandler.withLock { $0 = newValue } }
    }

    func subscribe(_ id: String?) -> AsyncStream<AssetPackManager.DownloadStatusUpdate> {
        let (stream, continuation) = AsyncStream<AssetPackManager.DownloadStatusUpdate>.makeStream(
            bufferingPolicy: .bufferingNewest(1024)
        )
        let key = UUID()
        subscribers.withLock { $0[key] = (id, continuation) }
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: key) } }
        return stream
    }

    /// Ends the downloads of `ids` still in flight with `failed(_, CancellationError())`.
    func cancelled(_ ids: [String]) {
        let packs = inFlight.withLock { table in ids.compactMap { table.removeValue(forKey: $0) } }
        for pack in packs { publish(.failed(pack, CancellationError())) }
    }

    func publish(_ update: AssetPackManager.DownloadStatusUpdate) {
        let id = update.assetPack.id
        switch update {
        case .began(let pack), .downloading(let pack, _), .paused(let pack):
            inFlight.withLock { $0[id] = pack }
        case .finished, .failed:
            inFlight.withLock { $0[id] = nil }
        }
        if case .downloading(_, let progress) = update, progress.cancellationHandler == nil {
            let handler = onCancel
            progress.cancellationHandler = { handler?(id) }
        }
        let ends: Bool
        switch update {
        case .finished, .failed: ends = true
        default: ends = false
        }
        let targets = subscribers.withLock { table in
            table.filter { $0.value.id == nil || $0.value.id == id }
        }
        for (key, target) in targets {
            target.continuation.yield(update)
            // One pack's sequence ends with its download: after `finished` or `failed`.
            if ends, target.id != nil {
                target.continuation.finish()
                _ = subscribers.withLock { $0.removeValue(forKey: key) }
            }
        }
    }

    func finish() {
        for (_, target) in subscribers.withLock({ Array($0) }) { target.continuation.finish() }
    }
}

/// A behaviour of Apple's OS that an app must survive, played on purpose (`BackgroundAssetsTesting`), each
/// with its source.
package enum KnownOSBehaviour: String, Sendable, Hashable, CaseIterable {
    /// iOS 26.0–26.3: after a first download was cancelled through its `Progress`, cancelling another in the
    /// same process does nothing, and that download runs to the end (Apple Developer Forums thread 814877,
    /// "Second and subsequent download cancellations fail": the system logs `BAErrorDomain` 113).
    case laterCancelsIgnored
}
