import ArgumentParser
import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

/// `--info-plist`: the app's Info.plist gives the manifest URL, the app group and the first install's limits.
struct InfoPlistOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The app's Info.plist (XML or binary). Its BAManifestURL gives the server when --server is not given; its BAAppGroupID the app group when --app-group is not given (a folder named after the ID in the current folder, e.g. ./group.com.example.game); and, in sync and ensure, its size and domain limits stop the first install (an app group that never held a pack) when the packs it would download go over them, as a device does.",
            valueName: "file"
        )
    )
    var infoPlist: String?

    /// Reads the Info.plist and fills in what `app` and `server` were not given; returns its limits.
    /// - Returns: The limits to enforce, or `nil` without --info-plist.
    /// - Throws: `ValidationError` when the file is not a usable Info.plist.
    func apply(to app: inout AppGroupOptions, server: inout ServerOptions) async throws -> InitialDownloadLimits? {
        guard let infoPlist else { return nil }
        let file = FilePath(infoPlist)
        let check = try await BlockingIO.shortCall { try AppInfoPlist.read(file: file) }
        let errors = (check.plist.map { check.problems + $0.problems(file: infoPlist) } ?? check.problems)
            .filter { $0.severity == .error }
        guard let plist = check.plist, errors.isEmpty else {
            throw ValidationError(
                "--info-plist: " + errors.map(\.description).joined(separator: "\n")
                    + "\n(`ba-mock validate --info-plist \(infoPlist)` lists every problem)"
            )
        }
        if app.appGroup == nil, ProcessInfo.processInfo.environment["BA_SYNC_APP_GROUP"] == nil,
            let id = plist.appGroupID
        {
            app.appGroup = try Self.appGroupFolder(for: id)
        }
        let environment = ProcessInfo.processInfo.environment
        if server.server == nil, server.manifestURL == nil, environment["BA_SYNC_SERVER"] == nil,
            environment["BA_SYNC_MANIFEST_URL"] == nil, let manifestURL = plist.manifestURL
        {
            server.manifestURL = manifestURL  // a full URL to any path, as BAManifestURL is
        }
        return InitialDownloadLimits(plist)
    }

    /// The folder an app group identifier maps to: `./<BAAppGroupID>`, as a Mac keeps a group container in a
    /// folder named after the group. Refuses an ID that is not one plain folder name.
    static func appGroupFolder(for id: String) throws -> String {
        guard !id.isEmpty, id != ".", id != "..", !id.contains("/"), !id.contains("\0") else {
            throw ValidationError(
                "--info-plist: BAAppGroupID \"\(id)\" cannot name a folder; pass --app-group DIR"
            )
        }
        return id
    }
}
