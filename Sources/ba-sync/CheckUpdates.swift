import ArgumentParser
import AssetPackCLI
import AssetPackClient

struct CheckUpdates: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-updates",
        abstract: "checkForUpdates(): update outdated installed packs, remove obsolete ones."
    )

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let (updated, removed) = try await options.run { manager in try await manager.checkForUpdates() }
        if options.json {
            Console.json(["updatingIDs": updated.sorted(), "removedIDs": removed.sorted()])
        } else {
            Console.out("updated: \(updated.isEmpty ? "none" : updated.sorted().joined(separator: ", "))")
            Console.out("removed: \(removed.isEmpty ? "none" : removed.sorted().joined(separator: ", "))")
        }
    }
}
