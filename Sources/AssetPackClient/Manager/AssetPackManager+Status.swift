import AssetPackFormat
import Foundation
import SystemPackage

/// One pack's status, as `ba-sync status` and `list` show it.
public struct AssetPackStatusEntry: Sendable {
    /// The pack's ID.
    public var id: String
    /// The server's description of the pack; `nil` when the server no longer lists it, or was not asked.
    public var pack: AssetPack?
    /// The installed record, if installed.
    public var installed: InstalledPack?
    /// Apple's status flags.
    public var status: AssetPack.Status
    /// The installed version's folder, if installed.
    public var folder: FilePath?
}

/// The status of installed packs (or of one pack), from the server when it answers, else from what the app
/// group knows.
public struct AssetPackStatusReport: Sendable {
    /// The packs, sorted by ID.
    public var entries: [AssetPackStatusEntry]
    /// Why the server was not asked or did not answer; `nil` when the flags come from the server.
    public var offlineReason: AssetPackClientError?
}

extension AssetPackManager {
    /// The pack's status from what this app group knows, without the network (Apple's `localStatus`): only
    /// the flags Apple says can be known offline, `downloaded`, `outOfDate` (the last manifest seen listed
    /// another version) and `obsolete` (it listed none); empty for an unknown ID.
    public func localStatus(ofAssetPackWithID id: String) async -> AssetPack.Status {
        let store = self.store
        let state = (try? await BlockingIO.shortCall { try store.loadState() }) ?? StoreState()
        return PackStatus.local(id, state: state)
    }

    /// The installed version of a pack (offline; Apple's 27.2 `localVersion(ofAssetPackWithID:)`).
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when the pack is not installed.
    public nonisolated func localVersion(ofAssetPackWithID id: String) throws -> Int {
        guard let installed = reader.installedPack(withID: id) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        return installed.version
    }

    /// The bytes an installed pack's files take (offline), as its index lists them; Apple's 27.2
    /// `localSize(ofAssetPackWithID:calculationMethod:)` also offers on-disk allocation, which this does not.
    public nonisolated func localSize(ofAssetPackWithID id: String) -> Int64? {
        reader.installedPack(withID: id)?.installSize
    }

    /// The pack's status, asking the server (Apple's `status(ofAssetPackWithID:)`, deprecated in 26.4 for
    /// ``status(relativeTo:)``): relative to what the server publishes now; `obsolete` for a pack this app
    /// group knows and the server dropped.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` for a pack neither knows;
    ///   ``AssetPackClientError`` for a network error.
    public func status(ofAssetPackWithID id: String) async throws -> AssetPack.Status {
        let listing = try await serverListing()
        let packs = listing.all
        let store = self.store
        let state = try await BlockingIO.shortCall { try store.loadState() }
        let downloading = await gate.installing
        if let pack = packs[id] {
            return PackStatus.relative(to: pack, serverPacks: packs, state: state, downloading: downloading)
        }
        guard state.installed[id] != nil || state.obsolete.contains(id) || state.latestKnown[id] != nil else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        return PackStatus.dropped(id, state: state, downloading: downloading)
    }

    /// The pack's status relative to a given description of it, asking the server (Apple's
    /// `status(relativeTo:)`): `outOfDate` when the local version differs from `pack`'s, `updateAvailable`
    /// when the server still publishes `pack`'s version and it is higher than the local one (a lower version
    /// published is not an update).
    public func status(relativeTo pack: AssetPack) async throws -> AssetPack.Status {
        let packs = try await serverListing().all
        let store = self.store
        let state = try await BlockingIO.shortCall { try store.loadState() }
        return PackStatus.relative(to: pack, serverPacks: packs, state: state, downloading: await gate.installing)
    }

    /// Every pack the server lists for this platform, or that is installed, with its status relative to
    /// what the server publishes now: one manifest fetch for all of them (where `status(relativeTo:)` fetches
    /// per pack). An installed pack listed for other platforms only is not obsolete.
    /// - Returns: Each pack (the server's description, or `nil` for an installed pack the server dropped),
    ///   sorted by ID.
    public func statusOfAllAssetPacks() async throws -> [AssetPackStatusEntry] {
        let listing = try await serverListing()
        let packs = listing.all
        let store = self.store
        let state = try await BlockingIO.shortCall { try store.loadState() }
        let downloading = await gate.installing
        return Set(listing.visible.keys).union(state.installed.keys).sorted().map { id in
            let installed = state.installed[id]
            let status =
                packs[id].map {
                    PackStatus.relative(to: $0, serverPacks: packs, state: state, downloading: downloading)
                } ?? PackStatus.dropped(id, state: state, downloading: downloading)
            return AssetPackStatusEntry(
                id: id,
                pack: packs[id],
                installed: installed,
                status: status,
                folder: installed.map(reader.folder(of:))
            )
        }
    }

    /// The status of every installed pack, or of pack `id` (installed or not), as `ba-sync status` shows it:
    /// the flags the server's manifest gives when it answers, else the flags the app group knows offline.
    /// - Throws: ``AssetPackClientError`` when the app group's state cannot be read (that is not "offline").
    public func statusReport(ofAssetPackWithID id: String? = nil) async throws -> AssetPackStatusReport {
        let store = self.store
        let state = try await BlockingIO.shortCall { try store.loadState() }
        let online: [AssetPackStatusEntry]?
        var offlineReason: AssetPackClientError?
        do {
            guard server != nil else {
                throw AssetPackClientError(code: .network, message: "no server given (--server or BA_SYNC_SERVER)")
            }
            online = try await statusOfAllAssetPacks()
        } catch let error as AssetPackClientError where [.network, .httpStatus, .badManifest].contains(error.code) {
            online = nil
            offlineReason = error
        }
        let ids = id.map { [$0] } ?? state.installed.keys.sorted()
        var entries: [AssetPackStatusEntry] = []
        for id in ids {
            if let entry = online?.first(where: { $0.id == id }) {
                entries.append(entry)
                continue
            }
            let record = state.installed[id]
            entries.append(
                AssetPackStatusEntry(
                    id: id,
                    pack: nil,
                    installed: record,
                    status: await localStatus(ofAssetPackWithID: id),
                    folder: record.map(reader.folder(of:))
                )
            )
        }
        return AssetPackStatusReport(entries: entries, offlineReason: offlineReason)
    }
}

/// How Apple's status flags follow from the app group's state and the server's manifest.
enum PackStatus {
    /// What is known without the network: `downloaded`, `outOfDate`, `obsolete` (as Apple's `localStatus`).
    static func local(_ id: String, state: StoreState) -> AssetPack.Status {
        var status: AssetPack.Status = []
        if state.obsolete.contains(id) { status.insert(.obsolete) }
        if let installed = state.installed[id] {
            status.insert(.downloaded)
            if let latest = state.latestKnown[id], latest != installed.version { status.insert(.outOfDate) }
        }
        return status
    }

    /// An installed pack the server no longer lists.
    static func dropped(_ id: String, state: StoreState, downloading: Set<String>) -> AssetPack.Status {
        var status = local(id, state: state)
        status.insert(.obsolete)
        if downloading.contains(id) { status.insert(.downloading) }
        return status
    }

    /// The status relative to `pack`, given what the server publishes now.
    static func relative(
        to pack: AssetPack,
        serverPacks packs: [String: AssetPack],
        state: StoreState,
        downloading: Set<String>
    ) -> AssetPack.Status {
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
        if let installed, installed.version < current.version, current.version == pack.version {
            status.insert(.updateAvailable)
        }
        return status
    }
}
