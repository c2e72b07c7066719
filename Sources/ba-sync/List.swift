import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import Foundation

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the server's packs with their local status.",
        discussion:
            "Only the packs for the platform played: iOS unless --platform (or BA_SYNC_PLATFORM) says otherwise."
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var plist: InfoPlistOptions

    func run() async throws {
        var (app, server) = (self.app, self.server)
        _ = try await plist.apply(to: &app, server: &server)
        let ((entries, manifest), _) = try await Session(app: app, server: server).run { manager in
            (try await manager.statusOfAllAssetPacks().filter { $0.pack != nil }, try await manager.manifest)
        }
        let platform = server.playedPlatform
        if app.json {
            try Console.json(SyncOutput.List(entries: entries, manifest: manifest, platform: platform))
            return
        }
        Console.table(
            [["PACK", "POLICY", "VERSION", "LANGUAGE", "DOWNLOAD", "INSTALLED", "STATUS"]]
                + entries.compactMap { entry in
                    entry.pack.map { pack in
                        [
                            pack.id, pack.downloadPolicy.name, String(pack.version), pack.language ?? "-",
                            ByteFormat.string(pack.downloadSize), entry.installed.map { "v\($0.version)" } ?? "-",
                            entry.status.names.joined(separator: ","),
                        ]
                    }
                }
        )
        Console.out(
            platform.map {
                "platform: \($0) (packs for other platforms are not shown; --platform any shows every pack)"
            }
                ?? "platform: any (every pack, whatever its platforms)"
        )
        let preferred = manifest.preferredLanguages.first ?? manifest.primaryLanguage
        Console.out(
            AppLanguage(
                preferred: preferred.description,
                resolved: manifest.resolvedLanguage?.description,
                primary: manifest.primaryLanguage.description
            ).line
        )
    }
}
