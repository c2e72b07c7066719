import ArgumentParser
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

    @OptionGroup var options: SelfHostedOptions

    @Option(
        name: [.customLong("output-path"), .customShort("o")],
        help: ArgumentHelp("The manifest to write, atomically; the name must end in .json.", valueName: "file.json")
    )
    var outputPath: FilePath

    func validate() throws {
        try options.check(manifest: outputPath)
    }

    func run() async throws {
        let (archives, versions) = (archives, assetPackVersions.isEmpty ? nil : assetPackVersions)
        let (platform, baseURL, path) = (options.platform.platform, options.downloadBaseURL, outputPath)
        try await options.run(writing: path) {
            try await SelfHostedManifest.create(
                archives: archives,
                versions: versions,
                platform: platform,
                baseURL: baseURL,
                writingTo: path
            )
        }
    }
}
