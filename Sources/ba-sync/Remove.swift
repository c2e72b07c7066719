import ArgumentParser
import AssetPackCLI
import AssetPackClient

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "remove(assetPackWithID:): delete an installed pack; `ensure` downloads it again."
    )

    @OptionGroup var options: ClientOptions

    @Argument(help: "The pack ID.")
    var id: String

    func run() async throws {
        let id = self.id
        try await options.run { manager in try await manager.remove(assetPackWithID: id) }
        if options.json { Console.json(["removed": id]) } else { Console.out("removed \(id)") }
    }
}
