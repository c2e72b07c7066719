import ArgumentParser
import AssetPackCLI
import AssetPackClient

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "remove(assetPackWithID:): delete an installed pack (offline); `ensure` downloads it again."
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var lock: LockOptions

    @Argument(help: "The pack ID.")
    var id: String

    func run() async throws {
        let id = self.id
        _ = try await Session(app: app, lock: lock, needsServer: false).run { manager in
            do {
                try await manager.remove(assetPackWithID: id)
            } catch ManagedBackgroundAssetsError.assetPackNotFound(let id) {
                throw AssetPackClientError.notInstalled(id, in: manager.store.root)
            }
        }
        if app.json { try Console.json(SyncOutput.Remove(removed: id)) } else { Console.out("removed \(id)") }
    }
}
