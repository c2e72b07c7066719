import ArgumentParser
import AssetPackCLI

@main
struct BAMock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ba-mock",
        abstract: "Serve a folder of assets as Apple-hosted-style asset packs, on Linux, without a TLS ceremony.",
        discussion: """
            An asset folder holds packaging manifests (*.json, Apple's format) at its top level and the content \
            they select below it. ba-mock builds one pack archive per manifest (an Apple Archive, .aar with LZFSE, \
            as ba-package writes and a device downloads; or ba-mock's own pax tar with --format tar), publishes a \
            download manifest at /manifest and the packs at /assets/<id>, and rebuilds a pack when its files \
            change.
            """,
        version: ToolVersion.current,
        subcommands: [
            Serve.self, PackageCommand.self, Validate.self, Template.self, Export.self, Publish.self, Inspect.self,
            DownloadManifestCommand.self,
        ],
        defaultSubcommand: Serve.self
    )
}
