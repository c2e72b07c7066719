import AssetPackFormat
import Foundation
import SystemPackage

/// The settings a client plays, each from the first place that gives it: a flag, else the environment
/// (`BA_SYNC_*`), else the app's Info.plist (`BAAppGroupID`, `BAManifestURL`), else its default. `ba-sync`'s
/// commands and `AssetPackManager.shared` (BackgroundAssets, which has no flags) both take theirs from here:
/// one rule, written once, tested as a library call.
public struct ClientSettings: Sendable, Equatable {
    /// What flags gave; `nil` where a flag was not given.
    public struct Flags: Sendable, Equatable {
        public var appGroup: String?
        public var server: String?
        public var manifestURL: String?
        public var platform: String?
        public var language: String?
        public var primaryLanguage: String?
        public var deltaUpdates: Bool?
        public var caCertificate: String?

        public init() {}
    }

    /// Where the manifest is, and which flag, variable or key said so (for messages).
    public struct Location: Sendable, Equatable {
        /// A server whose manifest is at `<server>/manifest` (`--server`, `BA_SYNC_SERVER`), or `nil` when the
        /// manifest was named by its own URL.
        public var server: URL?
        /// The manifest's URL, whichever way it was given.
        public var manifest: URL
        /// `--server`, `BA_SYNC_MANIFEST_URL`, `BAManifestURL`...
        public var source: String

        /// The manifest's own URL at any path (`--manifest-url`, `BA_SYNC_MANIFEST_URL`, `BAManifestURL`), or
        /// `nil` when a server names it: what ``AssetPackManager/Configuration/manifestURL`` takes.
        public var manifestURL: URL? { server == nil ? manifest : nil }
    }

    /// A value that cannot be used: where it came from, the value, and what is wrong with it.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// `--server`, `BA_SYNC_DELTA`, `BAAppGroupID`...
        public var source: String
        public var value: String
        /// What is wrong, e.g. `is not an http:// or https:// URL; give e.g. http://127.0.0.1:8443`.
        public var reason: String

