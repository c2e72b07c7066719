import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// An app's Info.plist, written by Python's plistlib (XML and binary) and read back: its Background Assets keys
/// and what they allow.
@Suite("Info.plist")
struct AppInfoPlistTests {
    static let appleHosted = """
        {"CFBundleIdentifier": "com.example.game", "BAAppGroupID": "group.com.example.game",
         "BAHasManagedAssetPacks": true, "BAUsesAppleHosting": true}
        """

    static let selfHosted = """
        {"BAAppGroupID": "group.com.example.game", "BAHasManagedAssetPacks": true,
         "BAManifestURL": "https://cdn.example.com/manifest",
         "BAInitialDownloadRestrictions": {"BADownloadAllowance": 699, "BAEssentialDownloadAllowance": 900,
           "BADownloadDomainAllowList": ["cdn.example.com", "*.assets.example.com"]},
         "BAEssentialMaxInstallSize": 999, "BAMaxInstallSize": 1999}
        """

    func read(_ json: String, _ format: PlistFormat) throws -> (AppInfoPlistCheck, String) {
        let scratch = try Scratch()
        let file = scratch.root.appending("Info.plist")
        try writeInfoPlist(json, format: format, to: file)
        return (try AppInfoPlist.read(file: file), file.string)
    }

    @Test(arguments: PlistFormat.allCases)
    func appleHostedWithTheThreeKeysHasNoProblem(format: PlistFormat) throws {
        let (check, file) = try read(Self.appleHosted, format)
        let plist = try #require(check.plist)
        #expect(check.problems.isEmpty)
        #expect(plist.appGroupID == "group.com.example.game")
        #expect(plist.hasManagedAssetPacks == true && plist.usesAppleHosting == true)
        #expect(plist.backgroundAssetsKeys == ["BAAppGroupID", "BAHasManagedAssetPacks", "BAUsesAppleHosting"])
        #expect(plist.problems(file: file).isEmpty)
    }

