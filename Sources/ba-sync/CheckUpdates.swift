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
        let ((updated, removed), _) = try await Session(app: app, server: server, downloads: downloads, lock: lock)
            .run { manager in try await manager.checkForUpdatesAndWait() }
        if app.json {
            try Console.json(SyncOutput.CheckUpdates(updating: Set(updated), removed: Set(removed)))
        } else {
            Console.out("updated: \(updated.isEmpty ? "none" : updated.sorted().joined(separator: ", "))")
            Console.out("removed: \(removed.isEmpty ? "none" : removed.sorted().joined(separator: ", "))")
        }
    }
}
