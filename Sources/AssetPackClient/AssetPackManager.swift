import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Flushes every file system buffer of the file system holding `fd` (Linux): one call makes a whole
/// extracted pack durable, instead of an fsync per file.
@_silgen_name("syncfs")
private func syncfs(_ fd: Int32) -> Int32

/// Mirrors asset packs from a server into an app-group directory with the meaning of Apple's
/// `AssetPackManager`: download per policy, verify, install atomically, update, remove, re-download, and
/// read through one merged namespace.
public actor AssetPackManager {
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

    /// What `ensureLocalAvailability(of: Set<AssetPack>)` reports when some packs failed.
    public struct LocalAvailabilityError: Error, Sendable, CustomStringConvertible {
        /// The packs that are local.
        public var successes: Set<AssetPack>
        /// The packs that are not, with why.
        public var failures: [AssetPack: AssetPackClientError]

        public var description: String {
            failures.sorted { $0.key.id < $1.key.id }.map { "\($0.key.id): \($0.value)" }.joined(separator: "\n")
        }
    }

    /// The server's base URL (the manifest is at `/manifest`).
    public nonisolated let server: URL
    /// The app group.
    public nonisolated let store: AppGroupStore
    private let client: HTTPClient
    private let downloader: PackDownloader
    private let retryPolicy: RetryPolicy
    private let maxConcurrentDownloads: Int
    private let resumableDownloads: Bool
    private let onLockWait: @Sendable (Int32?) -> Void
    private var lock: AppGroupLock?
    private var lockHolders = 0
    private var downloading: Set<String> = []
    private nonisolated let namespace = Mutex<Namespace?>(nil)
    /// The state file's path, made once: every read checks it.
    private nonisolated let stateFilePath: String
    private nonisolated let subscribers = Mutex<[UUID: (String?, AsyncStream<DownloadStatusUpdate>.Continuation)]>([:])

    /// Opens an app group against a server.
    /// - Parameters:
    ///   - server: The server's base URL, e.g. `http://127.0.0.1:8443`.
    ///   - appGroup: The app-group directory (created if needed).
    ///   - client: The HTTP client (give one that trusts a `ba-mock --tls-self-signed` CA for HTTPS).
    ///   - maxConcurrentDownloads: How many packs download at once.
    ///   - retryPolicy: How failed downloads are retried (resuming each time).
    ///   - timeout: The deadline of one HTTP request, body included.
    ///   - stallTimeout: How long a download may receive nothing before it is cut and resumed.
    ///   - resumableDownloads: Download each archive into a file first, so that a process killed mid-download
    ///     resumes in a later run, then install from it. By default an archive is extracted as it arrives
    ///     and never written whole (about half the disk writes); a cut connection still resumes within the
    ///     run, and a partial file left by a resumable run is resumed either way.
    ///   - onLockWait: Called with the holder's PID when another process holds the app group.
    /// - Throws: ``AssetPackClientError`` with code `.io` when the app group cannot be created.
    public init(
        server: URL,
        appGroup: FilePath,
        client: HTTPClient = .shared,
        maxConcurrentDownloads: Int = 3,
        retryPolicy: RetryPolicy = RetryPolicy(),
        timeout: TimeAmount = .minutes(30),
        stallTimeout: Duration = .seconds(30),
        resumableDownloads: Bool = false,
        onLockWait: @escaping @Sendable (Int32?) -> Void = { _ in }
    ) throws {
        self.resumableDownloads = resumableDownloads
        self.server = server
        self.store = try AppGroupStore(root: appGroup)
        self.stateFilePath = store.stateFile.string
        self.client = client
        self.downloader = PackDownloader(
            client: client,
            store: store,
            policy: retryPolicy,
            timeout: timeout,
            stallTimeout: stallTimeout
        )
        self.retryPolicy = retryPolicy
        self.maxConcurrentDownloads = max(1, maxConcurrentDownloads)
        self.onLockWait = onLockWait
    }

    /// An HTTP client suited to the manager: connection attempts give up after `connectTimeout`, and a CA
    /// file (such as `ba-mock serve --tls-self-signed` prints) can be trusted. The caller shuts it down.
    /// A read that waits longer than `readTimeout` for the next bytes fails, so a stalled download is caught
    /// and resumed.
    public static func makeHTTPClient(
        trusting caFile: String? = nil,
        connectTimeout: TimeAmount = .seconds(5),
        readTimeout: TimeAmount = .seconds(30)
    ) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .file(caFile) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout.connect = connectTimeout
        configuration.timeout.read = readTimeout
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    // MARK: Server information

    private var manifestURL: URL { server.appendingPathComponent("manifest") }

    /// Every pack the server lists, by ID; transient failures are retried as downloads are.
    func fetchManifest() async throws -> [String: AssetPack] {
        let url = manifestURL
        var failures = 0
        var body: ByteBuffer?
        while body == nil {
            do {
                body = try await fetchManifestOnce(url)
            } catch let error as AssetPackClientError {
                failures += 1
                guard case .retry(let delay) = retryPolicy.decide(error, failures: failures, mismatches: 0) else {
                    throw error
                }
                try await Task.sleep(for: delay)
            }
        }
        return try decodeManifest(body ?? ByteBuffer(), url: url)
    }

    private func fetchManifestOnce(_ url: URL) async throws -> ByteBuffer {
        do {
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(60))
            guard response.status.code == 200 else {
                var error = AssetPackClientError(
                    code: .httpStatus,
                    message:
                        "\(url) answered \(response.status.code) \(response.status.reasonPhrase). Fix: check --server"
                )
                error.httpStatus = Int(response.status.code)
                error.retryAfter = RetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
                throw error
            }
            return try await response.body.collect(upTo: 64 << 20)
        } catch let error as AssetPackClientError {
            throw error
        } catch {
            throw AssetPackClientError(
                code: .network,
                message: "cannot fetch the manifest from \(url). Fix: is the server running, and --server right?",
                cause: error
            )
        }
    }

    private func decodeManifest(_ body: ByteBuffer, url: URL) throws -> [String: AssetPack] {
        let manifest: DownloadManifest
        do {
            manifest = try DownloadManifest.decode(Data(body.readableBytesView), source: url.absoluteString)
        } catch let error as AssetPackFormatError {
            throw AssetPackClientError(code: .badManifest, message: error.message, cause: error)
        }
        var packs: [String: AssetPack] = [:]
        for entry in manifest.assetPacks { packs[entry.id] = try AssetPack(entry, manifestURL: url) }
        return packs
    }

    /// The pack with this ID, as the server describes it now.
    /// - Throws: ``AssetPackClientError`` with code `.assetPackNotFound`, or a network error.
    public func assetPack(withID id: String) async throws -> AssetPack {
        guard let pack = try await fetchManifest()[id] else {
            throw AssetPackClientError.notFound(id, server: server.absoluteString)
        }
        return pack
    }

    /// Every pack the server lists.
    public var allAssetPacks: Set<AssetPack> {
        get async throws { Set(try await fetchManifest().values) }
    }

    // MARK: Status

    /// Whether the pack is installed (offline, synchronous).
    public nonisolated func assetPackIsAvailableLocally(withID id: String) -> Bool {
        (try? currentNamespace())?.installed[id] != nil
    }

    /// The installed pack record, if any (offline).
    public nonisolated func installedPack(withID id: String) -> InstalledPack? {
        (try? currentNamespace())?.installed[id]
    }

    /// Every installed pack (offline).
    public nonisolated var installedPacks: [InstalledPack] {
        ((try? currentNamespace())?.installed.values).map { $0.sorted { $0.id < $1.id } } ?? []
    }

    /// The pack's status from what this app group knows, without the network; empty for an unknown ID.
    public func localStatus(ofAssetPackWithID id: String) -> AssetPack.Status {
        let state = (try? store.loadState()) ?? StoreState()
        var status: AssetPack.Status = []
        if downloading.contains(id) { status.insert(.downloading) }
        if state.obsolete.contains(id) { status.insert(.obsolete) }
        if let installed = state.installed[id] {
            status.insert(.downloaded)
            if let latest = state.latestKnown[id], latest != installed.version {
                status.insert(.outOfDate)
            } else if !state.obsolete.contains(id) {
                status.insert(.upToDate)
            }
        }
        return status
    }

    /// The pack's status relative to a given description of it, asking the server (Apple's
    /// `status(relativeTo:)`): `outOfDate` when the local version differs from `pack`'s, `updateAvailable`
    /// when the server still publishes `pack`'s version and it differs from the local one.
    public func status(relativeTo pack: AssetPack) async throws -> AssetPack.Status {
        status(relativeTo: pack, serverPacks: try await fetchManifest(), state: try store.loadState())
    }

    /// Every pack the server lists, or that is installed, with its status relative to what the server
    /// publishes now: one manifest fetch for all of them (where `status(relativeTo:)` fetches per pack).
    /// - Returns: Each pack (the server's description, or `nil` for an installed pack the server dropped),
    ///   its installed record, and its status; sorted by ID.
    public func statusOfAllAssetPacks() async throws -> [(
        id: String, pack: AssetPack?, installed: InstalledPack?, status: AssetPack.Status
    )] {
        let packs = try await fetchManifest()
        let state = try store.loadState()
        return Set(packs.keys).union(state.installed.keys).sorted().map { id in
            let installed = state.installed[id]
            guard let pack = packs[id] else {
                var status = localStatus(ofAssetPackWithID: id)
                status.insert(.obsolete)
                status.remove(.upToDate)
                return (id, nil, installed, status)
            }
            return (id, pack, installed, status(relativeTo: pack, serverPacks: packs, state: state))
        }
    }

    private func status(relativeTo pack: AssetPack, serverPacks packs: [String: AssetPack], state: StoreState)
        -> AssetPack.Status
    {
        let installed = state.installed[pack.id]
        var status: AssetPack.Status = []
        if downloading.contains(pack.id) { status.insert(.downloading) }
        if let installed {
            status.insert(.downloaded)
            status.insert(installed.version == pack.version ? .upToDate : .outOfDate)
        }
        guard let current = packs[pack.id] else {
            status.insert(.obsolete)
            status.remove(.upToDate)
            return status
        }
        status.insert(.downloadAvailable)
        if let installed, installed.version != current.version, current.version == pack.version {
            status.insert(.updateAvailable)
        }
        return status
    }

    // MARK: Status updates

    /// Every pack's download updates, from now on.
    public nonisolated var statusUpdates: AsyncStream<DownloadStatusUpdate> { subscribe(nil) }

    /// One pack's download updates, from now on.
    public nonisolated func statusUpdates(forAssetPackWithID id: String) -> AsyncStream<DownloadStatusUpdate> {
        subscribe(id)
    }

    private nonisolated func subscribe(_ id: String?) -> AsyncStream<DownloadStatusUpdate> {
        let (stream, continuation) = AsyncStream<DownloadStatusUpdate>.makeStream(
            bufferingPolicy: .bufferingNewest(1024)
        )
        let key = UUID()
        subscribers.withLock { $0[key] = (id, continuation) }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }

    private nonisolated func publish(_ update: DownloadStatusUpdate) {
        let id = update.assetPack.id
        for (filter, continuation) in subscribers.withLock({ Array($0.values) }) where filter == nil || filter == id {
            continuation.yield(update)
        }
    }

    // MARK: Exclusive control

    /// Runs `body` while this process holds the app group's lock (re-entrant within the process); the
    /// state is recovered from any crashed run first.
    public func withExclusiveControl<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if lockHolders == 0 {
            lock = try await AppGroupLock.acquire(store, onWait: onLockWait)
            store.recover(try store.loadState())
        }
        lockHolders += 1
        defer {
            lockHolders -= 1
            if lockHolders == 0 {
                lock?.release()
                lock = nil
            }
        }
        return try await body()
    }

    // MARK: Managing packs

    /// Makes sure a pack is installed (Apple's `ensureLocalAvailability(of:requireLatestVersion:)`).
    ///
    /// Returns at once when the pack is local (and, with `requireLatestVersion`, at the server's version).
    /// Otherwise downloads, verifies and installs it. Returning means the pack is local; throwing means it is
    /// not guaranteed to be, and what was installed before is still there.
    /// - Throws: ``AssetPackClientError``: `.obsolete` for a pack the server dropped, `.assetPackNotFound`,
    ///   network, size, digest or install errors.
    public func ensureLocalAvailability(of pack: AssetPack, requireLatestVersion: Bool = false) async throws {
        try await withExclusiveControl {
            guard requireLatestVersion else {
                try await ensure(pack, exactVersion: false)
                return
            }
            guard let current = try await fetchManifest()[pack.id] else {
                var state = try store.loadState()
                state.obsolete.insert(pack.id)
                try store.saveState(state)
                throw AssetPackClientError(
                    code: .obsolete,
                    message: "pack \(pack.id) is obsolete: \(server) no longer lists it",
                    assetPackID: pack.id
                )
            }
            try await ensure(current, exactVersion: true)
        }
    }

    /// Installs `pack` unless it is installed (at exactly its version, with `exactVersion`).
    private func ensure(_ pack: AssetPack, exactVersion: Bool) async throws {
        let state = try store.loadState()
        if let installed = state.installed[pack.id], !exactVersion || installed.version == pack.version { return }
        if state.obsolete.contains(pack.id) {
            throw AssetPackClientError(
                code: .obsolete,
                message: "pack \(pack.id) is obsolete: the server dropped it, so it cannot be downloaded again",
                assetPackID: pack.id
            )
        }
        try await downloadAndInstall(pack)
    }

    /// Makes sure several packs are installed, downloading up to the concurrency bound at once.
    /// - Throws: ``LocalAvailabilityError`` listing successes and failures when any pack failed.
    public func ensureLocalAvailability(of packs: Set<AssetPack>, requireLatestVersions: Bool = false) async throws {
        try await withExclusiveControl {
            try await ensureAll(packs) { pack in
                try await self.ensureLocalAvailability(of: pack, requireLatestVersion: requireLatestVersions)
            }
        }
    }

    /// Runs `ensure` on every pack, up to the concurrency bound at once, and collects the outcome.
    private func ensureAll(_ packs: Set<AssetPack>, _ ensure: @escaping @Sendable (AssetPack) async throws -> Void)
        async throws
    {
        var successes: Set<AssetPack> = []
        var failures: [AssetPack: AssetPackClientError] = [:]
        let ordered = packs.sorted { $0.id < $1.id }
        await withTaskGroup(of: (AssetPack, AssetPackClientError?).self) { group in
            var next = 0
            func start() {
                guard next < ordered.count else { return }
                let pack = ordered[next]
                next += 1
                group.addTask {
                    do {
                        try await ensure(pack)
                        return (pack, nil)
                    } catch let error as AssetPackClientError {
                        return (pack, error)
                    } catch {
                        return (pack, AssetPackClientError(code: .io, message: "\(error)", assetPackID: pack.id))
                    }
                }
            }
            for _ in 0..<maxConcurrentDownloads { start() }
            while let (pack, error) = await group.next() {
                if let error { failures[pack] = error } else { successes.insert(pack) }
                start()
            }
        }
        if !failures.isEmpty { throw LocalAvailabilityError(successes: successes, failures: failures) }
    }

    /// Gets the latest manifest, updates outdated installed packs and removes obsolete ones (Apple's
    /// `checkForUpdates()`); unlike Apple's, it returns when the updates are installed.
    /// - Returns: The IDs updated and the IDs removed.
    /// - Throws: The first update's error after trying them all; removals are done regardless.
    @discardableResult
    public func checkForUpdates() async throws -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        try await withExclusiveControl {
            let packs = try await fetchManifest()
            var state = try store.loadState()
            var removed: Set<String> = []
            for id in state.installed.keys where packs[id] == nil {
                try removeInstalled(id)
                removed.insert(id)
            }
            state = try store.loadState()
            for id in Set(state.installed.keys).union(state.latestKnown.keys) where packs[id] == nil {
                state.obsolete.insert(id)
            }
            for (id, pack) in packs { state.latestKnown[id] = pack.version }
            try store.saveState(state)
            let outdated = state.installed.values.compactMap { installed in
                packs[installed.id].flatMap { $0.version != installed.version ? $0 : nil }
            }
            do {
                try await ensureAll(Set(outdated)) { pack in try await self.ensure(pack, exactVersion: true) }
            } catch let error as LocalAvailabilityError {
                if let first = error.failures.values.first { throw first }
            }
            return (Set(outdated.map(\.id)), removed)
        }
    }

    /// Removes an installed pack (Apple's `remove(assetPackWithID:)`); `ensureLocalAvailability` downloads
    /// it again. Mappings and descriptors taken before keep reading the bytes they had.
    /// - Throws: ``AssetPackClientError`` with code `.assetPackNotFound` when it is not installed.
    public func remove(assetPackWithID id: String) async throws {
        try await withExclusiveControl {
            guard try store.loadState().installed[id] != nil else {
                throw AssetPackClientError(
                    code: .assetPackNotFound,
                    message: "pack \(id) is not installed in \(store.root)",
                    assetPackID: id
                )
            }
            try removeInstalled(id)
        }
    }

    private func removeInstalled(_ id: String) throws {
        var state = try store.loadState()
        guard let installed = state.installed.removeValue(forKey: id) else { return }
        try store.saveState(state)
        try? FileManager.default.removeItem(atPath: store.root.appending(installed.directory).string)
        _ = unlink(store.indexFile(for: installed).string)
        try? FileManager.default.removeItem(atPath: store.packsFolder.appending(id).string)
    }

    // MARK: Download and install

    private func downloadAndInstall(_ pack: AssetPack) async throws {
        downloading.insert(pack.id)
        defer { downloading.remove(pack.id) }
        publish(.began(pack))
        do {
            let installed: InstalledPack
            do {
                if resumableDownloads || downloader.hasPartial(of: pack) {
                    installed = try await downloadThenInstall(pack)
                } else {
                    installed = try await installWhileDownloading(pack)
                }
            } catch
                where Self.isDiskFull(error) && (error as? AssetPackClientError)?.message.hasPrefix("no space") != true
            {
                downloader.discard(pack)
                throw AssetPackClientError(
                    code: .io,
                    message:
                        "no space left on the device holding \(store.root) while installing pack \(pack.id); the "
                        + "download and the extraction were removed and what was installed is kept. Fix: free space "
                        + "and run again",
                    assetPackID: pack.id,
                    cause: error as? (any Error & Sendable)
                )
            }
            var state = try store.loadState()
            let previous = state.installed[pack.id]
            state.installed[pack.id] = installed
            state.latestKnown[pack.id] = pack.version
            state.obsolete.remove(pack.id)
            try store.saveState(state)  // the commit point: readers see the new version from here on
            if let previous, previous.directory != installed.directory {
                try? FileManager.default.removeItem(atPath: store.root.appending(previous.directory).string)
                _ = unlink(store.indexFile(for: previous).string)
            }
            publish(.finished(pack))
        } catch let error as AssetPackClientError {
            publish(.failed(pack, error))
            throw error
        } catch {
            let wrapped = AssetPackClientError(
                code: .io,
                message: "pack \(pack.id): \(error)",
                assetPackID: pack.id,
                cause: error
            )
            publish(.failed(pack, wrapped))
            throw wrapped
        }
    }

    /// Downloads the archive into a partial file (resumable by a later run), then installs from it.
    private func downloadThenInstall(_ pack: AssetPack) async throws -> InstalledPack {
        let archive = try await downloader.download(pack) { [weak self] progress in
            self?.publish(.downloading(pack, progress))
        } paused: { [weak self] in
            self?.publish(.paused(pack))
            self?.publish(.began(pack))  // Apple's "began" also means "resumed after being paused"
        }
        let store = self.store
        let installed = try await NIOThreadPool.singleton.runIfActive {
            let staging = try Self.makeStaging(pack, store: store)
            do {
                let index = try Self.extract(pack) {
                    try PackReader.extract(archive, into: staging, limit: pack.installSize)
                }
                return try Self.commit(staging, index: index, pack: pack, store: store)
            } catch {
                try? FileManager.default.removeItem(atPath: staging.string)
                throw error
            }
        }
        downloader.discard(pack)
        return installed
    }

    /// Extracts the archive as it arrives (on a thread of its own, fed by the download), and moves it into
    /// place only once the whole download's size and digest match the manifest. The archive never touches
    /// the disk; a cut connection resumes with a range into the same extraction. A mismatch starts over with
    /// a new staging folder; an extraction that fails lets the download finish, so that its digest tells a
    /// damaged transfer (fetched again) from a damaged pack (reported).
    private func installWhileDownloading(_ pack: AssetPack) async throws -> InstalledPack {
        let store = self.store
        var mismatches = 0
        while true {
            let staging = try Self.makeStaging(pack, store: store)
            let feed = ByteFeed()
            let extraction = Task {
                try await runOnThreadOfItsOwn {
                    do {
                        let index = try Self.extract(pack) {
                            try PackReader.extract(
                                streamNamed: pack.url.absoluteString,
                                into: staging,
                                limit: pack.installSize,
                                reading: feed.next
                            )
                        }
                        // libarchive may stop at the tar end marker: take what follows too, so the download is
                        // never left waiting on a full feed (its digest covers those bytes all the same).
                        while try feed.next().count > 0 {}
                        return index
                    } catch {
                        // A damaged archive: let the download finish for its digest. Anything else (a full
                        // disk): stop the download now.
                        let corrupt = (error as? AssetPackClientError)?.code == .corruptPack && !Self.isDiskFull(error)
                        feed.abandon(drain: corrupt)
                        throw error
                    }
                }
            }
            let removeStaging = { try? FileManager.default.removeItem(atPath: staging.string) }
            do {
                try await downloader.stream(pack, into: feed) { [weak self] progress in
                    self?.publish(.downloading(pack, progress))
                } paused: { [weak self] in
                    self?.publish(.paused(pack))
                    self?.publish(.began(pack))
                }
                feed.finish()
            } catch {
                feed.fail(error)
                let extracted = await extraction.result
                removeStaging()
                if error is ExtractionStopped, case .failure(let cause) = extracted { throw cause }
                if let error = error as? AssetPackClientError,
                    error.code == .sizeMismatch || error.code == .digestMismatch
                {
                    mismatches += 1
                    if retryPolicy.decide(error, failures: 0, mismatches: mismatches) == .refetch {
                        publish(.paused(pack))
                        publish(.began(pack))
                        continue
                    }
                    var final = error
                    final.message += " (after \(mismatches) attempts)"
                    throw final
                }
                throw error
            }
            do {
                let index = try await extraction.value
                return try await NIOThreadPool.singleton.runIfActive {
                    try Self.commit(staging, index: index, pack: pack, store: store)
                }
            } catch {
                removeStaging()
                throw error
            }
        }
    }

    /// Whether `error` comes from a full disk, however deep in the chain of causes.
    static func isDiskFull(_ error: any Error) -> Bool {
        if let errno = error as? Errno { return errno == .noSpace }
        if let status = error as? LibArchiveStatus { return status.errno == ENOSPC }
        if let error = error as? AssetPackFormatError { return error.cause.map(isDiskFull) ?? false }
        if let error = error as? AssetPackClientError { return error.cause.map(isDiskFull) ?? false }
        return false
    }

    /// A new, empty staging folder inside the app group (so the final rename stays on one file system).
    private static func makeStaging(_ pack: AssetPack, store: AppGroupStore) throws -> FilePath {
        let staging = store.stagingFolder.appending("\(pack.id)-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(atPath: staging.string, withIntermediateDirectories: true)
        } catch {
            throw AssetPackClientError.io("create", staging, error)
        }
        return staging
    }

    /// Runs an extraction and says what went wrong in the client's terms; checks the index names the pack.
    private static func extract(_ pack: AssetPack, _ body: () throws -> PackIndex) throws -> PackIndex {
        let index: PackIndex
        do {
            index = try body()
        } catch let error as AssetPackFormatError {
            throw AssetPackClientError(
                code: error.code == .io ? .io : .corruptPack,
                message: "cannot install pack \(pack.id) from \(pack.url): \(error.message); nothing was installed",
                assetPackID: pack.id,
                cause: error
            )
        }
        guard index.assetPackID == pack.id else {
            throw AssetPackClientError(
                code: .corruptPack,
                message:
                    "the archive at \(pack.url) holds pack \(index.assetPackID), not \(pack.id); nothing was installed",
                assetPackID: pack.id
            )
        }
        return index
    }

    /// Makes an extracted staging folder durable and moves it into place beside any installed version.
    /// Nothing outside the staging folder changes until the final rename; the caller removes the staging
    /// folder if this throws.
    private static func commit(_ staging: FilePath, index: PackIndex, pack: AssetPack, store: AppGroupStore) throws
        -> InstalledPack
    {
        let relative = "AssetPacks/\(pack.id)/\(pack.version)-\(pack.sha256.prefix(12))"
        let destination = store.root.appending(relative)
        let folder = destination.removingLastComponent()
        do {
            try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try AtomicFile.write(try encoder.encode(index), to: store.root.appending(relative + ".index.json"))
        } catch {
            throw AssetPackClientError.io("write the index of", destination, error)
        }
        if let fd = try? FileDescriptor.open(staging, .readOnly) {
            _ = syncfs(fd.rawValue)
            try? fd.close()
        }
        try? FileManager.default.removeItem(atPath: destination.string)  // an unreferenced leftover
        guard rename(staging.string, destination.string) == 0 else {
            throw AssetPackClientError.io("move the installed pack to", destination, Errno(rawValue: errno))
        }
        AtomicFile.syncDirectory(folder)
        return InstalledPack(
            id: pack.id,
            version: pack.version,
            sha256: pack.sha256,
            downloadPolicy: pack.downloadPolicy,
            directory: relative,
            installSize: index.installSize,
            fileCount: index.fileCount,
            installedAt: Date()
        )
    }

    // MARK: Reading

    /// The merged namespace at the current state, rebuilt only when the state file changed.
    nonisolated func currentNamespace() throws -> Namespace {
        let identity = Namespace.identity(of: stateFilePath)
        if let cached = namespace.withLock({ $0 }), cached.stateIdentity == identity { return cached }
        let fresh = try Namespace(store: store, state: try store.loadState(), stateIdentity: identity)
        namespace.withLock { $0 = fresh }
        return fresh
    }
}