    @Test(arguments: PlistFormat.allCases)
    func appleHostedWithOtherKeysIsAnErrorPerKey(format: PlistFormat) throws {
        let json = """
            {"BAAppGroupID": "group.com.example.game", "BAHasManagedAssetPacks": true, "BAUsesAppleHosting": true,
             "BAManifestURL": "https://cdn.example.com/manifest", "BAMaxInstallSize": 100}
            """
        let (check, file) = try read(json, format)
        #expect(check.problems.isEmpty)
        let problems = try #require(check.plist).problems(file: file)
        let reason =
            "is set in an Apple-hosted app (BAUsesAppleHosting YES); Apple says to omit every Background Assets key "
            + "but BAAppGroupID, BAHasManagedAssetPacks and BAUsesAppleHosting"
        #expect(
            problems.map(\.description) == [
                "\(file): BAManifestURL: \(reason). Fix: remove BAManifestURL, or set BAUsesAppleHosting to NO to "
                    + "host the packs yourself",
                "\(file): BAMaxInstallSize: \(reason). Fix: remove BAMaxInstallSize, or set BAUsesAppleHosting to NO "
                    + "to host the packs yourself",
            ]
        )
        #expect(problems.allSatisfy { $0.severity == .error })
    }

    @Test(arguments: PlistFormat.allCases)
    func selfHostedWithoutInitialDownloadRestrictionsSaysTheDeviceTraps(format: PlistFormat) throws {
        let json = """
            {"BAAppGroupID": "group.com.example.game", "BAHasManagedAssetPacks": true,
             "BAManifestURL": "https://cdn.example.com/manifest", "BAEssentialMaxInstallSize": 1,
             "BAMaxInstallSize": 1}
            """
        let (check, file) = try read(json, format)
        #expect(check.problems.isEmpty)
        let problems = try #require(check.plist).problems(file: file)
        #expect(problems.count == 1)
        #expect(problems.first?.key == "BAInitialDownloadRestrictions")
        #expect(problems.first?.severity == .error)
        #expect(
            problems.first?.message
                == "is missing; a self-hosted managed app traps without it (\"BUG IN CLIENT OF BackgroundAssets: The "
                + "app must contain a dictionary with a key named BAInitialDownloadRestrictions\")"
        )
    }

    @Test(arguments: PlistFormat.allCases)
    func selfHostedComplete(format: PlistFormat) throws {
        let (check, file) = try read(Self.selfHosted, format)
        let plist = try #require(check.plist)
        #expect(check.problems.isEmpty)
        #expect(plist.problems(file: file).isEmpty)
        #expect(plist.manifestURL == "https://cdn.example.com/manifest")
        #expect(plist.initialDownloadRestrictions?.downloadAllowance == 699)
        #expect(plist.initialDownloadRestrictions?.essentialDownloadAllowance == 900)
        #expect(plist.initialDownloadRestrictions?.domainAllowList == ["cdn.example.com", "*.assets.example.com"])
        #expect(plist.essentialMaxInstallSize == 999 && plist.maxInstallSize == 1999)
    }

    @Test(arguments: PlistFormat.allCases)
    func selfHostedKeysThatAreMissingOrWrong(format: PlistFormat) throws {
        let json = """
            {"BAHasManagedAssetPacks": false, "BAManifestURL": "http://cdn.example.com/manifest",
             "BAInitialDownloadRestrictions": {"BADownloadAllowance": 1,
               "BADownloadDomainAllowList": ["https://cdn.example.com", "cdn.*.com", "ok.example.com", "host:8443"]}}
            """
        let (check, file) = try read(json, format)
        #expect(check.problems.isEmpty)
        let problems = try #require(check.plist).problems(file: file)
        let prefix = "BAInitialDownloadRestrictions."
        #expect(
            problems.map { "\($0.severity.rawValue) \($0.key): \($0.message)" } == [
                "error BAAppGroupID: is missing: the app and its downloader extension share packs through an app group",
                "error BAHasManagedAssetPacks: is NO: the system does not manage asset packs (AssetPackManager)",
                "warning BAManifestURL: is http, not https: App Transport Security keeps a device from fetching it",
                "error \(prefix)BAEssentialDownloadAllowance: is missing (or has the wrong type); Apple's page says it "
                    + "is required to use Background Assets",
                "error \(prefix)BADownloadDomainAllowList[0]: is \"https://cdn.example.com\": a URL, not a DNS name",
                "error \(prefix)BADownloadDomainAllowList[1]: is \"cdn.*.com\": a wildcard that is not a leading *.",
                "error \(prefix)BADownloadDomainAllowList[3]: is \"host:8443\": a name with a port; the list holds DNS "
                    + "names only",
                "warning BAEssentialMaxInstallSize: is missing; Apple's page says it is required, and the App Store "
                    + "shows it as the app's size",
                "warning BAMaxInstallSize: is missing; Apple's page says it is required, and the App Store shows it as "
                    + "the app's size",
            ]
        )
        var noURL = try #require(check.plist)
        noURL.manifestURL = nil
        #expect(noURL.problems(file: file).map(\.key).contains("BAManifestURL"))
        noURL.manifestURL = "ftp://cdn.example.com/manifest"
        #expect(
            noURL.problems(file: file).first { $0.key == "BAManifestURL" }?.message
                == "is \"ftp://cdn.example.com/manifest\": a ftp URL, not https"
        )
    }

    /// Tutorial (essential) and Levels (prefetch) download at first install; Extras (on demand) does not count.
    static func manifest(levelsURL: String = "assets/Levels", tutorialURL: String = "assets/Tutorial")
        -> DownloadManifest
    {
        func entry(_ id: String, _ url: String, _ policy: DownloadPolicy, download: Int64, install: Int64)
            -> DownloadManifest.Entry
        {
            DownloadManifest.Entry(
                id: id,
                url: url,
                version: 1,
                downloadSize: download,
                downloadPolicy: policy,
                sha256: nil,
                installSize: install,
                fileCount: 1,
                compression: nil
            )
        }
        return DownloadManifest(assetPacks: [
            entry("Extras", "https://elsewhere.example.org/x", .onDemand, download: 1 << 40, install: 1 << 40),
            entry(
                "Levels",
                levelsURL,
                .prefetch(installationEventTypes: [.firstInstallation]),
                download: 700,
                install: 2000
            ),
            entry(
                "Tutorial",
                tutorialURL,
                .essential(installationEventTypes: [.firstInstallation]),
                download: 600,
                install: 1000
            ),
        ])
    }

    @Test(arguments: PlistFormat.allCases)
    func packsOverEachOfTheFourLimits(format: PlistFormat) throws {
        let (check, file) = try read(Self.selfHosted, format)
        let plist = try #require(check.plist)
        // 600 bytes of essential pack and 301 of manifest: one over the essential allowance of 900.
        let problems = plist.problems(against: Self.manifest(), manifestSize: 301, file: file)
        #expect(
            problems.map(\.description) == [
                "\(file): BAEssentialMaxInstallSize: the essential packs take 1000 B (1000 bytes) installed, over the 999 B "
                    + "(999 bytes) it allows: Tutorial 1000 B. Fix: raise BAEssentialMaxInstallSize to 1000 or more, or "
                    + "make those packs smaller or fewer",
                "\(file): BAMaxInstallSize: the non-essential packs take 2.0 KiB (2000 bytes) installed, over "
                    + "the 2.0 KiB (1999 bytes) it allows: Levels 2.0 KiB. Fix: raise BAMaxInstallSize to 2000 or more, "
                    + "or make those packs smaller or fewer",
                "\(file): BAInitialDownloadRestrictions.BAEssentialDownloadAllowance: the essential packs download "
                    + "901 B (901 bytes) with the manifest's 301 B (301 bytes), over the 900 B (900 bytes) it allows: "
                    + "Tutorial 600 B. Fix: raise BAInitialDownloadRestrictions.BAEssentialDownloadAllowance to 901 or "
                    + "more, or make those packs smaller or fewer",
                "\(file): BAInitialDownloadRestrictions.BADownloadAllowance: the non-essential packs "
                    + "download 700 B (700 bytes), over the 699 B (699 bytes) it allows: Levels 700 B. Fix: raise "
                    + "BAInitialDownloadRestrictions.BADownloadAllowance to 700 or more, or make those packs smaller or "
                    + "fewer",
            ]
        )
        #expect(problems.allSatisfy { $0.severity == .error })
        // At the limits exactly, nothing is over.
        var roomy = plist
        roomy.essentialMaxInstallSize = 1000
        roomy.maxInstallSize = 2000
        roomy.initialDownloadRestrictions?.essentialDownloadAllowance = 901
        roomy.initialDownloadRestrictions?.downloadAllowance = 700
        #expect(roomy.problems(against: Self.manifest(), manifestSize: 301, file: file).isEmpty)
    }

    @Test func packsWithoutAnInstallSizeAreNamedNotSkippedSilently() throws {
        var manifest = Self.manifest()
        for index in manifest.assetPacks.indices { manifest.assetPacks[index].installSize = nil }
        var plist = AppInfoPlist(manifestURL: "https://cdn.example.com/manifest")
        plist.essentialMaxInstallSize = 1
        plist.maxInstallSize = 1
        let problems = plist.problems(against: manifest, manifestSize: 1, file: "Info.plist")
        #expect(
            problems.map(\.description) == [
                "Info.plist: BAEssentialMaxInstallSize: is not checked for Tutorial: the manifest gives no installSize "
                    + "(Apple's manifests do not). Fix: validate the asset folder without --download-manifest",
                "Info.plist: BAMaxInstallSize: is not checked for Levels: the manifest gives no installSize (Apple's "
                    + "manifests do not). Fix: validate the asset folder without --download-manifest",
            ]
        )
        #expect(problems.allSatisfy { $0.severity == .warning })
    }

    @Test func aDownloadManifestFileIsReadWholeOrRefusedUnread() throws {
        let scratch = try Scratch()
        let bytes = try Self.manifest().encoded()
        let file = try scratch.write("manifest", bytes)
        let (manifest, size) = try DownloadManifest.read(file: file)
        #expect(manifest == Self.manifest())
        #expect(size == Int64(bytes.count))
        let fifo = scratch.root.appending("fifo")
        #expect(mkfifo(fifo.string, 0o600) == 0)
        #expect { try DownloadManifest.read(file: fifo) } throws: { error in
            (error as? AssetPackFormatError)?.message == "\(fifo) is a FIFO, not a download manifest file"
        }
    }

    @Test(arguments: PlistFormat.allCases)
    func hostsOutsideTheDomainAllowList(format: PlistFormat) throws {
        let (check, file) = try read(Self.selfHosted, format)
        var plist = try #require(check.plist)
        plist.essentialMaxInstallSize = nil
        plist.maxInstallSize = nil
        plist.initialDownloadRestrictions?.downloadAllowance = nil
        plist.initialDownloadRestrictions?.essentialDownloadAllowance = nil
        // A relative URL resolves against BAManifestURL (cdn.example.com: listed); a name below
        // assets.example.com matches the wildcard at any depth.
        let allowed = Self.manifest(levelsURL: "https://eu.edge.assets.example.com/Levels")
        #expect(plist.problems(against: allowed, manifestSize: 1, file: file).isEmpty)
        // The wildcard's own apex is not below it, and a look-alike name is another domain.
        let outside = Self.manifest(
            levelsURL: "https://assets.example.com/Levels",
            tutorialURL: "https://evilcdn.example.com/Tutorial"
        )
        let problems = plist.problems(against: outside, manifestSize: 1, file: file)
        #expect(
            problems.map(\.description) == [
                "\(file): BAInitialDownloadRestrictions.BADownloadDomainAllowList: does not allow assets.example.com, "
                    + "evilcdn.example.com (Levels from assets.example.com, Tutorial from evilcdn.example.com); it "
                    + "allows cdn.example.com, *.assets.example.com. Fix: add assets.example.com, evilcdn.example.com "
                    + "(or a *. wildcard over it) to the list"
            ]
        )
        // The manifest's own host counts too.
        plist.manifestURL = "https://origin.example.net/manifest"
        let manifestOutside = plist.problems(against: allowed, manifestSize: 1, file: file)
        #expect(manifestOutside.count == 1)
        #expect(manifestOutside.first?.message.contains("manifest from origin.example.net") == true)
    }

    @Test func domainAllowListRule() {
        let list = ["cdn.example.com", "*.assets.example.com", "Mixed.Example.ORG."]
        for host in [
            "cdn.example.com", "CDN.example.com", "a.assets.example.com", "a.b.assets.example.com", "mixed.example.org",
        ] {
            #expect(DomainAllowList.allows(host, by: list), "\(host)")
        }
        for host in [
            "assets.example.com", "xassets.example.com", "example.com", "cdn.example.com.evil.net", "a.cdn.example.com",
        ] {
            #expect(!DomainAllowList.allows(host, by: list), "\(host)")
        }
        #expect(!DomainAllowList.allows("anything.example", by: []))
    }

    @Test(arguments: PlistFormat.allCases)
    func wrongTypesAndUnknownKeysAreProblemsNotCrashes(format: PlistFormat) throws {
        let json = """
            {"BAAppGroupID": 7, "BAHasManagedAssetPacks": "YES", "BAUsesAppleHosting": 1,
             "BAMaxInstallSize": "100", "BAEssentialMaxInstallSize": true, "BAManifestUrl": "x",
             "BAInitialDownloadRestrictions": {"BADownloadAllowance": -1, "BADownloadDomainAllowList": "cdn.example.com",
               "BAEssentialDownloadAllowence": 5}}
            """
        let (check, file) = try read(json, format)
        let keys = check.problems.map { "\($0.severity.rawValue) \($0.key)" }
        #expect(
            keys == [
                "warning BAManifestUrl",
                "error BAAppGroupID",
                "error BAHasManagedAssetPacks",
                "error BAUsesAppleHosting",
                "error BAEssentialMaxInstallSize",
                "error BAMaxInstallSize",
                "warning BAInitialDownloadRestrictions.BAEssentialDownloadAllowence",
                "error BAInitialDownloadRestrictions.BADownloadAllowance",
                "error BAInitialDownloadRestrictions.BADownloadDomainAllowList",
            ]
        )
        #expect(check.problems[0].fix == "did you mean \"BAManifestURL\"?")
        #expect(check.problems[1].message == "is a number, not a string")
        #expect(check.problems[2].message == "is a string (\"YES\"), not a Boolean (<true/> or <false/>)")
        #expect(check.problems[3].message == "is a number, not a Boolean (<true/> or <false/>)")
        #expect(check.problems[4].message == "is a Boolean, not a whole number of bytes (<integer>)")
        #expect(check.problems[6].fix == "did you mean \"BAInitialDownloadRestrictions.BAEssentialDownloadAllowance\"?")
        #expect(check.problems[7].message == "is -1, a negative size")
        #expect(check.problems.allSatisfy { $0.file == file && !$0.message.contains(file) })
    }

    @Test func aFileThatIsNotAPlistOrHasAnotherRoot() throws {
        let scratch = try Scratch()
        let text = try scratch.write("Info.plist", "{\"json\": true}\n")
        let notPlist = try AppInfoPlist.read(file: text)
        #expect(notPlist.plist == nil)
        #expect(notPlist.problems.map(\.key) == ["(file)"])
        #expect(notPlist.problems.first?.message == "is not a property list (it starts with \"{\"json\":\")")
        for format in PlistFormat.allCases {
            let array = try writeInfoPlist(
                "[1, 2]",
                format: format,
                to: scratch.root.appending("Array-\(format).plist")
            )
            let check = try AppInfoPlist.read(file: array)
            #expect(check.plist == nil)
            #expect(
                check.problems.map(\.description) == [
                    "\(array): (top level): is an array, not a dictionary. Fix: an Info.plist holds a dictionary of keys at its root"
                ]
            )
        }
        let empty = try AppInfoPlist.read(file: try scratch.write("Empty.plist", ""))
        #expect(empty.problems.map(\.key) == ["(file)"])
        // A FIFO or a device in its place is named, never opened for a read that would wait or never end.
        let fifo = scratch.root.appending("Fifo.plist")
        #expect(mkfifo(fifo.string, 0o600) == 0)
        let fromFifo = try AppInfoPlist.read(file: fifo)
        #expect(
            fromFifo.problems.map(\.description) == [
                "\(fifo): (file): is a FIFO, not a file. Fix: pass the app's Info.plist"
            ]
        )
        let zero = try AppInfoPlist.read(file: "/dev/zero")
        #expect(zero.problems.map(\.message) == ["is a character device, not a file"])
    }
}
