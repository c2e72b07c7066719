package import AssetPackClient
internal import AssetPackFormat
package import Foundation
package import SystemPackage

/// What `AssetPackManager.shared` plays: the app group, where the manifest is, the device's platform and
/// language. Read from the environment as `ba-sync` reads it (``fromEnvironment(_:)``), or given in code by a
/// test (`BackgroundAssetsTesting`).
package struct ManagerConfiguration: Sendable {
    /// What the engine plays: the app group (Apple's `BAAppGroupID` container), the download manifest's URL
    /// (Apple's `BAManifestURL`; `nil` for reads, removal and local status only), the platform (iOS unless
    /// told; `nil` sees every pack), the languages and delta updates (ours; a device downloads whole packs).
    package var engine: AssetPackClient.AssetPackManager.Configuration
    /// A PEM CA certificate to trust for https (what `ba-mock serve --tls-self-signed` prints).
    package var caCertificate: String?
    /// The Info.plist's first-install limits, when one was given.
    package var initialDownloadLimits: InitialDownloadLimits?

    /// The app group packs are installed into (the engine's).
    package var appGroup: SystemPackage.FilePath { engine.appGroup }
    /// The download manifest's URL (the engine's).
    package var manifestURL: URL? { engine.manifestURL }
    /// The platform played (the engine's).
    package var platform: String? { engine.platform }

    /// A configuration for `appGroup` and the manifest at `manifestURL`, playing iOS.
    package init(appGroup: SystemPackage.FilePath, manifestURL: URL?) {
        engine = .init(server: nil, manifestURL: manifestURL, appGroup: appGroup, platform: "iOS")
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
                plist = try AppInfoPlist.readValid(file: SystemPackage.FilePath(file))
            } catch let error as AssetPackFormatError where error.code == .invalidManifest {
                return .failure(Problem(description: "BA_SYNC_INFO_PLIST=\(file): \(error.message)"))
            } catch {
                return .failure(Problem(description: "BA_SYNC_INFO_PLIST=\(file): \(error)"))
            }
        }
        // The rule ba-sync plays, with no flags: the environment, then the Info.plist, then the defaults.
        let settings: ClientSettings
        do {
            settings = try ClientSettings.resolve(ClientSettings.Flags(), environment: environment, infoPlist: plist)
        } catch {
            let fix = error.source == "BAAppGroupID" ? "; set BA_SYNC_APP_GROUP" : ""
            return .failure(Problem(description: "\(error)\(fix)"))
        }
        guard let appGroup = settings.appGroup else { return .failure(Problem(description: unconfiguredMessage)) }
        var configuration = ManagerConfiguration(appGroup: appGroup, manifestURL: settings.location?.manifest)
        configuration.engine.platform = settings.platform
        configuration.engine.language = settings.language
        configuration.engine.primaryLanguage = settings.primaryLanguage
        configuration.engine.deltaUpdates = settings.deltaUpdates
        configuration.caCertificate = settings.caCertificate
        configuration.initialDownloadLimits = plist.map(InitialDownloadLimits.init)
        return .success(configuration)
    }
}
