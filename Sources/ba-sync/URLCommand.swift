import ArgumentParser
import AssetPackCLI
import AssetPackClient
import Foundation
import SystemPackage

struct URLCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "url",
        abstract: "url(for:): where a file or folder of the merged namespace is on disk (offline)."
    )

    @OptionGroup var app: AppGroupOptions

    @Argument(help: "A path in the namespace, e.g. Levels/ or Tutorial/strings/en.json.")
    var path: String

    func run() throws {
        try app.read { reader in
            let url = try reader.url(for: FilePath(path))
            if app.json {
                Console.json([
                    "event": "result", "path": path, "url": url.absoluteString,
                    "assetPackID": (try? reader.assetPackID(containing: FilePath(path))) as Any? ?? NSNull(),
                ])
            } else {
                Console.out(url.path)
            }
        }
    }
}
