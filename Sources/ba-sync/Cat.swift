import ArgumentParser
import AssetPackCLI
import AssetPackClient
import Foundation
import SystemPackage

struct Cat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "contents(at:): write a file of the merged namespace to stdout (offline).",
        discussion: "The bytes go to stdout as they are; with --json, only a failure is printed (as an error line)."
    )

    @OptionGroup var app: AppGroupOptions

    @Argument(help: "A path in the namespace, e.g. Tutorial/strings/en.json.")
    var path: String

    @Option(
        help:
            "Read from this pack only. (default: every installed pack; a path several hold is read from a localized pack of the resolved language, else an unlocalized one, else one of another language; among several, --collisions decides)"
    )
    var pack: String?

    func run() throws {
        try app.read(bytesOnStdout: true) { reader in
            let data = try reader.contents(at: FilePath(path), searchingInAssetPackWithID: pack)
            try data.withUnsafeBytes { _ = try FileDescriptor.standardOutput.writeAll($0) }
        }
    }
}
