import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import SystemPackage

struct DownloadManifestCreate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Write a self-hosted download manifest for pack archives (ba-package download-manifest create).",
        discussion: """
            Each archive's ID, download policy, platforms and userInfo come from the Manifest.json it carries; \
            its URL is the base URL + "/" + ID, its downloadSize its byte size. ba-mock also writes sha256, \
            installSize, fileCount, compression, platforms and language, as `export` does (a client that does not \
            know them ignores them). An archive whose manifest lists other platforms only is skipped with a \
            warning (inferred; Apple's handling is not documented). The file is written atomically.
            """
    )

    @Argument(help: "Pack archives (.aar, or ba-mock's own packs), one per pack.")
    var archives: [FilePath]

    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp("The version of each archive, in their order. (default: 0 for each)", valueName: "n")
    )
    var assetPackVersions: [Int] = []

    @OptionGroup var platform: PlatformFlags

    @Option(help: "The URL the packs are served under; a pack's URL is this + \"/\" + its ID (no .aar).")
    var downloadBaseURL: String

    @Option(name: [.customLong("output-path"), .customShort("o")], help: "The manifest to write; must end in .json.")
    var outputPath: FilePath

    @Flag(name: [.customLong("quiet"), .customShort("q")], help: "Print nothing but warnings and errors.")
    var quiet = false

    func validate() throws {
        do {
            try SelfHostedManifest.checkManifestPath(outputPath)
            try SelfHostedManifest.checkBaseURL(downloadBaseURL)
        } catch {
            throw usageError(error)
        }
    }

    func run() async throws {
        let (archives, versions, platform, baseURL) = (
            archives, assetPackVersions.isEmpty ? nil : assetPackVersions, platform.platform, downloadBaseURL
        )
        let result: SelfHostedManifest.Result
        do {
            result = try await BlockingIO.runOnThreadOfItsOwn {
                try SelfHostedManifest.create(
                    archives: archives,
                    versions: versions,
                    platform: platform,
                    baseURL: baseURL
                )
            }
        } catch {
            throw usageError(error)
        }
        for warning in result.warnings { Console.err("warning: \(warning)") }
        try SelfHostedManifest.write(result.manifest, to: outputPath)
        guard !quiet else { return }
        for line in result.changes { Console.out(line) }
        Console.out("wrote \(outputPath): \(result.manifest.assetPacks.count) pack(s) for \(platform)")
    }
}
