import ArgumentParser
import AssetPackCLI
import AssetPackClient
import Foundation

struct Ensure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ensure",
        abstract: "Make packs local: ensureLocalAvailability(of:requireLatestVersion:).",
        discussion: "Returns at once for packs already installed (unless --latest finds a newer version)."
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var downloads: DownloadOptions
    @OptionGroup var lock: LockOptions
    @OptionGroup var plist: InfoPlistOptions

    @Argument(help: "Pack IDs, e.g. HighResTextures.")
    var ids: [String]

    @Flag(help: "Also download a newer version when the server has one.")
    var latest = false

    func validate() throws {
        guard !ids.isEmpty else { throw ValidationError("name at least one pack ID; `ba-sync list` shows them") }
    }

    func run() async throws {
        var seen: Set<String> = []
        let ids = self.ids.filter { seen.insert($0).inserted }  // `ensure Levels Levels` is one pack
        let latest = self.latest
        var (app, server) = (self.app, self.server)
        let limits = try await plist.apply(to: &app, server: &server)
        let (result, shown) = try await Session(app: app, server: server, downloads: downloads, lock: lock).runner()
            .ensure(ids, latest: latest, limits: limits)
        if app.json {
            try Console.json(result)
        } else {
            let ok = ids.filter { result.failures[$0] == nil }  // in the order given
            if !ok.isEmpty { Console.out("local: \(ok.joined(separator: ", "))") }
            for (id, failure) in result.failures.sorted(by: { $0.key < $1.key }) {
                Console.err(shown.contains(id) ? "failed: \(id) (above)" : "failed: \(id): \(failure.message)")
            }
        }
        if !result.failures.isEmpty { throw ExitCode.failure }
    }
}
