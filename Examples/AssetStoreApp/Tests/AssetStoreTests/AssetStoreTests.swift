import AssetStore
import BackgroundAssets
import BackgroundAssetsTesting
import Foundation
import Synchronization
import System
import Testing

/// The asset folder beside this package, served by ba-mock on a free port for each test.
private let assets = FilePath(#filePath).removingLastComponent().removingLastComponent().removingLastComponent()
    .appending("Assets")

@Suite(.timeLimit(.minutes(2)))
struct AssetStoreTests {
    let store = AssetStore()

    @Test func theFirstInstallDownloadsWhatTheExtensionAccepts() async throws {
        try await withAssetPackServer(serving: assets, language: "en") { _ in
            let install = try await AssetPackManager.shared.simulate(
                .install,
                downloaderExtension: GameDownloaderRules()
            )
            #expect(install.offered == ["DialogueEN", "HighResTextures", "Levels", "Tutorial"])
            #expect(install.declined == ["HighResTextures"])
            #expect(install.downloaded == ["DialogueEN", "Levels", "Tutorial"])
            #expect(install.failures.isEmpty)
            #expect(try await store.levelMap(1) == Data(#"{"level": 1, "tiles": [0, 1, 1, 0]}"#.utf8 + [0x0A]))
            #expect(try await store.dialogue("hello") == "Hello, traveller!")
        }
    }

    @Test func theLoadingScreenSeesProgressThenReady() async throws {
        try await withAssetPackServer(serving: assets) { _ in
            let states = Mutex<[AssetStore.LoadingState]>([])
            try await store.prepare(packID: "HighResTextures") { state in states.withLock { $0.append(state) } }
            let seen = states.withLock { $0 }
            #expect(seen.first == .waiting)
            #expect(seen.last == .ready)
            let fractions = seen.compactMap { state -> Double? in
                if case .downloading(let fraction) = state { return fraction }
                return nil
            }
            #expect(fractions.last == 1.0)
            #expect(fractions == fractions.sorted())
        }
    }

    @Test func eachKindOfReadAndApplesErrors() async throws {
        try await withAssetPackServer(serving: assets) { _ in
            _ = try await store.prepareAll(["Tutorial", "Levels", "HighResTextures"])
            #expect(try await store.videoHeader("intro.m4v", count: 8) == [0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70])
            #expect(try await store.textureNames() == ["base.ktx2", "rock-4k.ktx2"])  // one folder, two packs
            await #expect(throws: AssetStore.StoreError.noSuchLevel(9)) { try await store.levelMap(9) }
            await #expect(throws: ManagedBackgroundAssetsError.self) {
                try await store.videoHeader("outro.m4v", count: 8)
            }
            await #expect(throws: AssetStore.StoreError.packNotPublished("Bonus")) {
                try await store.prepare(packID: "Bonus") { _ in }
            }
            await #expect(throws: ManagedBackgroundAssetsError.self) { try await store.free(packID: "Bonus") }
        }
    }

    @Test func aPackRemovedIsDownloadedAgainWhenNeeded() async throws {
        try await withAssetPackServer(serving: assets) { _ in
            try await store.prepare(packID: "Levels") { _ in }
            try await store.free(packID: "Levels")
            #expect(!AssetPackManager.shared.assetPackIsAvailableLocally(withID: "Levels"))
            // A read from a pack that is not local: the pack is not found (Apple does not say which error).
            await #expect(throws: ManagedBackgroundAssetsError.self) { try await store.levelMap(1) }
            try await store.prepare(packID: "Levels") { _ in }
            #expect(try await store.levelMap(2).count > 0)
        }
    }

    @Test func newContentOnTheServerReachesThePlayer() async throws {
        try await withAssetPackServer(serving: assets) { server in
            try await store.prepare(packID: "Levels") { _ in }
            let before = try #require(store.installedVersion(of: "Levels"))
            let level3 = Data(#"{"level": 3, "tiles": []}"#.utf8)
            try level3.write(to: URL(fileURLWithPath: server.assetFolder.appending("Levels/level3.json").string))
            try await server.publish()
            #expect(try await store.refresh() == ["Levels"])
            await AssetPackManager.shared.waitForScheduledUpdates()
            #expect(store.installedVersion(of: "Levels") == before + 1)
            #expect(try await store.levelMap(3) == level3)
        }
    }

    @Test func onePackFailingDoesNotStopTheOthers() async throws {
        try await withAssetPackServer(serving: assets) { server in
            try server.addFault("status=404,pack=HighResTextures")
            let failed = try await store.prepareAll(["Tutorial", "Levels", "HighResTextures"])
            #expect(failed == ["HighResTextures"])
            #expect(try await store.levelMap(1).count > 0)
        }
    }

    @Test func dialogueFollowsThePlayersLanguage() async throws {
        try await withAssetPackServer(serving: assets, language: "en") { _ in
            try await AssetPackManager.shared.simulate(.install, downloaderExtension: GameDownloaderRules())
            #expect(try await store.dialogue("hello") == "Hello, traveller!")
            let french = Locale.Language(identifier: "fr")
            await #expect(throws: ManagedBackgroundAssetsError.self) { try await store.dialogue("hello", in: french) }
            try await store.switchLanguage(to: french)
            #expect(try await store.dialogue("hello") == "Bonjour, voyageur !")
            #expect(try await store.dialogue("hello", in: french) == "Bonjour, voyageur !")
            #expect(await AssetPackManager.shared.locallyAvailableLanguages.map(\.minimalIdentifier) == ["fr"])
        }
    }
}
