import AssetPackFormat
import Foundation

/// Updates: Apple's `checkForUpdates()`, and waiting for what it scheduled.
extension AssetPackManager {
    /// Gets the latest manifest, schedules the updates of outdated installed packs and removes obsolete ones
    /// (Apple's `checkForUpdates()`). As Apple's, it returns without waiting for the downloads: follow them on
    /// ``statusUpdates``, or wait with ``waitForScheduledUpdates()``. A pack is outdated when the server
    /// publishes a higher version than the installed one; a lower version is not an update.
    /// - Returns: The IDs being updated and the IDs removed.
    /// - Throws: A network error when the manifest cannot be fetched.
    @discardableResult
    public func checkForUpdates() async throws -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        let (outdated, removed) = try await withExclusiveControl { try await self.planUpdates() }
        let previous = backgroundUpdates
        backgroundUpdates = Task {
            var failures = await previous?.value ?? [:]
            do {
                try await self.withExclusiveControl {
                    try await self.ensureAll(Set(outdated)) { pack in try await self.ensure(pack, latest: true) }
                }
            } catch let error as LocalAvailabilityError {
                for (pack, failure) in error.failures { failures[pack.id] = failure }
            } catch let error as AssetPackClientError {
                failures[error.assetPackID ?? "update"] = error
            } catch {}
            return failures
        }
        return (Set(outdated.map(\.id)), removed)
    }

    /// ``checkForUpdates()``, returning when the updates are installed (what `ba-sync check-updates` does).
    /// - Throws: The first update's error after trying them all; removals are done regardless.
    @discardableResult
    public func checkForUpdatesAndWait() async throws -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        try await withExclusiveControl {
            let (outdated, removed) = try await self.planUpdates()
            do {
                try await self.ensureAll(Set(outdated)) { pack in try await self.ensure(pack, latest: true) }
            } catch let error as LocalAvailabilityError {
                if let first = error.failures.sorted(by: { $0.key.id < $1.key.id }).first?.value { throw first }
            }
            return (Set(outdated.map(\.id)), removed)
        }
    }

    /// Waits for the updates ``checkForUpdates()`` scheduled.
    /// - Returns: The packs whose update failed, with why (empty when all were installed).
    @discardableResult
    public func waitForScheduledUpdates() async -> [String: AssetPackClientError] {
        await backgroundUpdates?.value ?? [:]
    }

    /// Fetches the manifest, removes the installed packs it no longer lists (for any platform) and records
    /// the versions seen.
    /// - Returns: The server's description of each installed pack it publishes a higher version of for this
    ///   platform, and the IDs removed.
    private func planUpdates() async throws -> (outdated: [AssetPack], removed: Set<String>) {
        let listing = try await serverListing()
        let packs = listing.all
        let visible = listing.visible
        let store = self.store
        return try await BlockingIO.longJob {  // removing a pack deletes its folder: a long job
            let (removed, state) = try store.update { state in
                let removed = state.installed.values.filter { packs[$0.id] == nil }
                for pack in removed { state.installed[pack.id] = nil }
                for id in Set(removed.map(\.id)).union(state.latestKnown.keys) where packs[id] == nil {
                    state.obsolete.insert(id)
                }
                for (id, pack) in packs {
                    state.latestKnown[id] = pack.version
                    state.obsolete.remove(id)  // published again: a new listing, no longer obsolete
                }
                return (removed, state)
            }
            for pack in removed { store.removePack(pack) }
            let outdated = state.installed.values.compactMap { installed in
                visible[installed.id].flatMap { $0.version > installed.version ? $0 : nil }
            }
            return (outdated, Set(removed.map(\.id)))
        }
    }

}
