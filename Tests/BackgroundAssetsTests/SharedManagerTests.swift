import BackgroundAssets
import BackgroundAssetsTesting
import Foundation
import System
import Testing

/// `AssetPackManager.shared` against ba-mock in this process, through Apple's declarations only, as an app's
/// own tests use it.
@Suite struct SharedManagerTests {
    let manager = AssetPackManager.shared

    @Test func aFirstInstallAsksTheExtensionAndInstallsWhatItAccepts() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { _ in
            let result = try await manager.simulate(.install, downloaderExtension: DeclineLevels())
            // Tutorial is essential and Levels prefetch on firstInstallation; Extras is on demand: not offered.
            #expect(result.offered == ["Levels", "Tutorial"])
            #expect(result.declined == ["Levels"])
            #expect(result.downloaded == ["Tutorial"])
            #expect(manager.assetPackIsAvailableLocally(withID: "Tutorial"))
            #expect(!manager.assetPackIsAvailableLocally(withID: "Levels"))
            #expect(!manager.assetPackIsAvailableLocally(withID: "Extras"))
            let again = try await manager.simulate(.install, downloaderExtension: AcceptAll())
            #expect(again.downloaded == ["Levels"])
        }
    }

    @Test func aPacksUpdatesCarryOneProgressAndTheSequenceEndsAfterFinished() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { _ in
            let pack = try #require(try await manager.manifest.assetPack(withID: "Levels"))
            let updates = manager.statusUpdates(forAssetPackWithID: "Levels")
            let collected = Task {
                var seen: [AssetPackManager.DownloadStatusUpdate] = []
                for await update in updates { seen.append(update) }  // ends after `finished`
                return seen
            }
            try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: false)
            let seen = await collected.value
            guard case .began(let began) = seen.first, case .finished(let finished) = seen.last else {
                Issue.record("expected began … finished, saw \(seen)")
                return
            }
            #expect(began.id == "Levels" && finished.id == "Levels")
            let progresses = seen.compactMap { update -> Progress? in
                if case .downloading(_, let progress) = update { return progress }
                return nil
            }
            #expect(!progresses.isEmpty)
            #expect(Set(progresses.map(ObjectIdentifier.init)).count == 1)  // one Progress per download
            #expect(progresses.last?.totalUnitCount == Int64(pack.downloadSize))
            #expect(progresses.last?.completedUnitCount == Int64(pack.downloadSize))
        }
    }

    @Test func readsOfEachKindAndApplesErrors() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { _ in
            let manifest = try await manager.manifest
            try await manager.ensureLocalAvailability(of: Set(manifest.assetPacks.filter { $0.language == nil }))
            #expect(try manager.contents(at: "Levels/World1/map.json") == Fixture.map)
            #expect(
                try manager.contents(at: "Levels/Über/日本語 🎮.json", searchingInAssetPackWithID: "Levels")
                    == Fixture.unicode
            )
            let descriptor = try manager.descriptor(for: "Levels/World1/map.json")
            let read = try descriptor.closeAfter {
                var buffer = [UInt8](repeating: 0, count: 64)
                let count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0) }
                return Data(buffer.prefix(count))
            }
            #expect(read == Fixture.map)
            // A folder split across two packs is one folder holding both packs' files.
            let shared = try manager.url(for: "Shared")
            let names = try FileManager.default.contentsOfDirectory(atPath: shared.path).sorted()
            #expect(names == ["extras.txt", "levels.txt"])
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Levels/missing.json")) {
                try manager.contents(at: "Levels/missing.json")
            }
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Levels/World1/map.json")) {
                try manager.descriptor(for: "Levels/World1/map.json", searchingInAssetPackWithID: "Tutorial")
            }
            #expect(manifest.assetPack(withID: "Nope") == nil)
            await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Nope")) {
                try await manager.remove(assetPackWithID: "Nope")
            }
            #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Nope")) {
                try manager.localVersion(ofAssetPackWithID: "Nope")
            }
            #expect(await manager.localStatus(ofAssetPackWithID: "Nope") == [])
        }
    }

    @Test func removeThenEnsureDownloadsAgain() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { server in
            let pack = try #require(try await manager.manifest.assetPack(withID: "Levels"))
            try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: false)
            let mapped = try manager.contents(at: "Levels/World1/map.json")
            try await manager.remove(assetPackWithID: "Levels")
            #expect(!manager.assetPackIsAvailableLocally(withID: "Levels"))
            #expect(mapped == Fixture.map)  // a mapping taken before keeps its bytes
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Levels/World1/map.json")) {
                try manager.contents(at: "Levels/World1/map.json")
            }
            let downloads = server.requestLog.filter { $0.contains("/Levels") }.count
            try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: false)
            #expect(server.requestLog.filter { $0.contains("/Levels") }.count == downloads + 1)
            #expect(try manager.contents(at: "Levels/World1/map.json") == Fixture.map)
        }
    }

    @Test func anUpdateOnTheServerIsFoundAndInstalled() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { server in
            let pack = try #require(try await manager.manifest.assetPack(withID: "Levels"))
            try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: false)
            let before = try manager.localVersion(ofAssetPackWithID: "Levels")
            let changed = Data(#"{"level": 1, "enemies": 12}"#.utf8)
            try changed.write(to: URL(fileURLWithPath: server.assetFolder.appending("Levels/World1/map.json").string))
            let published = try await server.publish()
            #expect(published["Levels"] == before + 1)
            #expect(try await manager.status(relativeTo: pack).contains(.outOfDate) == false)
            let newer = try #require(try await manager.manifest.assetPack(withID: "Levels"))
            #expect(try await manager.status(relativeTo: newer).contains(.outOfDate))
            let (updating, removed) = try await manager.checkForUpdates()
            #expect(updating == ["Levels"] && removed.isEmpty)
            #expect(await manager.waitForScheduledUpdates().isEmpty)
            #expect(try manager.localVersion(ofAssetPackWithID: "Levels") == before + 1)
            #expect(try manager.contents(at: "Levels/World1/map.json") == changed)
            #expect(await manager.localStatus(ofAssetPackWithID: "Levels").contains(.downloaded))
        }
    }

    @Test func aPackThatFailsAmongSeveralIsReportedWithItsErrorAndTheOthersInstall() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { server in
            try server.addFault("status=404,pack=Levels")
            let manifest = try await manager.manifest
            let packs = manifest.assetPacks.filter { $0.language == nil }
            let updates = manager.statusUpdates(forAssetPackWithID: "Levels")
            let last = Task {
                var final: AssetPackManager.DownloadStatusUpdate?
                for await update in updates { final = update }
                return final
            }
            do {
                try await manager.ensureLocalAvailability(of: packs, requireLatestVersions: false)
                Issue.record("the batch succeeded though Levels answers 404")
            } catch let error as AssetPackManager.LocalAvailabilityError {
                #expect(error.failures.keys.map(\.id) == ["Levels"])
                #expect(Set(error.successes.map(\.id)) == ["Extras", "Tutorial"])
                #expect("\(error.failures.values.first!)".contains("404"))
            }
            guard case .failed(let pack, let error) = await last.value else {
                Issue.record("the Levels sequence did not end with failed")
                return
            }
            #expect(pack.id == "Levels" && "\(error)".contains("404"))
            #expect(manager.assetPackIsAvailableLocally(withID: "Tutorial"))
        }
    }

    @Test func cancellingTheProgressCancelsTheDownload() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { server in
            try server.addFault("throttle=16384,pack=Extras")  // 256 KiB at 16 KiB/s: about 16 s
            let pack = try #require(try await manager.manifest.assetPack(withID: "Extras"))
            let updates = manager.statusUpdates(forAssetPackWithID: "Extras")
            let ensuring = Task { try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: false) }
            var last: AssetPackManager.DownloadStatusUpdate?
            for await update in updates {  // ends after `failed`
                if case .downloading(_, let progress) = update, !progress.isCancelled {
                    progress.cancel()
                    progress.cancel()  // a second cancel is harmless
                }
                last = update
            }
            guard case .failed(let failed, let error) = last else {
                Issue.record("the sequence did not end with failed: \(String(describing: last))")
                return
            }
            #expect(failed.id == "Extras" && error is CancellationError)
            await #expect(throws: CancellationError.self) { try await ensuring.value }
            #expect(!manager.assetPackIsAvailableLocally(withID: "Extras"))
            server.clearFaults()
            let again = manager.statusUpdates(forAssetPackWithID: "Extras")
            try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: false)  // starts clean
            #expect(try manager.contents(at: "Extras/big.bin").count == 256 << 10)
            for await update in again {
                if case .downloading(_, let progress) = update { #expect(!progress.isCancelled) }
            }
        }
    }

    @Test func localizedPacksAreReadAndReconciledForTheResolvedLanguage() async throws {
        try await withAssetPackServer(serving: try Fixture.make(), language: "fr") { _ in
            let french = Locale.Language(identifier: "fr")
            let german = Locale.Language(identifier: "de")
            let manifest = try await manager.manifest
            #expect(Set(manifest.availableLanguages.map(\.minimalIdentifier)) == ["de", "fr"])
            #expect(manifest.resolvedLanguage?.minimalIdentifier == "fr")
            #expect(manifest.localizedAssetPacks.map(\.id) == ["VoicesFR"])
            #expect(manifest.localizedAssetPacks(for: german).map(\.id) == ["VoicesDE"])
            try await manager.reconcilePreferredLanguages()
            #expect(await manager.locallyAvailableLanguages.map(\.minimalIdentifier) == ["fr"])
            #expect(manager.resolvedLanguage?.minimalIdentifier == "fr")
            #expect(try manager.contents(at: "Voices/hello.txt", asLocalizedFor: french) == Data("bonjour".utf8))
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Voices/hello.txt")) {
                try manager.contents(at: "Voices/hello.txt", asLocalizedFor: german)
            }
            manager.resolvedLanguage = german
            try await manager.reconcilePreferredLanguages()
            #expect(await manager.locallyAvailableLanguages.map(\.minimalIdentifier) == ["de"])
            #expect(try manager.contents(at: "Voices/hello.txt") == Data("hallo".utf8))
            let folder = try manager.url(for: "Voices", asLocalizedFor: german)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["hello.txt", "intro.txt"]
            )
        }
    }

    @Test @available(*, deprecated) func assetPackWithIDAnswersFromWhatWasCachedBeforeAskingTheServer() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { server in
            await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Nope")) {
                try await manager.assetPack(withID: "Nope")
            }
            let cached = try await manager.assetPack(withID: "Levels")
            try await server.setObsolete(true, assetPackWithID: "Levels")
            #expect(try await manager.assetPack(withID: "Levels") == cached)
            #expect(try await manager.manifest.assetPack(withID: "Levels") == nil)  // the manifest asks the server
        }
    }

    @Test func twoTestsSideBySideEachHaveTheirOwnSharedManager() async throws {
        let one = try Fixture.make()
        let two = try Fixture.make(extraPack: "OnlyInTwo")
        try await withThrowingTaskGroup(of: Set<String>.self) { group in
            for folder in [one, two] {
                group.addTask {
                    try await withAssetPackServer(serving: folder) { _ in
                        Set(try await AssetPackManager.shared.manifest.assetPacks.map(\.id))
                    }
                }
            }
            var seen: [Set<String>] = []
            for try await ids in group { seen.append(ids) }
            #expect(seen.contains { $0.contains("OnlyInTwo") } && seen.contains { !$0.contains("OnlyInTwo") })
        }
    }

    // A test's asset folder that is a link to the app's: served from a copy of what it leads to, and the
    // folder it leads to is left as it was (the link itself was copied, and every build went into the source).
    @Test func anAssetFolderThatIsALinkIsCopiedNotWrittenTo() async throws {
        let folder = try Fixture.make()
        let link = Fixture.temporary("ba-link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: folder.string)
        let before = try FileManager.default.subpathsOfDirectory(atPath: folder.string).sorted()
        let served = try await withAssetPackServer(serving: FilePath(link)) { _ in
            try await manager.manifest.assetPack(withID: "Levels")
        }
        #expect(served != nil)
        #expect(try FileManager.default.subpathsOfDirectory(atPath: folder.string).sorted() == before)
    }

    // Apple: setting `resolvedLanguage` to nil "reverts to the system preference", and a language set is the
    // resolved one among the app's localized packs, installed or not (the new user's report, issue 29).
    @Test func aLanguageSetIsResolvedAtOnceAndNilGoesBackToTheSystems() async throws {
        try await withAssetPackServer(serving: try Fixture.make(), language: "de") { _ in
            _ = try await manager.manifest  // the app's localized packs: de and fr
            manager.resolvedLanguage = Locale.Language(identifier: "fr")
            #expect(manager.resolvedLanguage?.minimalIdentifier == "fr")
            try await manager.reconcilePreferredLanguages()
            #expect(await manager.locallyAvailableLanguages.map(\.minimalIdentifier) == ["fr"])
            manager.resolvedLanguage = nil  // back to the device's language: de, as the configuration plays it
            #expect(manager.resolvedLanguage?.minimalIdentifier == "de")
            try await manager.reconcilePreferredLanguages()
            #expect(await manager.locallyAvailableLanguages.map(\.minimalIdentifier) == ["de"])
            #expect(manager.resolvedLanguage?.minimalIdentifier == "de")
        }
    }

    // A link planted at .ba-sync/views (where merged folders are made): refused, and nothing is written where
    // it leads.
    @Test func aLinkPlantedWhereMergedFoldersAreMadeIsNotFollowed() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { server in
            try await manager.ensureLocalAvailability(
                of: Set(try await manager.manifest.assetPacks.filter { $0.language == nil })
            )
            let outside = Fixture.temporary("ba-outside")
            try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: server.appGroup.appending(".ba-sync/views").string,
                withDestinationPath: outside.path
            )
            #expect(throws: (any Error).self) { try manager.url(for: "Shared") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
        }
    }

    // A folder split across packs whose name is not ASCII merges byte for byte.
    @Test func aFolderWithAUnicodeNameSplitAcrossPacksIsMerged() async throws {
        let folder = try Fixture.make()
        for (id, name) in [("U1", "a 🎮.txt"), ("U2", "b é.txt")] {
            let root = URL(fileURLWithPath: folder.string)
            let file = root.appendingPathComponent("Über/日本語 🎮/\(name)")
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(id.utf8).write(to: file)
            try Data(
                #"{"assetPackID": "\#(id)", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "Über/日本語 🎮/\#(name)"}], "platforms": ["iOS"]}"#
                    .utf8
            ).write(to: root.appendingPathComponent("\(id).json"))
        }
        try await withAssetPackServer(serving: folder) { _ in
            let manifest = try await manager.manifest
            try await manager.ensureLocalAvailability(of: Set(manifest.assetPacks.filter { $0.id.hasPrefix("U") }))
            let merged = try manager.url(for: "Über/日本語 🎮")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: merged.path).sorted() == ["a 🎮.txt", "b é.txt"]
            )
        }
    }

    @Test func withoutAnAppGroupSharedStopsWithApplesMessage() {
        guard case .failure(let problem) = ManagerConfiguration.fromEnvironment([:]) else {
            Issue.record("an empty environment configured a manager")
            return
        }
        #expect(
            problem.description.hasPrefix(
                "The app couldn't be validated: The bundle's info dictionary lacks a string value for the key \"BAAppGroupID\"."
            )
        )
        guard case .success(let configured) = ManagerConfiguration.fromEnvironment(["BA_SYNC_APP_GROUP": "/tmp/g"])
        else {
            Issue.record("BA_SYNC_APP_GROUP did not configure a manager")
            return
        }
        #expect(configured.appGroup == "/tmp/g")
        #expect(configured.manifestURL == nil && configured.platform == "iOS")
        // The rule ba-sync plays (ClientSettings): a value that is neither yes nor no is refused, not taken as
        // no; a server's manifest is its /manifest.
        guard
            case .failure(let delta) = ManagerConfiguration.fromEnvironment([
                "BA_SYNC_APP_GROUP": "/tmp/g", "BA_SYNC_DELTA": "maybe",
            ])
        else {
            Issue.record("BA_SYNC_DELTA=maybe configured a manager")
            return
        }
        #expect(delta.description == "BA_SYNC_DELTA=maybe is not 1 or 0 (or true, false, yes, no)")
        let server = ManagerConfiguration.fromEnvironment([
            "BA_SYNC_APP_GROUP": "/tmp/g", "BA_SYNC_SERVER": "http://127.0.0.1:8443/",
        ])
        #expect((try? server.get())?.manifestURL?.absoluteString == "http://127.0.0.1:8443/manifest")
    }
}

private struct DeclineLevels: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool { assetPack.id != "Levels" }
}

private struct AcceptAll: ManagedDownloaderExtension {}
