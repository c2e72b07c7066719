import ArgumentParser
import AssetPackCLI
import AssetPackClient
import Foundation
import SystemPackage

struct Cat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "contents(at:): write a file of the merged namespace to stdout (offline)."
    )

    @OptionGroup var options: ClientOptions

    @Argument(help: "A path in the namespace, e.g. Levels/World1/Level1/level.json.")
    var path: String

    @Option(help: "Read from this pack only.")
    var pack: String?

    func run() throws {
        try options.offline { reader in
            let data = try reader.contents(at: FilePath(path), searchingInAssetPackWithID: pack)
            try data.withUnsafeBytes { _ = try FileDescriptor.standardOutput.writeAll($0) }
        }
    }
}
