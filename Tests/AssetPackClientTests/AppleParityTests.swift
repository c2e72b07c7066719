import AssetPackFormat
import AssetPackServer
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackClient

/// What Apple's OS 27 client does that ours must match, or differ from by a documented choice: localized
/// packs and the resolved language, platforms, the collision rule, `url(for:)`, `checkForUpdates()`,
/// `localStatus`, and `AssetPack` values that went stale.
@Suite("Apple parity, 27 edition")
struct AppleParityTests {
    /// The sample folder plus voice lines: an unlocalized pack and French and American English ones that all
    /// place `Voices/hello.txt`.
    func makeLocalizedFolder(_ scratch: Scratch) throws {
        try scratch.makeSampleFolder()
        try scratch.write("Voices/default/hello.txt", "hello (default)")
        try scratch.write("Voices/default/only-default.txt", "every language")
        try scratch.write("Voices/fr/hello.txt", "bonjour")
        try scratch.write("Voices/fr/merci.txt", "merci")
        try scratch.write("Voices/en/hello.txt", "hello")
        let prefetch = #"{"prefetch": {"installationEventTypes": ["firstInstallation"]}}"#
        try scratch.write(
            "VoicesBase.json",
            #"{"assetPackID": "VoicesBase", "downloadPolicy": \#(prefetch), "fileSelectors": [{"directorySource": "Voices/default", "directoryDestination": "Voices"}], "platforms": ["iOS", "macOS"]}"#
        )
        try scratch.write(
            "VoicesFR.json",
            #"{"assetPackID": "VoicesFR", "language": "fr", "downloadPolicy": \#(prefetch), "fileSelectors": [{"directorySource": "Voices/fr", "directoryDestination": "Voices"}], "platforms": ["iOS", "macOS"], "userInfo": {"voice": "Amélie", "takes": 3}}"#
        )
        try scratch.write(
            "VoicesEN.json",
            #"{"assetPackID": "VoicesEN", "language": "en_us", "downloadPolicy": \#(prefetch), "fileSelectors": [{"directorySource": "Voices/en", "directoryDestination": "Voices"}], "platforms": ["iOS", "macOS"]}"#
        )
    }

