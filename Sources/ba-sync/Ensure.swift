import ArgumentParser
import AssetPackCLI
import AssetPackClient

struct Ensure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make packs local: ensureLocalAvailability(of:requireLatestVersion:).",
        discussion: "Returns at once for packs already installed (unless --latest finds a newer version)."
    )

    @OptionGroup var options: ClientOptions

    @Argument(help: "Pack IDs.")
    var ids: [String]

    @Flag(help: "Also download a newer version when the server has one.")
    var latest = false

    func validate() throws {
        guard !ids.isEmpty else { throw ValidationError("name at least one pack ID; `ba-sync list` shows them") }
    }

    func run() async throws {
        let (ids, latest) = (self.ids, self.latest)
        do {
            try await options.run { manager in
                var packs: Set<AssetPack> = []
                for id in ids { packs.insert(try await manager.assetPack(withID: id)) }
                try await manager.ensureLocalAvailability(of: packs, requireLatestVersions: latest)
            }
        } catch let error as AssetPackManager.LocalAvailabilityError {
            if options.json {
                Console.json([
                    "event": "result", "ok": error.successes.map(\.id).sorted(),
                    "failures": Dictionary(
                        uniqueKeysWithValues: error.failures.map { ($0.key.id, $0.value.description) }
                    ),
                ])
            }
            for (pack, failure) in error.failures.sorted(by: { $0.key.id < $1.key.id }) {
                Console.err("failed: \(pack.id): \(failure)")
            }
            throw ExitCode.failure
        }
        if options.json {
            Console.json(["event": "result", "ok": ids.sorted(), "failures": [String: String]()])
        } else {
            Console.out("local: \(ids.joined(separator: ", "))")
        }
    }
}
