import ArgumentParser
import AssetPackClient

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-hash installed files against their pack's index (offline)."
    )

    @OptionGroup var options: ClientOptions

    @Argument(help: "One pack ID; default: every installed pack.")
    var id: String?

    func run() throws {
        try options.offline { manager in
            let count = try manager.verify(assetPackWithID: id)
            if options.json { Output.json(["verifiedFiles": count]) } else { Output.out("verified \(count) files") }
        }
    }
}