        /// `--server x is not…`, `BA_SYNC_DELTA=x is not…`, `BAAppGroupID "a/b" cannot…`.
        public var description: String {
            source.hasPrefix("BA_SYNC_") ? "\(source)=\(value) \(reason)" : "\(source) \(value) \(reason)"
        }
    }

    /// The app group; `nil` when nothing names one.
    public var appGroup: FilePath?
    /// Where the manifest is; `nil` when nothing names it (reads, removal and local status only).
    public var location: Location?
    /// The platform played; `nil` plays `any` (every pack).
    public var platform: String?
    /// The app's preferred language as given; `nil` leaves it to the app group, then the environment.
    public var language: String?
    public var primaryLanguage: String
    /// Updates through ba-mock's deltas (ours; a device downloads whole packs).
    public var deltaUpdates: Bool
    /// A PEM CA certificate to trust for https.
    public var caCertificate: String?

    /// The defaults, written once: what a flag's help and the manager's configuration both say.
    public static let defaultPlatform = "iOS"
    public static let defaultPrimaryLanguage = "en"
    public static let defaultConcurrency = 3
    public static let defaultRetries = 5
    /// Seconds for a connection attempt, a manifest fetch, and a download that receives nothing.
    public static let defaultTimeoutSeconds = 30.0

    /// Every setting, each from its first source.
    /// - Throws: ``Problem`` for the first value that cannot be used.
    public static func resolve(_ flags: Flags, environment: [String: String], infoPlist: AppInfoPlist?) throws(Problem)
        -> ClientSettings
    {
        ClientSettings(
            appGroup: try appGroup(flags, environment: environment, infoPlist: infoPlist),
            location: try location(flags, environment: environment, infoPlist: infoPlist),
            platform: platform(flags, environment: environment).played,
            language: language(flags, environment: environment),
            primaryLanguage: primaryLanguage(flags, environment: environment),
            deltaUpdates: try deltaUpdates(flags, environment: environment),
            caCertificate: caCertificate(flags, environment: environment)
        )
    }

    /// `environment[name]`, an empty value counting as not set.
    static func variable(_ name: String, in environment: [String: String]) -> String? {
        environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `--app-group`, else `BA_SYNC_APP_GROUP`, else `./<BAAppGroupID>` (as a Mac keeps a group container
    /// in a folder named after the group); `nil` when none names one.
    /// - Throws: ``Problem`` when `BAAppGroupID` is not one plain folder name.
    public static func appGroup(_ flags: Flags, environment: [String: String], infoPlist: AppInfoPlist?)
        throws(Problem) -> FilePath?
    {
        if let given = flags.appGroup.flatMap({ $0.isEmpty ? nil : $0 })
            ?? variable("BA_SYNC_APP_GROUP", in: environment)
        {
            return FilePath(given)
        }
        guard let id = infoPlist?.appGroupID else { return nil }
        guard !id.isEmpty, id != ".", id != "..", !id.contains("/"), !id.contains("\0") else {
            throw Problem(source: "BAAppGroupID", value: "\"\(id)\"", reason: "cannot name a folder")
        }
        return FilePath(id)
    }

    /// `--manifest-url` or `--server`, else `BA_SYNC_MANIFEST_URL`, else `BA_SYNC_SERVER`, else the Info.plist's
    /// `BAManifestURL`; a server's URL may name its `/manifest` too. `nil` when none names it.
    /// - Throws: ``Problem`` when the URL is not http or https with a host and a valid port.
    public static func location(_ flags: Flags, environment: [String: String], infoPlist: AppInfoPlist?)
        throws(Problem) -> Location?
    {
        func given(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
        let candidates: [(source: String, value: String?, isServer: Bool)] =
            given(flags.manifestURL) != nil || given(flags.server) != nil
            ? [("--manifest-url", given(flags.manifestURL), false), ("--server", given(flags.server), true)]
            : [
                ("BA_SYNC_MANIFEST_URL", variable("BA_SYNC_MANIFEST_URL", in: environment), false),
                ("BA_SYNC_SERVER", variable("BA_SYNC_SERVER", in: environment), true),
                ("BAManifestURL", infoPlist?.manifestURL, false),
            ]
        guard let (source, value, isServer) = candidates.first(where: { $0.value != nil }), let value else {
            return nil
        }
        let example = isServer ? "http://127.0.0.1:8443" : "https://cdn.example.com/catalog.json"
        guard let url = URL(string: value), DownloadManifest.fetchProblem(with: url) == nil else {
            let problem = URL(string: value).flatMap(DownloadManifest.fetchProblem(with:)) ?? "does not parse"
            throw Problem(source: source, value: value, reason: "\(problem); give e.g. \(example)")
        }
        guard isServer else { return Location(server: nil, manifest: url, source: source) }
        // The manifest's own URL (as `ba-mock serve` prints it) names the server as well.
        let server = url.lastPathComponent == "manifest" ? url.deletingLastPathComponent() : url
        return Location(server: server, manifest: server.appendingPathComponent("manifest"), source: source)
    }

    /// `--language`, else `BA_SYNC_LANGUAGE`; `nil` leaves the language to the app group, then the environment's
    /// `LANGUAGE`, `LC_ALL` or `LANG` (``AssetPackReader``).
    public static func language(_ flags: Flags, environment: [String: String]) -> String? {
        flags.language ?? variable("BA_SYNC_LANGUAGE", in: environment)
    }

    /// `--primary-language`, else `BA_SYNC_PRIMARY_LANGUAGE`, else en.
    public static func primaryLanguage(_ flags: Flags, environment: [String: String]) -> String {
        flags.primaryLanguage ?? variable("BA_SYNC_PRIMARY_LANGUAGE", in: environment) ?? defaultPrimaryLanguage
    }

    /// `--ca-cert`, else `BA_SYNC_CA_CERT`; `nil` trusts the system's roots only.
    public static func caCertificate(_ flags: Flags, environment: [String: String]) -> String? {
        flags.caCertificate ?? variable("BA_SYNC_CA_CERT", in: environment)
    }

    /// `--platform`, else `BA_SYNC_PLATFORM`, else iOS: as given, where from, and the platform played (`nil`
    /// for `any`, every pack).
    public static func platform(_ flags: Flags, environment: [String: String]) -> (
        given: String, source: String, played: String?
    ) {
        let (given, source) =
            if let flag = flags.platform {
                (flag, "--platform")
            } else if let variable = variable("BA_SYNC_PLATFORM", in: environment) {
                (variable, "BA_SYNC_PLATFORM")
            } else {
                (defaultPlatform, "default")
            }
        return (given, source, given.lowercased() == "any" ? nil : given)
    }

    /// `--delta` or `--no-delta`, else `BA_SYNC_DELTA` (1, true, yes, on; 0, false, no, off; empty is no), else
    /// whole packs.
    /// - Throws: ``Problem`` when `BA_SYNC_DELTA` is none of those.
    public static func deltaUpdates(_ flags: Flags, environment: [String: String]) throws(Problem) -> Bool {
        if let flag = flags.deltaUpdates { return flag }
        guard let value = environment["BA_SYNC_DELTA"] else { return false }
        switch value.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off", "": return false
        default: throw Problem(source: "BA_SYNC_DELTA", value: value, reason: "is not 1 or 0 (or true, false, yes, no)")
        }
    }
}
