import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackMatrix
import SystemPackage

extension PackFormat: ExpressibleByArgument {}

struct UpgradeMatrixCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade-matrix",
        abstract: "Play every update a user can take between releases, each in a fresh app group, and check it.",
        discussion: """
            RELEASE... are the releases, oldest first: asset folders (built in turn, as `ba-mock serve` would \
            publish them: Apple Archives unless --format tar, a pack's version going up when its archive \
            changes), folders `ba-mock export` wrote \
            (a manifest file inside), or download manifests (files; relative pack URLs resolve beside them), \
            served as they are. They are served on 127.0.0.1 side by side. For each \
            pair, a fresh app group gets every pack of the older release, then what a device does after an app \
            update to the newer one (sync --event update: updates, removals of obsolete packs, new packs by \
            policy); a first install at the newest is played too. Each pair is checked: every pack the newer \
            release lists at its version, none it dropped still there, every file's digest right. Each row \
            gives the bytes downloaded, the time, the status flags before (outOfDate, updateAvailable, obsolete) \
            and the updates during; a failure names the pair and the command that replays it alone. \
            --platform iOS|macOS|tvOS|visionOS|any plays that platform (default iOS); --delta updates through \
            ba-mock's deltas where the newer release lists one (ours; default: whole packs, as a device); \
            --json prints one {"event": "pair", ...} line per pair as it ends, then the {"event": "result"} line. \
            Exits 1 when a pair failed.
            """
    )

    @Argument(help: ArgumentHelp("The releases, oldest first.", valueName: "release"))
    var releases: [String]

    @Flag(help: "Every older release to every newer one (and a first install at each); default: each to the newest.")
    var allPairs = false

    @Option(help: ArgumentHelp("Play one pair only, e.g. 2:5 (0:N is a first install at N).", valueName: "from:to"))
    var only: String?

    @Option(help: "Keep each pair's app group in DIR/<from>-to-<to> to look at; default: removed at the end.")
    var keepAppGroups: String?

    // --json, --platform and --delta are the root command's (ba-sync's groups), given before or after the
    // subcommand; shown in the discussion, as the rest of those groups does not apply here.
    @OptionGroup(visibility: .hidden) var app: AppGroupOptions
    @OptionGroup(visibility: .hidden) var server: ServerOptions
    @OptionGroup(visibility: .hidden) var downloads: DownloadOptions

    @Option(help: "Also write the report as one HTML page to FILE.")
    var html: String?

    @Option(
        help: ArgumentHelp(
            "The format asset folders are built in, as `ba-mock serve --format` publishes them: aar (Apple Archive, LZFSE: serve's default and what a device downloads) or tar (ba-mock's own, zstd). Exports and download manifests are served as they are.",
            valueName: "aar|tar"
        )
    )
    var format: PackFormat = .aar

    func validate() throws {
        if let only, parsedOnly == nil { throw ValidationError("--only \(only) is not FROM:TO, e.g. 2:5 or 0:3") }
        // The groups shared with the other commands hold options that mean nothing here: said, not ignored.
        let ignored = [
            ("--server", server.server != nil), ("--manifest-url", server.manifestURL != nil),
            ("--app-group", app.appGroup != nil), ("--free-space", downloads.device.freeSpace != nil),
            ("--network", downloads.device.network != "wifi"), ("--network-drop", downloads.device.networkDrop != nil),
            ("--resumable", downloads.resumable),
        ]
        if let (name, _) = ignored.first(where: \.1) {
            throw ValidationError(
                "\(name) does not apply to upgrade-matrix: it serves the releases itself, in app groups of its own "
                    + "(--keep-app-groups DIR keeps them), on a happy device"
            )
        }
    }

    private var parsedOnly: (from: Int, to: Int)? {
        let parts = only?.split(separator: ":", omittingEmptySubsequences: false) ?? []
        guard parts.count == 2, let from = Int(parts[0]), let to = Int(parts[1]), from >= 0 else { return nil }
        return (from, to)
    }

    func run() async throws {
        var request = UpgradeMatrix.Request(releases: releases.map { FilePath($0) })
        request.allPairs = allPairs
        request.only = parsedOnly
        request.keepAppGroups = keepAppGroups.map { FilePath($0) }
        request.platform = server.playedPlatform
        request.deltaUpdates = downloads.deltaUpdates
        request.htmlFile = html.map { FilePath($0) }
        request.packOptions = PackBuildOptions(format: format)
        let json = app.json
        let report: UpgradeMatrix.Report
        do {
            report = try await UpgradeMatrix.run(request) { MatrixOutput.show($0, json: json) }
        } catch let error as UpgradeMatrixError where error.isUsage {
            throw ValidationError(error.description)  // main prints it (a JSON line with --json)
        } catch {
            if json { Console.jsonError(error) }
            throw error
        }
        if json { try Console.json(report) } else { Console.out(MatrixOutput.table(report)) }
        if report.failures > 0 { throw ExitCode.failure }
    }
}
