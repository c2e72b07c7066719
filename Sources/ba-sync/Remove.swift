import ArgumentParser
import AssetPackCLI
import AssetPackClient

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "remove(assetPackWithID:): delete an installed pack (offline); `ensure` downloads it again."
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var lock: LockOptions

    @Argument(help: "The pack ID.")
    var id: String

    func run() async throws {
        let removed = try await Session(app: app, lock: lock, needsServer: false).runner().remove(id)
        if app.json { try Console.json(removed) } else { Console.out("removed \(removed.removed)") }
    }
}
