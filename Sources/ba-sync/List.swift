import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import Foundation

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the server's packs with their local status.",
        discussion:
            "Only the packs for the platform played: iOS unless --platform (or BA_SYNC_PLATFORM) says otherwise. --network offline plays a device without network (the list then fails, saying so)."
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var plist: InfoPlistOptions
    /// For `--network offline` (and the other conditions, which download nothing here): the root's group.
    @OptionGroup(visibility: .hidden) var downloads: DownloadOptions

    func run() async throws {
        var (app, server) = (self.app, self.server)
        _ = try await plist.apply(to: &app, server: &server)
        let result = try await Session(app: app, server: server, downloads: downloads).runner().list()
        if app.json {
            try Console.json(result)
            return
        }
        Console.table(
            [["PACK", "POLICY", "VERSION", "LANGUAGE", "DOWNLOAD", "INSTALLED", "STATUS"]]
                + result.packs.map { pack in
                    [
                        pack.id, pack.downloadPolicy, String(pack.version), pack.language ?? "-",
                        ByteFormat.string(pack.downloadSize), pack.installedVersion.map { "v\($0)" } ?? "-",
                        pack.status.joined(separator: ","),
                    ]
                }
        )
        Console.out(
            result.platform == "any"
                ? "platform: any (every pack, whatever its platforms)"
                : "platform: \(result.platform) (packs for other platforms are not shown; --platform any shows every pack)"
        )
        Console.out(result.appLanguage.line)
    }
}
