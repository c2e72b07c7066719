import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Installed packs: Apple's status flags, version, sizes, folder.",
        discussion: """
            With a server (--server or BA_SYNC_SERVER) that answers, the flags are relative to what it \
            publishes (updateAvailable, obsolete); without one, or when it does not answer, they are what the \
            app group knows offline, and the output says so. --network offline plays a device without network.
            """
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var plist: InfoPlistOptions
    /// For `--network offline` (and the other conditions, which download nothing here): the root's group.
    @OptionGroup(visibility: .hidden) var downloads: DownloadOptions

    @Argument(help: "One pack ID; default: every installed pack.")
    var id: String?

    func run() async throws {
        var (app, server) = (self.app, self.server)
        _ = try await plist.apply(to: &app, server: &server)
        guard
            let result = try await Session(app: app, server: server, downloads: downloads, needsServer: false).runner()
                .status(of: id)
        else {
            let message = "pack \(id ?? "") is not installed and not known here"
            if app.json { try Console.json(SyncOutput.Error(code: "assetPackNotFound", message: message)) }
            Console.err(message)
            throw ExitCode.failure
        }
        if app.json {
            try Console.json(result)
            return
        }
        if let offline = result.offlineReason { Console.err(offline) }
        Console.table(
            [["PACK", "VERSION", "LANGUAGE", "FILES", "INSTALL", "ARCHIVE DIGEST", "FILE DIGESTS", "STATUS", "PATH"]]
                + result.packs.map(Self.row)
        )
        Console.out(result.appLanguage.line)
        if result.packs.contains(where: {
            $0.installed.map { $0.sha256 == nil && $0.fileDigestsCarried == nil } ?? false
        }) {
            Console.err(
                "archive digest not available: the manifest gave none (as Apple's tools write it); sizes and every "
                    + "file were checked against the pack's index"
            )
        }
    }

    /// One pack's row of the table.
    private static func row(_ pack: SyncOutput.Status.Pack) -> [String] {
        let status = pack.status.joined(separator: ",")
        guard let installed = pack.installed else { return [pack.id, "-", "-", "-", "-", "-", "-", status, "-"] }
        let digest = installed.sha256.map { String($0.prefix(12)) } ?? "not available"
        // The files' own SHA-256: a tar's index holds every one; an Apple Archive carries them (SH2) or not.
        let files =
            installed.fileDigestsCarried.map { carried in
                carried == installed.fileCount ? "all carried" : "\(carried) of \(installed.fileCount) carried"
            } ?? "index"
        return [
            pack.id, "v\(installed.version)", installed.language ?? "-", String(installed.fileCount),
            ByteFormat.string(installed.installSize), digest, files, status, pack.path ?? "-",
        ]
    }
}
