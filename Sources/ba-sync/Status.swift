import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Installed packs: Apple's status flags, version, sizes, folder.",
        discussion:
            "Asks the server for the flags it knows (updateAvailable, obsolete); offline, reports what the app group knows."
    )

    @OptionGroup var options: ClientOptions

    @Argument(help: "One pack ID; default: every installed pack.")
    var id: String?

    func run() async throws {
        let id = self.id
        let report = try await options.run { manager in await manager.statusReport(ofAssetPackWithID: id) }
        if let id, let entry = report.entries.first, entry.installed == nil, entry.status.isEmpty {
            Console.err("pack \(id) is not installed and not known here")
            throw ExitCode.failure
        }
        let rows: [[String: Any]] = report.entries.map { entry in
            var row: [String: Any] = [
                "id": entry.id, "status": entry.status.names, "statusRawValue": Int(entry.status.rawValue),
            ]
            if let installed = entry.installed {
                row["version"] = installed.version
                row["installSize"] = installed.installSize
                row["fileCount"] = installed.fileCount
                row["downloadPolicy"] = installed.downloadPolicy.name
            }
            if let folder = entry.folder { row["path"] = folder.string }
            return row
        }
        if options.json {
            Console.json(id == nil ? rows as Any : rows.first as Any)
            return
        }
        Console.table(
            [["PACK", "VERSION", "FILES", "INSTALL", "STATUS", "PATH"]]
                + report.entries.map { entry in
                    [
                        entry.id, entry.installed.map { "v\($0.version)" } ?? "-",
                        entry.installed.map { String($0.fileCount) } ?? "-",
                        entry.installed.map { ByteFormat.string($0.installSize) } ?? "-",
                        entry.status.names.joined(separator: ","), entry.folder?.string ?? "-",
                    ]
                }
        )
    }
}
