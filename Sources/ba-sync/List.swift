import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import Foundation

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the server's packs with their local status.")

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let rows = try await options.run { manager in
            try await manager.statusOfAllAssetPacks().compactMap { entry in
                entry.pack.map { ($0, entry.installed, entry.status) }
            }
        }
        if options.json {
            Console.json(
                rows.map { pack, installed, status in
                    [
                        "id": pack.id, "version": pack.version, "downloadPolicy": pack.downloadPolicy.name,
                        "downloadSize": pack.downloadSize, "installSize": pack.installSize, "fileCount": pack.fileCount,
                        "installedVersion": installed.map { $0.version as Any } ?? NSNull(),
                        "status": status.names, "statusRawValue": status.rawValue,
                    ] as [String: Any]
                }
            )
            return
        }
        Console.table(
            [["PACK", "POLICY", "VERSION", "DOWNLOAD", "INSTALLED", "STATUS"]]
                + rows.map { pack, installed, status in
                    [
                        pack.id, pack.downloadPolicy.name, String(pack.version), ByteFormat.string(pack.downloadSize),
                        installed.map { "v\($0.version)" } ?? "-", status.names.joined(separator: ","),
                    ]
                }
        )
    }
}