    func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    /// Runs `body` with a live server over the sample folder and a manager of a new app group.
    func withSample(
        retries: Int = 5,
        platform: String? = nil,
        _ body: @Sendable (LiveServer, AssetPackManager, Scratch) async throws -> Void
    ) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: scratch.root.appending("AppGroup"),
                    retryPolicy: RetryPolicy(retries: retries),
                    platform: platform
                )
            )
            try await body(server, manager, scratch)
        }
    }

    /// Runs `body` with a live server over the localized folder and a manager of a new app group that plays
    /// `language` (and falls back to `primaryLanguage`).
    func withLocalized(
        language: String? = nil,
        primaryLanguage: String = "en",
        environment: [String: String] = ProcessInfo.processInfo.environment,
        _ body: @Sendable (LiveServer, AssetPackManager, Scratch) async throws -> Void
    ) async throws {
        let scratch = try Scratch()
        try makeLocalizedFolder(scratch)
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: scratch.root.appending("AppGroup"),
                    language: language,
                    primaryLanguage: primaryLanguage,
                    environment: environment
                )
            )
            try await body(server, manager, scratch)
        }
    }

    @Test func syncInstallsTheResolvedLanguageAndReadsFallBackToUnlocalizedPacks() async throws {
        try await withLocalized(language: "fr-FR") { server, manager, scratch in
            let manifest = try await manager.manifest
            #expect(manifest.availableLanguages == ["en-US", "fr"])
            // Only the packs of the resolved language (Apple: "the subset … that best match the current preferred
            // languages"); for a language, its best match, which "may not exactly match the specified language".
            #expect(manifest.resolvedLanguage?.description == "fr")
            #expect(manifest.primaryLanguage.description == "en")
            #expect(manifest.localizedAssetPacks.map(\.id) == ["VoicesFR"])
            let en = try LanguageTag(parsing: "en")
            #expect(manifest.localizedAssetPacks(for: en).map(\.id) == ["VoicesEN"])  // en is en-US
            #expect(manifest.localizedAssetPacks(for: try LanguageTag(parsing: "en-CA")).map(\.id) == ["VoicesEN"])
            #expect(manifest.localizedAssetPacks(for: try LanguageTag(parsing: "ja")).isEmpty)
            let french = try #require(manifest.assetPack(withID: "VoicesFR"))
            #expect(french.language == "fr")
            #expect(french.userInfo == .object(["voice": .string("Amélie"), "takes": .number(3)]))

            // fr-FR matches fr: its pack is installed beside the unlocalized one, the English one is not.
            let report = try await manager.sync(event: .install)
            #expect(report.installed == ["Levels", "Tutorial", "VoicesBase", "VoicesFR"])
            #expect(manager.locallyAvailableLanguages == ["fr"])
            #expect(text(try manager.contents(at: "Voices/hello.txt")) == "bonjour")
            #expect(text(try manager.contents(at: "Voices/only-default.txt")) == "every language")
            // A read for a language searches only the packs of that language (Apple: "only the downloaded asset
            // packs that are localized in the specified language"), never the unlocalized ones.
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Voices/hello.txt")) {
                try manager.contents(at: "Voices/hello.txt", asLocalizedFor: "en")
            }
            #expect(throws: AssetPackClientError.self) {
                try manager.reader.contents(at: "Voices/only-default.txt", asLocalizedFor: "fr")
            }
            let absent = try manager.url(for: "Voices/hello.txt", asLocalizedFor: "de")
            #expect(absent.path.contains("/.ba-sync/absent/"), "\(absent)")
            let bad = #expect(throws: AssetPackClientError.self) {
                try manager.contents(at: "Voices/hello.txt", asLocalizedFor: "not a language")
            }
            #expect(bad?.code == .invalidLanguage)
            let fd = try manager.descriptor(for: "Voices/hello.txt", asLocalizedFor: "fr-FR")
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = try buffer.withUnsafeMutableBytes { try fd.read(into: $0) }
            try fd.close()
            #expect(text(Data(buffer[..<count])) == "bonjour")

            // A read with no pack ID searches every installed pack (Apple: "all asset packs"): a file only a pack
            // of another language holds is found and listed; the resolved language's pack wins a shared path.
            let english = AssetPackReader(appGroup: scratch.root.appending("AppGroup"), language: en)
            #expect(try english.paths().contains("Voices/merci.txt"))
            #expect(text(try english.contents(at: "Voices/merci.txt")) == "merci")
            #expect(text(try english.contents(at: "Voices/hello.txt")) == "hello (default)")

            // Switching to English: its pack comes, the French one goes, reads follow.
            try manager.setResolvedLanguage("en")
            let switched = try await manager.reconcilePreferredLanguages()
            #expect(switched.downloaded == ["VoicesEN"])
            #expect(switched.removed == ["VoicesFR"])
            #expect(switched.locallyAvailableLanguages == ["en-US"])
            #expect(text(try manager.contents(at: "Voices/hello.txt")) == "hello")
            #expect(text(try manager.contents(at: "Voices/hello.txt", asLocalizedFor: "en-US")) == "hello")
            #expect(!manager.assetPackIsAvailableLocally(withID: "VoicesFR"))
            // Nothing left to do the second time.
            let again = try await manager.reconcilePreferredLanguages()
            #expect(again.downloaded.isEmpty && again.removed.isEmpty)
        }
    }

    /// A device in a region the packs do not name still gets its language's pack (a CI runner with
    /// `LANG=en_GB.UTF-8` got no English pack when languages had to be equal), and a language no pack has
    /// falls back to the primary language.
    @Test(arguments: [
        ("en-GB", "en", "en-US", "hello"), ("en-AU", "en", "en-US", "hello"), ("ja", "en", "en-US", "hello"),
        ("ja", "fr", "fr", "bonjour"), ("fr-CA", "en", "fr", "bonjour"),
    ])
    func theResolvedLanguageIsTheBestMatchElseThePrimaryLanguage(
        preferred: String,
        primary: String,
        resolved: String,
        hello: String
    ) async throws {
        try await withLocalized(language: preferred, primaryLanguage: primary) { server, manager, scratch in
            #expect(manager.resolvedLanguage == nil)  // nothing local yet
            let manifest = try await manager.manifest
            #expect(manifest.resolvedLanguage?.description == resolved)
            let report = try await manager.sync(event: .install)
            let pack = resolved == "fr" ? "VoicesFR" : "VoicesEN"
            #expect(report.installed == ["Levels", "Tutorial", "VoicesBase", pack])
            #expect(manager.resolvedLanguage?.description == resolved)
            #expect(text(try manager.contents(at: "Voices/hello.txt")) == hello)
        }
    }

    /// "It won't remove any localized asset packs that you've downloaded manually": a pack the app ensured
    /// stays through a language switch; one that came for a language goes when the language does.
    @Test func reconcileKeepsPacksEnsuredByHand() async throws {
        try await withLocalized(language: "fr") { server, manager, scratch in
            _ = try await manager.sync(event: .install)  // VoicesFR comes for the language
            try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["VoicesEN"])  // by hand
            try manager.setResolvedLanguage("de")
            let toGerman = try await manager.reconcilePreferredLanguages()
            #expect(toGerman.removed == ["VoicesFR"])
            #expect(manager.assetPackIsAvailableLocally(withID: "VoicesEN"))
            try manager.setResolvedLanguage("fr")
            let toFrench = try await manager.reconcilePreferredLanguages()
            #expect(toFrench.downloaded == ["VoicesFR"])
            #expect(toFrench.removed.isEmpty)
            try manager.setResolvedLanguage("en")
            let toEnglish = try await manager.reconcilePreferredLanguages()
            #expect(toEnglish.downloaded.isEmpty)
            #expect(toEnglish.removed == ["VoicesFR"])
            #expect(manager.locallyAvailableLanguages == ["en-US"])
        }
    }

    /// Several preferred languages (GNU's `LANGUAGE`, as a device's list in Settings): the first that matches
    /// a pack chooses, `en_AU` taking `en-US` before `fr`.
    @Test func theFirstPreferredLanguageWithAPackWins() async throws {
        // No fallback to English (the primary language is German): only the list can choose it.
        try await withLocalized(
            primaryLanguage: "de",
            environment: ["LANGUAGE": "ja:en_AU:fr", "LANG": "ja_JP.UTF-8"]
        ) { server, manager, scratch in
            #expect(try await manager.manifest.resolvedLanguage?.description == "en-US")
            let report = try await manager.sync(event: .install)
            #expect(report.installed.contains("VoicesEN") && !report.installed.contains("VoicesFR"))
            #expect(manager.resolvedLanguage?.description == "en-US")
            #expect(manager.reader.preferredLanguages.map(\.description) == ["ja", "en-AU", "fr", "ja-JP"])
        }
    }

    /// The app's language is kept in the app group, as a device keeps it: a reader or a manager opened later
    /// without a language reads and downloads for it.
    @Test func theAppsLanguageIsRememberedInTheAppGroup() async throws {
        let scratch = try Scratch()
        try makeLocalizedFolder(scratch)
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup, language: "fr")
            )
            _ = try await manager.sync(event: .install)
            try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["VoicesEN"])
            let later = AssetPackReader(appGroup: appGroup)
            #expect(later.preferredLanguage.description == "fr")
            #expect(text(try later.contents(at: "Voices/hello.txt")) == "bonjour")
            let next = try AssetPackManager(configuration: .init(server: URL(string: server.url)!, appGroup: appGroup))
            #expect(next.resolvedLanguage?.description == "fr")
            #expect(try await next.manifest.resolvedLanguage?.description == "fr")
        }
    }

    @Test func theResolvedLanguageComesFromTheEnvironmentElseEnglish() throws {
        #expect(try LanguageTag.resolve(nil, environment: ["LANG": "fr_CA.UTF-8"]).description == "fr-CA")
        #expect(
            try LanguageTag.resolve(nil, environment: ["LC_ALL": "de_DE@euro", "LANG": "fr_FR"]).description == "de-DE"
        )
        #expect(try LanguageTag.resolve(nil, environment: ["LANG": "C.UTF-8"]).description == "en")
        #expect(try LanguageTag.resolve(nil, environment: [:]).description == "en")
        #expect(try LanguageTag.resolve("PT_br", environment: ["LANG": "fr"]).description == "pt-BR")
        // GNU's LANGUAGE lists several, most preferred first, then the locale's; ignored in the C locale.
        let list = { (environment: [String: String]) in
            LanguageTag.preferredLanguages(in: environment).map(\.description)
        }
        #expect(list(["LANGUAGE": "ja:fr_CA:bad tag:", "LANG": "de_DE.UTF-8"]) == ["ja", "fr-CA", "de-DE"])
        #expect(list(["LANGUAGE": "de", "LANG": "de_DE.UTF-8"]) == ["de", "de-DE"])
        #expect(list(["LANGUAGE": "ja:fr", "LANG": "C"]) == ["en"])
        #expect(list([:]) == ["en"])
        #expect(throws: LanguageTagError.self) { try LanguageTag.resolve("en-US-x-private") }
        #expect(throws: AssetPackClientError.self) {
            try AssetPackManager(
                configuration: .init(server: nil, appGroup: FilePath("/tmp/none"), language: "english please")
            )
        }
    }

    @Test(arguments: ["//127.0.0.1:99999/assets/P", "http://127.0.0.1:65536/P", "http:///P"])
    func aPackURLNoClientCouldFetchIsABadManifestNotACrash(_ url: String) throws {
        let entry = DownloadManifest.Entry(
            id: "P",
            url: url,
            version: 1,
            downloadSize: 10,
            downloadPolicy: .onDemand,
            sha256: nil,
            installSize: nil,
            fileCount: nil,
            compression: nil
        )
        let error = #expect(throws: AssetPackClientError.self) {
            try AssetPack(entry, manifestURL: URL(string: "http://127.0.0.1:8443/manifest")!)
        }
        #expect(error?.code == .badManifest)
    }

    @Test func packsForAnotherPlatformAreInvisible() async throws {
        // Tutorial is for iOS, Levels for iOS and macOS, Textures for visionOS.
        try await withSample(platform: "macos") { server, manager, scratch in
            #expect(try await manager.manifest.assetPacks.map(\.id) == ["Levels"])
            let report = try await manager.sync(event: .install)
            #expect(report.installed == ["Levels"])
            await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Textures")) {
                try await manager.assetPack(withID: "Textures")
            }
            // A tool's call by ID says why, in our error.
            let notHere = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["Textures"])
            }
            #expect(notHere?.code == .assetPackNotFound)
            #expect(
                notHere?.message.contains("pack Textures is for visionOS, not macos") == true,
                "\(notHere?.message ?? "")"
            )
            let everyPlatform = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: scratch.root.appending("AppGroup"))
            )
            #expect(try await everyPlatform.manifest.assetPacks.count == 3)
            // A pack installed for another platform is not obsolete to this one: nothing is removed.
            try await everyPlatform.ensureLocalAvailability(of: try await everyPlatform.assetPack(withID: "Textures"))
            #expect(try await manager.checkForUpdatesAndWait().removedIDs.isEmpty)
            #expect(manager.assetPackIsAvailableLocally(withID: "Textures"))
            let textures = try #require(try await manager.statusOfAllAssetPacks().first { $0.id == "Textures" })
            #expect(!textures.status.contains(.obsolete))
        }
    }

    /// Two packs place different bytes at `Textures/rock.ktx2`.
    func makeCollidingFolder(_ scratch: Scratch) throws {
        try scratch.makeSampleFolder()
        try scratch.write("Other/rock.ktx2", "the other rock")
        try scratch.write(
            "Zoo.json",
            #"{"assetPackID": "Zoo", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"fileSource": "Other/rock.ktx2", "fileDestination": "Textures/rock.ktx2"}], "platforms": ["iOS"]}"#
        )
    }

    @Test func theCollisionRuleFailsOrShufflesWhereAppleLeavesTheWinnerUndefined() async throws {
        let scratch = try Scratch()
        try makeCollidingFolder(scratch)
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(of: Set(try await manager.manifest.assetPacks))
        }
        let path: FilePath = "Textures/rock.ktx2"
        #expect(try AssetPackReader(appGroup: appGroup).assetPackID(containing: path) == "Textures")

        let strict = AssetPackReader(appGroup: appGroup, collisions: .fail)
        let collision = #expect(throws: AssetPackClientError.self) { try strict.contents(at: path) }
        #expect(collision?.code == .pathCollision)
        #expect(collision?.path == path)
        #expect(collision?.message.contains("Textures, Zoo") == true)
        #expect(text(try strict.contents(at: path, searchingInAssetPackWithID: "Zoo")) == "the other rock")
        #expect(try strict.contents(at: "Videos/Intro.m4v").count == 200_000)  // one holder: no collision

        // A seed decides each path's winner: the same seed, the same winner; across seeds, both packs win.
        var winners: Set<String> = []
        for seed in UInt64(0)..<32 {
            let first = try AssetPackReader(appGroup: appGroup, collisions: .shuffle(seed: seed))
                .assetPackID(containing: path)
            let replay = try AssetPackReader(appGroup: appGroup, collisions: .shuffle(seed: seed))
                .assetPackID(containing: path)
            #expect(first == replay)
            winners.insert(try #require(first))
        }
        #expect(winners == ["Textures", "Zoo"])
        #expect(CollisionRule(parsing: "shuffle=42") == .shuffle(seed: 42))
        #expect(CollisionRule(parsing: "shuffle=x") == nil)
    }

    @Test func urlForAMissingPathIsWellFormedAndAFolderResolvesToOnePack() async throws {
        try await withSample { _, manager, scratch in
            let appGroup = scratch.root.appending("AppGroup")
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let missing = try manager.url(for: "No/Such/file.json")
            #expect(missing.path.hasPrefix(appGroup.appending(".ba-sync/absent").string + "/"))
            #expect(missing.path.hasSuffix("No/Such/file.json"))
            #expect(!FileManager.default.fileExists(atPath: missing.path))
            #expect(try manager.assetPackID(containing: "No/Such/file.json") == nil)

            let folder = try manager.url(for: "Levels/World1")
            #expect(folder.hasDirectoryPath)
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("level1.json").path))
            #expect(try manager.assetPackID(containing: "Levels/World1") == "Levels")
            let invalid = #expect(throws: AssetPackClientError.self) { try manager.url(for: "/etc/passwd") }
            #expect(invalid?.code == .invalidPath)
        }
    }

    @Test func checkForUpdatesReturnsBeforeTheDownloadsFinish() async throws {
        try await withSample { server, manager, scratch in
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 11}"#)
            try await server.catalog.refresh()
            _ = try await server.get("/_mock/faults", method: .POST, body: "latency=1500,pack=Levels")

            let (updating, removed) = try await manager.checkForUpdates()
            #expect(updating == ["Levels"] && removed.isEmpty)
            #expect(manager.installedPack(withID: "Levels")?.version == 1)  // scheduled, not done
            #expect(await manager.waitForScheduledUpdates().isEmpty)
            #expect(manager.installedPack(withID: "Levels")?.version == 2)
            #expect(text(try manager.contents(at: "Levels/World1/level1.json")).contains("11"))
        }
    }

    @Test func aLowerVersionPublishedIsNotAnUpdate() async throws {
        try await withSample { server, manager, scratch in
            try await server.catalog.setVersion(5, forPackWithID: "Levels")
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            #expect(manager.installedPack(withID: "Levels")?.version == 5)

            try await server.catalog.setVersion(3, forPackWithID: "Levels")  // a rollback on the server
            #expect(try await manager.checkForUpdatesAndWait().updatingIDs.isEmpty)
            #expect(manager.installedPack(withID: "Levels")?.version == 5)
            let published = try await manager.assetPack(withID: "Levels")
            let status = try await manager.status(relativeTo: published)
            #expect(status.contains(.outOfDate) && !status.contains(.updateAvailable))
            try await manager.ensureLocalAvailability(of: published, requireLatestVersion: true)
            #expect(manager.installedPack(withID: "Levels")?.version == 5)
        }
    }

    @Test func localStatusHasOnlyTheFlagsKnownOffline() async throws {
        try await withSample(retries: 0) { server, manager, scratch in
            #expect(await manager.localStatus(ofAssetPackWithID: "Levels") == [])
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            #expect(await manager.localStatus(ofAssetPackWithID: "Levels") == [.downloaded])
            #expect(try manager.localVersion(ofAssetPackWithID: "Levels") == 1)
            #expect(
                manager.localSize(ofAssetPackWithID: "Levels") == manager.installedPack(withID: "Levels")?.installSize
            )
            #expect(
                try await manager.status(ofAssetPackWithID: "Levels") == [.downloadAvailable, .upToDate, .downloaded]
            )
            await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Nope")) {
                try await manager.status(ofAssetPackWithID: "Nope")
            }
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 12}"#)
            try await server.catalog.refresh()
            _ = try await server.get("/_mock/faults", method: .POST, body: "status=503,pack=Levels")
            _ = try? await manager.checkForUpdatesAndWait()  // sees version 2, cannot download it
            #expect(await manager.localStatus(ofAssetPackWithID: "Levels") == [.downloaded, .outOfDate])
        }
    }

    @Test func aStaleAssetPackValueIsRefreshedBeforeDownloading() async throws {
        try await withSample { server, manager, scratch in
            let stale = try await manager.assetPack(withID: "Textures")
            try scratch.write("Textures/rock.ktx2", Scratch.noise(60_000, seed: 9))
            try await server.catalog.refresh()
            let events = manager.events
            let seen = Task {
                var retries = 0
                for await event in events { if case .retrying = event { retries += 1 } }
                return retries
            }
            try await manager.ensureLocalAvailability(of: stale)
            manager.finishStatusUpdates()
            #expect(await seen.value == 0)  // no digest mismatch, no retry
            #expect(manager.installedPack(withID: "Textures")?.version == 2)
            #expect(try manager.contents(at: "Textures/rock.ktx2") == Scratch.noise(60_000, seed: 9))
        }
    }

    /// Code written as an app writes it against Apple's `AssetPackManager` compiles and catches here.
    @Test func appCodeCatchesManagedBackgroundAssetsErrorAsOnADevice() async throws {
        try await withSample { server, manager, scratch in
            var missingFile: FilePath?
            do {
                _ = try manager.contents(at: "Videos/Intro.m4v")
            } catch ManagedBackgroundAssetsError.fileNotFound(let path) {
                missingFile = path
            }
            #expect(missingFile == "Videos/Intro.m4v")
            var missingPack: String?
            do {
                _ = try await manager.assetPack(withID: "Nope")
            } catch ManagedBackgroundAssetsError.assetPackNotFound(let id) {
                missingPack = id
            }
            #expect(missingPack == "Nope")
            // As Apple's, a LocalizedError: an app that shows `localizedDescription` shows what is missing.
            let shown = (ManagedBackgroundAssetsError.assetPackNotFound(withID: "Nope") as any Error)
                .localizedDescription
            #expect(shown.contains("Nope"), "\(shown)")
            // 27.2: `nonisolated func localVersion(ofAssetPackWithID:) throws -> Int`, throwing when not local.
            var notLocal: String?
            do {
                _ = try manager.localVersion(ofAssetPackWithID: "Levels")
            } catch ManagedBackgroundAssetsError.assetPackNotFound(let id) {
                notLocal = id
            }
            #expect(notLocal == "Levels")
            await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Levels")) {
                try await manager.remove(assetPackWithID: "Levels")
            }
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "No/such.txt")) {
                try manager.descriptor(for: "No/such.txt")
            }
            // The rest is ours, with a code to match.
            let escape = #expect(throws: AssetPackClientError.self) { try manager.contents(at: "../x") }
            #expect(escape?.code == .invalidPath)
        }
    }

    @Test func assetPackAndAllAssetPacksAnswerFromTheLastFetchedManifestOffline() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        let url = try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup, platform: "iOS")
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            return server.url
        }
        // The server is gone (a refused connection fails at once): what was last fetched answers.
        let client = AssetPackManager.makeHTTPClient()
        let offline = try AssetPackManager(
            configuration: .init(
                server: URL(string: url)!,
                appGroup: appGroup,
                retryPolicy: RetryPolicy(retries: 0),
                platform: "iOS"
            ),
            client: client
        )
        let tutorial = try await offline.assetPack(withID: "Tutorial")
        #expect(tutorial.downloadPolicy.name == "essential")
        #expect(try await offline.allAssetPacks.map(\.id).sorted() == ["Levels", "Tutorial"])
        await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Textures")) {
            try await offline.assetPack(withID: "Textures")  // visionOS only
        }
        // A download still needs the server.
        let download = await #expect(throws: AssetPackClientError.self) {
            try await offline.ensureLocalAvailability(of: tutorial)
        }
        #expect(download?.code == .network)
        try await client.shutdown()
        // No server given at all: the same answers.
        #expect(
            try await AssetPackManager(configuration: .init(server: nil, appGroup: appGroup)).allAssetPacks.count == 3
        )
        // An app group that never fetched one has nothing to answer with.
        let fresh = try AssetPackManager(configuration: .init(server: nil, appGroup: scratch.root.appending("Fresh")))
        await #expect(throws: AssetPackClientError.self) { try await fresh.allAssetPacks }
        // The kept manifest is only a cache, read as the app group's state is: a FIFO or a symlink planted in its
        // place (to a manifest that would answer) is not read, and answers nothing.
        let kept = appGroup.appending(".ba-sync/manifest.json").string
        let elsewhere = scratch.root.appending("elsewhere.json")
        try FileManager.default.moveItem(atPath: kept, toPath: elsewhere.string)
        #expect(mkfifo(kept, 0o644) == 0)
        await #expect(throws: AssetPackClientError.self) {
            try await AssetPackManager(configuration: .init(server: nil, appGroup: appGroup)).allAssetPacks
        }
        try FileManager.default.removeItem(atPath: kept)
        try FileManager.default.createSymbolicLink(atPath: kept, withDestinationPath: elsewhere.string)
        await #expect(throws: AssetPackClientError.self) {
            try await AssetPackManager(configuration: .init(server: nil, appGroup: appGroup)).allAssetPacks
        }
    }

    @Test func anEssentialPackThatFailsForGoodIsOneTheAppLaunchesWithout() async throws {
        try await withSample(retries: 0) { server, manager, _ in
            _ = try await server.get("/_mock/faults", method: .POST, body: "status=500,pack=Tutorial")
            let report = try await manager.sync(event: .install)
            #expect(report.essentialFailed)
            #expect(report.launchesWithout == ["Tutorial"])
            #expect(report.installed == ["Levels"])
            _ = try await server.get("/_mock/faults", method: .DELETE)
            // The app, launched, makes it local itself.
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Tutorial"))
            #expect(manager.assetPackIsAvailableLocally(withID: "Tutorial"))
        }
    }

    @Test func inAppContentTurnedOffDownloadsNothingByPolicy() async throws {
        try await withSample { server, manager, _ in
            let report = try await manager.sync(event: .install, inAppContent: false)
            #expect(report.installed.isEmpty && report.failures.isEmpty && report.launchesWithout.isEmpty)
            #expect(manager.installedPacks.isEmpty)
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Tutorial"))
            #expect(manager.assetPackIsAvailableLocally(withID: "Tutorial"))
        }
    }
}
