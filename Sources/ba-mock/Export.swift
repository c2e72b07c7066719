import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write an asset folder's packs as a static tree (manifest, assets/<id>) for any web server or CDN.",
        discussion: """
            A web server serving OUT at some URL gives clients what `ba-mock serve` gives them: the same \
            manifest fields, the same pack bytes and digests. Versions are shared with `serve` through \
            FOLDER/.ba-mock/state.json. Pack URLs are relative (assets/<id>) unless --base-url is given. \
            With --platform, a manifest per platform is written beside OUT/manifest (manifest-iOS.json, ...); \
            `ba-mock serve` gives the same at /manifest?platform=iOS. \
            Each pack in OUT/assets is a hard link to the pack built in FOLDER/.ba-mock/packs where both are on \
            one file system (its bytes are written once), else a copy; a pack edited in place there is noticed \
            and built again by the next serve or export. --copy always copies.
            """
    )

    @Argument(help: "The asset folder: packaging manifests (*.json) at its top level.")
    var folder: FilePath = "Assets"

    @Option(help: "The output folder (created if needed).")
    var out: FilePath

    @Option(help: "Base URL for pack URLs, e.g. https://cdn.example.com/packs. (default: relative URLs)")
    var baseURL: String?

    @Option(
        name: .customLong("pack-version"),
        help: ArgumentHelp("Publish pack ID at version N. Repeatable.", valueName: "ID=N")
    )
    var packVersions: [String] = []

    @Option(
        name: .customLong("platform"),
        help: ArgumentHelp(
            "Also write OUT/manifest-<platform>.json with only the packs for that platform (those that list it or list none), as Apple's download-manifest create --ios makes a manifest per platform. Repeatable; iOS, macOS, tvOS or visionOS, any case. (default: OUT/manifest only)",
            valueName: "platform"
        )
    )
    var platforms: [String] = []

    @Flag(help: "Copy each pack into OUT/assets, even where a hard link to the pack built in FOLDER/.ba-mock would do.")
    var copy = false

    @Flag(help: "Print the manifest written instead of a summary.")
    var json = false

    @OptionGroup var build: BuildOptions
    @OptionGroup var deltas: DeltaOptions

    func validate() throws {
        if let baseURL { try checkBaseURL(baseURL) }
        for platform in platforms where DownloadManifest.platform(named: platform) == nil {
            throw ValidationError("--\(DownloadManifest.unknownPlatform(platform))")
        }
    }

    func run() async throws {
        var options = Exporter.Options(folder: folder, out: out)
        options.baseURL = baseURL
        options.pinnedVersions = try PackVersionPins.parse(packVersions)
        options.platforms = platforms.compactMap(DownloadManifest.platform(named:))
        options.packOptions = build.packOptions
        options.deltaDepth = deltas.deltaDepth
        options.linking = !copy
        let report = try await Exporter.export(options, log: { Console.err($0) })
        for warning in report.result.warnings { Console.err("warning: \(warning)") }
        if json {
            Console.out(String(decoding: try report.result.manifest.encoded(), as: UTF8.self))
            return
        }
        Console.out(PackTable.render(report.snapshot))
        Console.out(
            "wrote \(report.result.manifestFile) and "
                + "\(ByteFormat.count(report.result.manifest.assetPacks.count, "pack")) in \(out.appending("assets"))"
        )
        for (platform, file) in report.result.platformManifests.sorted(by: { $0.key < $1.key }) {
            Console.out("wrote \(file): the packs for \(platform)")
        }
    }
}
