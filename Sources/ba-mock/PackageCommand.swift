import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct PackageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "package",
        abstract: "Build one pack archive from a packaging manifest, like `ba-package Manifest.json -o Pack.aar`.",
        discussion: """
            Selector paths are resolved against --root (default: the current folder), as ba-package resolves \
            them against the folder it runs in. The archive is an Apple Archive as ba-package writes one (the \
            default, whatever the output's name): LZFSE-compressed 4 MiB blocks, the manifest at its root as \
            Manifest.json and every file under Contents/ with its SHA-256. With --format tar, or a compression \
            only tar has (--compression zstd, gzip or xz), it is ba-mock's pax tar with Contents/<path> entries \
            and an Index.json listing every file's size and SHA-256. Either way the same input always gives the \
            same bytes.
            """
    )

    @Argument(help: "The packaging manifest (JSON; // comments allowed).")
    var manifest: FilePath

    @Option(
        name: [.short, .customLong("output"), .customLong("output-path")],
        help: "Where to write the pack archive (--output-path is ba-package's name for it)."
    )
    var output: FilePath

    @Option(help: "The folder selector paths are relative to (the current folder by default).")
    var root: FilePath = "."

    @OptionGroup var build: BuildOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() throws {
        let options = try build.packOptions(writing: output)
        var lastShown = -1
        let built = try PackBuilder.build(
            manifest: manifest,
            root: root,
            to: output,
            options: options,
            warn: { Console.err("warning: \($0)") },
            progress: { id, done, total in
                guard Console.stderrIsTerminal && total > 64 << 20 else { return }
                let percent = Int(done * 100 / max(total, 1))
                if percent != lastShown {
                    lastShown = percent
                    Console.statusLine("packing \(id): \(percent)%")
                }
            }
        )
        if lastShown >= 0 { Console.statusLine(nil) }
        if json {
            try Console.json(built)
        } else {
            Console.out(
                "\(output): \(built.assetPackID), \(ByteFormat.count(built.fileCount, "file")), \(ByteFormat.string(built.installSize)) "
                    + "-> \(ByteFormat.string(built.downloadSize)) \(built.format.rawValue) \(built.compression.rawValue), "
                    + "sha256 \(built.sha256)"
            )
        }
    }
}
