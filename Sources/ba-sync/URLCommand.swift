import ArgumentParser
import AssetPackCLI
import AssetPackClient
import Foundation
import SystemPackage

struct URLCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "url",
        abstract: "url(for:): where a file or folder of the merged namespace is on disk (offline).",
        discussion: """
            A folder held by several packs prints that folder in one of them (Apple's url(for:) returns a merged \
            view; this tool does not build one). A path nothing holds is a failure (exit 1, "exists": false with \
            --json); the library, as Apple's, returns a URL where nothing exists instead.
            """
    )

    @OptionGroup var app: AppGroupOptions

    @Argument(help: "A path in the namespace, e.g. Levels/ or Tutorial/strings/en.json.")
    var path: String

    func run() throws {
        try app.read { reader in
            let url = try reader.url(for: FilePath(path))
            let holder = try reader.assetPackID(containing: FilePath(path))
            if app.json {
                try Console.json(SyncOutput.FileURL(path: path, url: url.absoluteString, assetPackID: holder))
            }
            guard holder != nil else {
                // The library's answer for a path nothing holds is a URL where nothing is; a shell wants a failure.
                _ = try reader.installedFile(at: FilePath(path))  // throws fileNotFound, with the fix
                throw ExitCode.failure
            }
            if !app.json { Console.out(url.path) }
        }
    }
}
