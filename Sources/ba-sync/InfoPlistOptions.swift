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
        let plist: AppInfoPlist
        do {
            plist = try await BlockingIO.shortCall { try AppInfoPlist.readValid(file: file) }
        } catch let error as AssetPackFormatError where error.code == .invalidManifest {
            throw ValidationError(
                "--info-plist: \(error.message)\n(`ba-mock validate --info-plist \(infoPlist)` lists every problem)"
            )
        }
        // Where the Info.plist comes last (``ClientSettings``: flags, then the environment): what it gives
        // becomes the flag the option groups read.
        let environment = ProcessInfo.processInfo.environment
        var flags = app.flags
        (flags.server, flags.manifestURL) = (server.server, server.manifestURL)
        do {
            app.appGroup = try ClientSettings.appGroup(flags, environment: environment, infoPlist: plist)?.string
            let location = try ClientSettings.location(flags, environment: environment, infoPlist: plist)
            if let location, location.source == "BAManifestURL" {
                server.manifestURL = location.manifestURL?.absoluteString  // any path, as BAManifestURL is
            }
        } catch {
            let fix = error.source == "BAAppGroupID" ? "; pass --app-group DIR" : ""
            throw ValidationError("--info-plist: \(error)\(fix)")
        }
        return InitialDownloadLimits(plist)
    }
}
