import ArgumentParser
import AssetPackCLI
import AssetPackClient

struct CheckUpdates: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-updates",
        abstract: "checkForUpdates(): update outdated installed packs, remove obsolete ones.",
        discussion:
            "Apple's checkForUpdates() (and the library's) returns once the updates are scheduled; this command waits until they are installed, so that its exit code says whether they were. A lower version published is not an update."
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var downloads: DownloadOptions
    @OptionGroup var lock: LockOptions
    @OptionGroup var plist: InfoPlistOptions

    func run() async throws {
        var (app, server) = (self.app, self.server)
        _ = try await plist.apply(to: &app, server: &server)
        let result = try await Session(app: app, server: server, downloads: downloads, lock: lock).runner()
            .checkUpdates()
        if app.json {
            try Console.json(result)
        } else {
            Console.out("updated: \(result.updatingIDs.isEmpty ? "none" : result.updatingIDs.joined(separator: ", "))")
            Console.out("removed: \(result.removedIDs.isEmpty ? "none" : result.removedIDs.joined(separator: ", "))")
        }
    }
}
