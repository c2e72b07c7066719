import ArgumentParser
import AssetPackCLI
import AssetPackClient

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-hash installed files against their pack's index (offline)."
    )

    @OptionGroup var options: ClientOptions

    @Argument(help: "One pack ID; default: every installed pack.")
    var id: String?

    func run() throws {
        try options.offline { reader in
            let count = try reader.verify(assetPackWithID: id)
            if options.json { Console.json(["verifiedFiles": count]) } else { Console.out("verified \(count) files") }
        }
    }
}
