import AssetPackFormat
import Foundation

/// Making packs local: Apple's `ensureLocalAvailability` family, and the install behind it.
extension AssetPackManager {

    /// Makes sure a pack is installed (Apple's `ensureLocalAvailability(of:requireLatestVersion:)`).
    ///
    /// Returns at once when the pack is local (and, with `requireLatestVersion`, at the server's version or
    /// a later one). Otherwise downloads, verifies and installs the archive the server publishes now: an
    /// `AssetPack` value from an earlier listing is refreshed first, so that a pack the server moved on is
    /// not fetched against a stale digest. Returning means the pack is local; throwing means it is not
    /// guaranteed to be, and what was installed before is still there. A second call for the same pack
    /// while one is downloading waits for it instead of downloading it again.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` for a pack listed for other
    ///   platforms only; ``AssetPackClientError``: `.obsolete` for a pack the server dropped, network, size,
    ///   digest or install errors; `CancellationError`.
    public func ensureLocalAvailability(of pack: AssetPack, requireLatestVersion: Bool = false) async throws {
        try await withExclusiveControl {
            if !requireLatestVersion, self.reader.assetPackIsAvailableLocally(withID: pack.id) { return }
            let listing = try await self.serverListing()
            guard let current = listing.visible[pack.id] else {
                if listing.all[pack.id] != nil { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: pack.id) }
                throw try await self.obsolete(pack.id)
            }
            try await self.ensure(current, latest: requireLatestVersion)
        }
    }

    /// Makes sure several packs are installed, downloading up to the concurrency bound at once; the server's
    /// listing is fetched once for all of them (not at all when all are local and no update is required).
    /// - Throws: ``LocalAvailabilityError`` listing successes and failures when any pack failed (`.obsolete`
    ///   for one the server no longer lists); a network error when the listing cannot be fetched.
    public func ensureLocalAvailability(of packs: Set<AssetPack>, requireLatestVersions: Bool = false) async throws {
        try await withExclusiveControl {
            let reader = self.reader
            let wanted = packs.filter { requireLatestVersions || !reader.assetPackIsAvailableLocally(withID: $0.id) }
            let listing = wanted.isEmpty ? Listing(all: [:], visible: [:]) : try await self.serverListing()
            try await self.ensureAll(packs) { pack in
                guard wanted.contains(pack) else { return }
                guard let current = listing.visible[pack.id] else {
                    if listing.all[pack.id] != nil { throw self.notListed(pack.id, in: listing) }
                    throw try await self.obsolete(pack.id)
                }
                try await self.ensure(current, latest: requireLatestVersions)
            }
        }
    }

    /// ``ensureLocalAvailability(of:requireLatestVersions:)`` by pack ID, for a tool that has IDs only: packs
    /// already local need no server unless `requireLatestVersions`.
    /// - Throws: ``AssetPackClientError`` with code `.assetPackNotFound` for an ID the server does not list
    ///   (before anything is downloaded); ``LocalAvailabilityError`` when any pack failed; a network error.
    public func ensureLocalAvailability(ofAssetPacksWithIDs ids: [String], requireLatestVersions: Bool = false)
        async throws
    {
        try await withExclusiveControl {
            let reader = self.reader
            let wanted = try await BlockingIO.shortCall {
                Set(ids).filter { requireLatestVersions || !reader.assetPackIsAvailableLocally(withID: $0) }
            }
            guard !wanted.isEmpty else { return }
            let listing = try await self.serverListing()
            var packs: Set<AssetPack> = []
            for id in wanted.sorted() {
                guard let pack = listing.visible[id] else { throw self.notListed(id, in: listing) }
                packs.insert(pack)
            }
            try await self.ensureAll(packs) { try await self.ensure($0, latest: requireLatestVersions) }
        }
    }

    /// Records that the server no longer lists pack `id`.
    /// - Returns: The error to throw: the pack is obsolete.
    func obsolete(_ id: String) async throws -> AssetPackClientError {
        let store = self.store
        _ = try await BlockingIO.shortCall { try store.update { $0.obsolete.insert(id) } }
        return AssetPackClientError(
            code: .obsolete,
            message: "pack \(id) is obsolete: \(server?.absoluteString ?? "the server") no longer lists it",
            assetPackID: id
        )
    }

    // MARK: Download and install

    /// Installs `pack` (as the server lists it now) unless it is installed (with `latest`, at its version or
    /// a later one); a concurrent install of the same pack is waited for rather than repeated.
    func ensure(_ pack: AssetPack, latest: Bool) async throws {
        let store = self.store
        try await gate.run(pack) {
            let state = try await BlockingIO.shortCall { try store.loadState() }
            if let installed = state.installed[pack.id], !latest || installed.version >= pack.version {
                return false
            }
            if state.obsolete.contains(pack.id) {
                // Apple's rule: an obsolete pack cannot be downloaded again. `pack` comes from the server's
                // current listing, though: a pack published again is a new listing (otherwise a manifest
                // broken for a minute would lose it for good).
                _ = try await BlockingIO.shortCall { try store.update { $0.obsolete.remove(pack.id) } }
            }
            return true
        } install: {
            try await self.downloadAndInstall(pack)
        }
    }

    /// Runs `ensure` on every pack, up to the concurrency bound at once, and collects the outcome.
    func ensureAll(_ packs: Set<AssetPack>, _ ensure: @escaping @Sendable (AssetPack) async throws -> Void)
        async throws
    {
        var successes: Set<AssetPack> = []
        var failures: [AssetPack: AssetPackClientError] = [:]
        let ordered = packs.sorted { $0.id < $1.id }
        try await withThrowingTaskGroup(of: (AssetPack, AssetPackClientError?).self) { group in
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
                    }
                }
            }
            for _ in 0..<maxConcurrentDownloads { start() }
            while let (pack, error) = try await group.next() {
                if let error { failures[pack] = error } else { successes.insert(pack) }
                start()
            }
        }
        if !failures.isEmpty { throw LocalAvailabilityError(successes: successes, failures: failures) }
    }

    private func downloadAndInstall(_ pack: AssetPack) async throws {
        let broadcaster = self.broadcaster
        let events = DownloadEvents(
            began: { broadcaster.publish(.began(pack)) },
            progress: { broadcaster.publish(.downloading(pack, $0)) },
            paused: { retry in
                broadcaster.publish(.retrying(pack, retry))
                broadcaster.publish(.paused(pack))
            },
            resumed: { broadcaster.publish(.began(pack)) },  // Apple's "began or resumed after being paused"
            resuming: { broadcaster.publish(.resuming(pack, from: $0)) },
            delta: { broadcaster.publish(.delta(pack, $0)) },
            deltaFailed: { broadcaster.publish(.deltaFailed(pack, reason: $0)) }
        )
        do {
            let held = try await holdRoom(for: pack)
            defer { device.release(held) }
            let installed = try await installer.install(pack, events: events)
            if let carried = installed.fileDigestsCarried, carried < installed.fileCount {
                broadcaster.publish(
                    .unverifiedFiles(
                        pack,
                        carried: carried,
                        of: installed.fileCount,
                        archiveDigestChecked: installed.sha256 != nil
                    )
                )
            }
            broadcaster.publish(.finished(pack))
        } catch {
            // A cancelled task is a normal outcome, not a failure of the pack.
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            let failure =
                error as? AssetPackClientError
                ?? AssetPackClientError(code: .io, message: "pack \(pack.id): \(error)", assetPackID: pack.id)
            broadcaster.publish(.failed(pack, failure))
            throw failure
        }
    }

    /// Holds room for `pack` on the device played, or fails as a full disk would, before anything downloads:
    /// the new version is written beside the one it replaces (and, for a resumable download, its archive too).
    /// - Returns: The bytes held, for ``SimulatedDevice/release(_:)``.
    private func holdRoom(for pack: AssetPack) async throws -> Int64 {
        let device = self.device
        guard device.conditions.freeSpace != nil else { return 0 }
        let store = self.store
        let installed = try await BlockingIO.shortCall {
            try store.loadState().installed.values.reduce(Int64(0)) { $0 + $1.installSize }
        }
        let written = (pack.installSize ?? pack.downloadSize) + (installer.resumableDownloads ? pack.downloadSize : 0)
        return try device.reserve(written, for: pack, installed: installed, estimated: pack.installSize == nil)
    }
}
