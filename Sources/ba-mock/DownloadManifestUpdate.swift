import ArgumentParser
import AssetPackServer
import SystemPackage

struct DownloadManifestUpdate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Carry a published manifest's versions forward (ba-package download-manifest update).",
        discussion: """
            Edits MANIFEST in place (atomically). As third-party scripts use Apple's tool: a pack handed in with \
            --asset-pack-paths goes up one version and the packs not handed in are left alone. Inferred, and \
            ba-mock's choice: a pack whose archive is the one the manifest describes (same sha256 and size) keeps \
            its version, so an update run twice changes nothing; an entry without a sha256 (Apple's) is bumped; a \
            pack the manifest does not list is added at version 0. Apple's tool accepts only paths ending in \
            .json after --asset-pack-paths (a quirk scripts work around with links); ba-mock takes any name.
            """
    )

    @Argument(help: "The published download manifest (ends in .json), rewritten in place.")
    var manifest: FilePath

    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp("Archives of new or changed packs; the flag may be repeated.", valueName: "path")
    )
    var assetPackPaths: [FilePath]

    @OptionGroup var options: SelfHostedOptions

    func validate() throws {
        try options.check(manifest: manifest)
    }

    func run() async throws {
        let (path, archives) = (manifest, assetPackPaths)
        let (platform, baseURL) = (options.platform.platform, options.downloadBaseURL)
        try await options.run(writing: path) {
            try await SelfHostedManifest.update(
                manifestAt: path,
                archives: archives,
                platform: platform,
                baseURL: baseURL
            )
        }
    }
}
