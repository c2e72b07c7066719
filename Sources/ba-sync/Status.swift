import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Installed packs: Apple's status flags, version, sizes, folder.",
        discussion: """
            With a server (--server or BA_SYNC_SERVER) that answers, the flags are relative to what it \
            publishes (updateAvailable, obsolete); without one, or when it does not answer, they are what the \
            app group knows offline, and the output says so.
            """
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var plist: InfoPlistOptions

    @Argument(help: "One pack ID; default: every installed pack.")
    var id: String?

    func run() async throws {
        var (app, server) = (self.app, self.server)
        _ = try await plist.apply(to: &app, server: &server)
        let id = self.id
        let ((report, language), _) = try await Session(app: app, server: server, needsServer: false).run {
            manager in
            let reader = manager.reader
            let language = try await BlockingIO.shortCall { AppLanguage(reader) }
            return (try await manager.statusReport(ofAssetPackWithID: id), language)
        }
        if let id, let entry = report.entries.first, entry.installed == nil, entry.status.isEmpty {
            let message = "pack \(id) is not installed and not known here"
            if app.json { try Console.json(SyncOutput.Error(code: "assetPackNotFound", message: message)) }
            Console.err(message)
            throw ExitCode.failure
        }
        if app.json {
            try Console.json(SyncOutput.Status(report, language: language))
            return
        }
        if let reason = report.offlineReason { Console.err(SyncOutput.Status.offlineLine(reason)) }
        Console.table(
            [["PACK", "VERSION", "LANGUAGE", "FILES", "INSTALL", "ARCHIVE DIGEST", "FILE DIGESTS", "STATUS", "PATH"]]
                + report.entries.map(Self.row)
        )
        Console.out(language.line)
        if report.entries.contains(where: { $0.installed?.sha256 == nil && $0.installed?.fileDigestsCarried == nil }) {
            Console.err(
                "archive digest not available: the manifest gave none (as Apple's tools write it); sizes and every "
                    + "file were checked against the pack's index"
            )
        }
    }

    /// One pack's row of the table.
    private static func row(_ entry: AssetPackStatusEntry) -> [String] {
        let status = entry.status.names.joined(separator: ",")
        guard let installed = entry.installed else { return [entry.id, "-", "-", "-", "-", "-", "-", status, "-"] }
        let digest = installed.sha256.map { String($0.prefix(12)) } ?? "not available"
        // The files' own SHA-256: a tar's index holds every one; an Apple Archive carries them (SH2) or not.
        let files =
            installed.fileDigestsCarried.map { carried in
                carried == installed.fileCount ? "all carried" : "\(carried) of \(installed.fileCount) carried"
            } ?? "index"
        return [
            entry.id, "v\(installed.version)", installed.language ?? "-", String(installed.fileCount),
            ByteFormat.string(installed.installSize), digest, files, status, entry.folder?.string ?? "-",
        ]
    }
}
