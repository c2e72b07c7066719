import ArgumentParser
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
        let rows = try await options.run { manager -> [[String: any Sendable]] in
            let server = try? await manager.statusOfAllAssetPacks()  // one manifest fetch; nil when offline
            var ids = Set(manager.installedPacks.map(\.id))
            if let id { ids = [id] }
            var rows: [[String: any Sendable]] = []
            for id in ids.sorted() {
                let installed = manager.installedPack(withID: id)
                var status = await manager.localStatus(ofAssetPackWithID: id)
                if let server {
                    if let entry = server.first(where: { $0.id == id }), entry.pack != nil {
                        status = entry.status
                    } else if installed != nil {
                        status.insert(.obsolete)
                    }
                }
                var row: [String: any Sendable] = [
                    "id": id, "status": status.names, "statusRawValue": Int(status.rawValue),
                ]
                if let installed {
                    row["version"] = installed.version
                    row["installSize"] = installed.installSize
                    row["fileCount"] = installed.fileCount
                    row["path"] = manager.store.root.appending(installed.directory).string
                    row["downloadPolicy"] = installed.downloadPolicy.name
                }
                rows.append(row)
            }
            return rows
        }
        if let id, rows.first?["version"] == nil, (rows.first?["status"] as? [String])?.isEmpty ?? true {
            Output.err("pack \(id) is not installed and not known here")
            throw ExitCode.failure
        }
        if options.json {
            Output.json(id == nil ? rows as Any : rows.first as Any)
            return
        }
        Output.table(
            [["PACK", "VERSION", "FILES", "INSTALL", "STATUS", "PATH"]]
                + rows.map { row in
                    [
                        row["id"] as? String ?? "", (row["version"] as? Int).map { "v\($0)" } ?? "-",
                        (row["fileCount"] as? Int).map(String.init) ?? "-",
                        (row["installSize"] as? Int64).map(ByteFormat.string) ?? "-",
                        (row["status"] as? [String] ?? []).joined(separator: ","), row["path"] as? String ?? "-",
                    ]
                }
        )
    }
}
