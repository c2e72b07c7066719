import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-hash installed files against their pack's index (offline).",
        discussion: "Exits 1 when a file differs or is missing; --json lists them as data."
    )

    @OptionGroup var app: AppGroupOptions

    @Argument(help: "One pack ID; default: every installed pack.")
    var id: String?

    func run() throws {
        try app.read { reader in
            guard app.json else {
                Console.out("verified \(ByteFormat.count(try reader.verify(assetPackWithID: id), "file"))")
                return
            }
            let result = try reader.verification(ofAssetPackWithID: id)
            try Console.json(SyncOutput.Verify(result))
            if !result.problems.isEmpty { throw ExitCode.failure }
        }
    }
}
