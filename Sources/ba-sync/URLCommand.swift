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

    @OptionGroup var options: ClientOptions

    @Argument(help: "A path in the namespace, e.g. Levels/ or Videos/Intro.m4v.")
    var path: String

    func run() throws {
        try options.offline { reader in
            let url = try reader.url(for: FilePath(path))
            if options.json {
                Console.json([
                    "path": path, "url": url.absoluteString,
                    "assetPackID": (try? reader.assetPackID(containing: FilePath(path))) as Any? ?? NSNull(),
                ])
            } else {
                Console.out(url.path)
            }
        }
    }
}
