package import AssetPackClient
internal import AssetPackFormat
package import Foundation
package import SystemPackage

/// What `AssetPackManager.shared` plays: the app group, where the manifest is, the device's platform and
/// language. Read from the environment as `ba-sync` reads it (``fromEnvironment(_:)``), or given in code by a
/// test (`BackgroundAssetsTesting`).
package struct ManagerConfiguration: Sendable {
    /// The app-group directory packs are installed into (Apple's `BAAppGroupID` container).
    package var appGroup: SystemPackage.FilePath
    /// The download manifest's URL (Apple's `BAManifestURL`); `nil` for reads, removal and local status only.
    package var manifestURL: URL?
    /// The platform played (`iOS`, `macOS`, `tvOS`, `visionOS`); `nil` sees every pack.
    package var platform: String? = "iOS"
    /// The app's preferred language (a BCP-47 tag); `nil` takes the app group's, then the environment's.
    package var language: String?
    /// The app's primary language (App Store Connect's), the fallback of the resolved language.
    package var primaryLanguage = "en"
    /// A PEM CA certificate to trust for https (what `ba-mock serve --tls-self-signed` prints).
    package var caCertificate: String?
    /// Updates through ba-mock's deltas (ours; a device downloads whole packs).
    package var deltaUpdates = false
    /// The Info.plist's first-install limits, when one was given.
    package var initialDownloadLimits: InitialDownloadLimits?

    package init(appGroup: SystemPackage.FilePath, manifestURL: URL?) {
        self.appGroup = appGroup
        self.manifestURL = manifestURL
    }

    /// Apple's trap when the bundle names no app group, word for word, then how to configure one here.
    package static let unconfiguredMessage =
        "The app couldn't be validated: The bundle's info dictionary lacks a string value for the key "
        + "\"BAAppGroupID\". (ba-mock: set BA_SYNC_APP_GROUP, or BA_SYNC_INFO_PLIST to an Info.plist with "
        + "BAAppGroupID; a test configures AssetPackManager.shared with BackgroundAssetsTesting's "
        + "withAssetPackServer(serving:) or AssetPackManager.withConfiguration(_:))"

    /// Why the environment does not configure a manager: the message a trap prints.
    package struct Problem: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// The configuration the environment gives, as `ba-sync` reads it: `BA_SYNC_MANIFEST_URL` (else
    /// `BA_SYNC_SERVER`'s `/manifest`, else the Info.plist's `BAManifestURL`), `BA_SYNC_APP_GROUP` (else
    /// `./<BAAppGroupID>` of `BA_SYNC_INFO_PLIST`), `BA_SYNC_PLATFORM` (default iOS; `any` sees every pack),
    /// `BA_SYNC_LANGUAGE`, `BA_SYNC_PRIMARY_LANGUAGE`, `BA_SYNC_CA_CERT` and `BA_SYNC_DELTA`.
    /// - Returns: The configuration, or the problem (Apple's trap text when no app group is named).
    package static func fromEnvironment(_ environment: [String: String]) -> Result<Self, Problem> {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        var plist: AppInfoPlist?
        if let file = value("BA_SYNC_INFO_PLIST") {
            do {
                let check = try AppInfoPlist.read(file: SystemPackage.FilePath(file))
                let errors = (check.plist.map { check.problems + $0.problems(file: file) } ?? check.problems)
                    .filter { $0.severity == .error }
                guard let read = check.plist, errors.isEmpty else {
                    let listed = errors.map(\.description).joined(separator: "\n")
                    return .failure(Problem(description: "BA_SYNC_INFO_PLIST=\(file): \(listed)"))
                }
                plist = read
            } catch {
                return .failure(Problem(description: "BA_SYNC_INFO_PLIST=\(file): \(error)"))
            }
        }
        let appGroup: SystemPackage.FilePath
        if let folder = value("BA_SYNC_APP_GROUP") {
            appGroup = SystemPackage.FilePath(folder)
        } else if let id = plist?.appGroupID {
            guard !id.isEmpty, id != ".", id != "..", !id.contains("/"), !id.contains("\0") else {
                return .failure(
                    Problem(description: "BAAppGroupID \"\(id)\" cannot name a folder; set BA_SYNC_APP_GROUP")
                )
            }
            appGroup = SystemPackage.FilePath(id)  // ./<BAAppGroupID>, as ba-sync --info-plist takes it
        } else {
            return .failure(Problem(description: unconfiguredMessage))
        }
        var manifestURL: URL?
        for (name, text) in [
            ("BA_SYNC_MANIFEST_URL", value("BA_SYNC_MANIFEST_URL")),
            ("BA_SYNC_SERVER", value("BA_SYNC_SERVER").map(serverManifest)),
            ("BAManifestURL", plist?.manifestURL),
        ] {
            guard let text else { continue }
            guard let url = URL(string: text), DownloadManifest.fetchProblem(with: url) == nil else {
                return .failure(Problem(description: "\(name) \(text) is not an http or https URL"))
            }
            manifestURL = url
            break
        }
        var configuration = ManagerConfiguration(appGroup: appGroup, manifestURL: manifestURL)
        if let platform = value("BA_SYNC_PLATFORM") {
            configuration.platform = platform.lowercased() == "any" ? nil : platform
        }
        configuration.language = value("BA_SYNC_LANGUAGE")
        configuration.primaryLanguage = value("BA_SYNC_PRIMARY_LANGUAGE") ?? "en"
        configuration.caCertificate = value("BA_SYNC_CA_CERT")
        configuration.deltaUpdates = ["1", "true", "yes", "on"].contains(value("BA_SYNC_DELTA")?.lowercased() ?? "")
        configuration.initialDownloadLimits = plist.map(InitialDownloadLimits.init)
        return .success(configuration)
    }

    /// `BA_SYNC_SERVER`'s manifest: the server's `/manifest`, or the URL itself when it names it already.
    private static func serverManifest(_ server: String) -> String {
        let trimmed = server.hasSuffix("/") ? String(server.dropLast()) : server
        return trimmed.hasSuffix("/manifest") ? trimmed : trimmed + "/manifest"
    }
}
