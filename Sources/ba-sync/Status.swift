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
            if app.json { Console.json(["event": "error", "code": "assetPackNotFound", "message": message]) }
            Console.err(message)
            throw ExitCode.failure
        }
        let offline = report.offlineReason.map { "offline: \($0.message); flags are what the app group knows" }
        if app.json {
            var result: [String: Any] = [
                "event": "result", "online": report.offlineReason == nil,
                "packs": report.entries.map { entry in
                    var row: [String: Any] = [
                        "id": entry.id, "status": entry.status.names, "statusRawValue": Int(entry.status.rawValue),
                    ]
                    if let installed = entry.installed {
                        row["version"] = installed.version
                        row["installSize"] = installed.installSize
                        row["fileCount"] = installed.fileCount
                        row["downloadPolicy"] = installed.downloadPolicy.name
                        row["language"] = installed.language ?? NSNull()
                        // How a localized pack came: for the language (reconcile may remove it) or by hand.
                        row["installedFor"] =
                            installed.language == nil
                            ? NSNull() : installed.installedForLanguage == true ? "language" : "ensure"
                        // Without a digest in the manifest (Apple's tools write none), the archive's digest was
                        // not checked; every file was, against the pack's index.
                        row["sha256"] = installed.sha256 ?? NSNull()
                        row["archiveDigestVerified"] = installed.sha256 != nil
                        // From an Apple Archive: how many files were checked against the SHA-256 they carry.
                        row["fileDigestsCarried"] = installed.fileDigestsCarried ?? NSNull()
                    }
                    if let folder = entry.folder { row["path"] = folder.string }
                    return row
                },
            ]
            if let offline { result["offlineReason"] = offline }
            result["language"] = language.preferred
            result["resolvedLanguage"] = language.resolved ?? NSNull()
            Console.json(result)
            return
        }
        if let offline { Console.err(offline) }
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

/// The app's language as the app group plays it: what `status` and `list` show under their table.
struct AppLanguage: Sendable {
    /// The preferred language (given, kept in the app group, or the environment's).
    var preferred: String
    /// The language the localized packs resolve to; `nil` when no localized pack is installed.
    var resolved: String?
    /// The primary language.
    var primary: String

    init(_ reader: AssetPackReader) {
        preferred = reader.preferredLanguage.description
        resolved = reader.resolvedLanguage?.description
        primary = reader.primaryLanguage.description
    }

    init(preferred: String, resolved: String?, primary: String) {
        (self.preferred, self.resolved, self.primary) = (preferred, resolved, primary)
    }

    /// `language: fr (the app's); localized packs resolve to fr; primary en`.
    var line: String {
        "language: \(preferred) (the app's); localized packs resolve to "
            + (resolved ?? "none (no localized pack is installed)") + "; primary \(primary)"
    }
}
