import AssetPackFormat
import Foundation
import SystemPackage
import Testing

@testable import AssetPackClient

/// Flag > environment > Info.plist > default, for every setting, as one library call (ba-sync's commands and
/// `AssetPackManager.shared` read theirs through it): each rule checked from each side.
@Suite("Client settings: where each comes from")
struct ClientSettingsTests {
    let plist: AppInfoPlist = {
        var plist = AppInfoPlist(manifestURL: "https://plist.example.com/catalog.json")
        plist.appGroupID = "group.com.example.game"
        return plist
    }()

    func resolve(_ flags: ClientSettings.Flags = .init(), _ environment: [String: String] = [:], plist: Bool = true)
        throws -> ClientSettings
    {
        try ClientSettings.resolve(flags, environment: environment, infoPlist: plist ? self.plist : nil)
    }

    @Test func nothingGivenIsTheDefaults() throws {
        let settings = try resolve(plist: false)
        #expect(settings.appGroup == nil && settings.location == nil)
        #expect(settings.platform == "iOS" && settings.language == nil && settings.primaryLanguage == "en")
        #expect(settings.deltaUpdates == false && settings.caCertificate == nil)
    }

    @Test func theAppGroupIsTheFlagsElseTheEnvironmentsElseTheInfoPlistsFolder() throws {
        var flags = ClientSettings.Flags()
        #expect(try resolve().appGroup == "group.com.example.game")
        #expect(try resolve(flags, ["BA_SYNC_APP_GROUP": "/env/group"]).appGroup == "/env/group")
        #expect(try resolve(flags, ["BA_SYNC_APP_GROUP": ""]).appGroup == "group.com.example.game", "empty is unset")
        flags.appGroup = "/flag/group"
        #expect(try resolve(flags, ["BA_SYNC_APP_GROUP": "/env/group"]).appGroup == "/flag/group")
        var bad = plist
        bad.appGroupID = "../up"
        let problem = #expect(throws: ClientSettings.Problem.self) {
            try ClientSettings.resolve(.init(), environment: [:], infoPlist: bad)
        }
        #expect(problem?.description == #"BAAppGroupID "../up" cannot name a folder"#)
    }

    @Test func theManifestIsAFlagElseTheManifestURLElseTheServerElseBAManifestURL() throws {
        let environment = [
            "BA_SYNC_MANIFEST_URL": "https://env.example.com/m.json", "BA_SYNC_SERVER": "http://127.0.0.1:9/",
        ]
        #expect(try resolve().location?.manifest.absoluteString == "https://plist.example.com/catalog.json")
        #expect(try resolve().location?.source == "BAManifestURL")
        #expect(try resolve(.init(), environment).location?.manifest.absoluteString == "https://env.example.com/m.json")
        let server = try resolve(.init(), ["BA_SYNC_SERVER": "http://127.0.0.1:9/manifest"]).location
        #expect(server?.server?.absoluteString == "http://127.0.0.1:9/" && server?.source == "BA_SYNC_SERVER")
        #expect(server?.manifest.absoluteString == "http://127.0.0.1:9/manifest")
        var flags = ClientSettings.Flags()
        flags.server = "http://127.0.0.1:8443"
        let given = try resolve(flags, environment).location
        #expect(given?.server?.absoluteString == "http://127.0.0.1:8443" && given?.source == "--server")
        flags.server = "ftp://127.0.0.1"
        let problem = #expect(throws: ClientSettings.Problem.self) { try resolve(flags, environment) }
        #expect(
            problem?.description
                == "--server ftp://127.0.0.1 is not an http:// or https:// URL; give e.g. http://127.0.0.1:8443"
        )
        let fromEnvironment = #expect(throws: ClientSettings.Problem.self) {
            try resolve(.init(), ["BA_SYNC_MANIFEST_URL": "catalog.json"])
        }
        #expect(fromEnvironment?.description.hasPrefix("BA_SYNC_MANIFEST_URL=catalog.json is not") == true)
    }

    @Test func platformLanguagesCertificateAndDeltasTakeTheFlagElseTheEnvironment() throws {
        let environment = [
            "BA_SYNC_PLATFORM": "any", "BA_SYNC_LANGUAGE": "fr", "BA_SYNC_PRIMARY_LANGUAGE": "de",
            "BA_SYNC_CA_CERT": "/env/ca.pem", "BA_SYNC_DELTA": "yes",
        ]
        let fromEnvironment = try resolve(.init(), environment)
        #expect(fromEnvironment.platform == nil, "any plays every pack")
        #expect(fromEnvironment.language == "fr" && fromEnvironment.primaryLanguage == "de")
        #expect(fromEnvironment.caCertificate == "/env/ca.pem" && fromEnvironment.deltaUpdates)
        var flags = ClientSettings.Flags()
        (flags.platform, flags.language, flags.primaryLanguage) = ("macOS", "ja", "en")
        (flags.caCertificate, flags.deltaUpdates) = ("/flag/ca.pem", false)
        let fromFlags = try resolve(flags, environment)
        #expect(fromFlags.platform == "macOS" && fromFlags.language == "ja" && fromFlags.primaryLanguage == "en")
        #expect(fromFlags.caCertificate == "/flag/ca.pem" && !fromFlags.deltaUpdates)
        #expect(ClientSettings.platform(flags, environment: environment).source == "--platform")
        #expect(ClientSettings.platform(.init(), environment: environment).source == "BA_SYNC_PLATFORM")
        let problem = #expect(throws: ClientSettings.Problem.self) { try resolve(.init(), ["BA_SYNC_DELTA": "maybe"]) }
        #expect(problem?.description == "BA_SYNC_DELTA=maybe is not 1 or 0 (or true, false, yes, no)")
        #expect(try resolve(.init(), ["BA_SYNC_DELTA": ""]).deltaUpdates == false)
    }

    /// The manager's configuration starts from the same defaults, and is a value: changed for a second manager
    /// without touching the first's.
    @Test func theManagersConfigurationStartsFromTheSameDefaults() async throws {
        let base = AssetPackManager.Configuration(server: nil, appGroup: "/tmp/group")
        #expect(base.maxConcurrentDownloads == ClientSettings.defaultConcurrency)
        #expect(base.retryPolicy.retries == ClientSettings.defaultRetries)
        #expect(base.manifestTimeout == .seconds(ClientSettings.defaultTimeoutSeconds))
        #expect(base.stallTimeout == .seconds(ClientSettings.defaultTimeoutSeconds))
        #expect(base.primaryLanguage == ClientSettings.defaultPrimaryLanguage && base.platform == nil)
        var deltas = base
        deltas.deltaUpdates = true
        let first = try AssetPackManager(configuration: base)
        let second = try AssetPackManager(configuration: deltas)
        let (firstDeltas, secondDeltas) = (await first.installer.deltaUpdates, await second.installer.deltaUpdates)
        #expect(firstDeltas == false && secondDeltas == true)
    }
}
