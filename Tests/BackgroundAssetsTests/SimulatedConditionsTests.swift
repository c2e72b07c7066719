import BackgroundAssets
import BackgroundAssetsTesting
import Foundation
import System
import Testing

/// The device's conditions through Apple's declarations, as an app's own tests meet them: what the app sees
/// is the system's error, and its status updates.
@Suite struct SimulatedConditionsTests {
    let manager = AssetPackManager.shared

    /// One pack's status updates while `body` runs (the sequence ends after `finished` or `failed`).
    func updates(
        of id: String,
        during body: () async throws -> Void
    ) async -> (seen: [AssetPackManager.DownloadStatusUpdate], thrown: (any Error)?) {
        let stream = manager.statusUpdates(forAssetPackWithID: id)
        let collector = Task {
            var seen: [AssetPackManager.DownloadStatusUpdate] = []
            for await update in stream { seen.append(update) }
            return seen
        }
        var thrown: (any Error)?
        do { try await body() } catch { thrown = error }
        return (await collector.value, thrown)
    }

    func names(_ seen: [AssetPackManager.DownloadStatusUpdate]) -> [String] {
        var names: [String] = []
        for update in seen {
            let name =
                switch update {
                case .began: "began"
                case .paused: "paused"
                case .downloading: "downloading"
                case .finished: "finished"
                case .failed: "failed"
                @unknown default: "unknown"
                }
            if name != "downloading" || names.last != name { names.append(name) }
        }
        return names
    }

    @Test func aPackThatWouldNotFitFailsWithTheSystemsOutOfSpaceError() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { _ in
            let extras = try #require(try await manager.manifest.assetPack(withID: "Extras"))  // 256 KiB
            manager.simulate(.init(freeSpace: 100_000))
            let (seen, thrown) = await updates(of: "Extras") {
                try await manager.ensureLocalAvailability(of: extras, requireLatestVersion: false)
            }
            let error = try #require(thrown as? CocoaError, "\(String(describing: thrown))")
            #expect(error.code == .fileWriteOutOfSpace)
            #expect((error.userInfo[NSUnderlyingErrorKey] as? POSIXError)?.code == .ENOSPC)
            #expect(error.localizedDescription.contains("no space left on the device for pack Extras"))
            guard case .failed(_, let failure) = seen.last else {
                Issue.record("the sequence did not end with failed: \(seen)")
                return
            }
            #expect((failure as? CocoaError)?.code == .fileWriteOutOfSpace)
            #expect(!manager.assetPackIsAvailableLocally(withID: "Extras"))
            await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Extras")) {
                try await manager.localSize(ofAssetPackWithID: "Extras", calculationMethod: .logical)
            }
            manager.simulate(.init(freeSpace: 10_000_000))
            try await manager.ensureLocalAvailability(of: extras, requireLatestVersion: false)
            #expect(try await manager.localSize(ofAssetPackWithID: "Extras", calculationMethod: .logical) >= 256 << 10)
        }
    }

    @Test func offlineFailsWithNotConnectedAndInstalledFilesStillRead() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { _ in
            let manifest = try await manager.manifest
            let levels = try #require(manifest.assetPack(withID: "Levels"))
            let extras = try #require(manifest.assetPack(withID: "Extras"))
            try await manager.ensureLocalAvailability(of: levels, requireLatestVersion: false)
            manager.simulate(.init(network: .offline))
            let error = await #expect(throws: URLError.self) {
                try await manager.ensureLocalAvailability(of: extras, requireLatestVersion: false)
            }
            #expect(error?.code == .notConnectedToInternet)
            #expect(error?.localizedDescription.contains("the device is offline") == true)
            #expect(try manager.contents(at: "Levels/Über/日本語 🎮.json").count > 0)
        }
    }

    @Test func aDropPausesTheDownloadAndItBeginsAgainWhenTheNetworkIsBack() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { _ in
            let extras = try #require(try await manager.manifest.assetPack(withID: "Extras"))
            manager.simulate(.init(networkDrop: (afterBytes: 64 << 10, downFor: .milliseconds(200))))
            let (seen, thrown) = await updates(of: "Extras") {
                try await manager.ensureLocalAvailability(of: extras, requireLatestVersion: false)
            }
            #expect(thrown == nil, "\(String(describing: thrown))")
            #expect(names(seen) == ["began", "downloading", "paused", "began", "downloading", "finished"])
            #expect(try manager.contents(at: "Extras/big.bin").count == 256 << 10)
        }
    }

    /// Forum thread 814877: on iOS 26.0–26.3 only the first cancel works.
    @Test func laterCancelsIgnoredPlaysTheOS26Defect() async throws {
        try await withAssetPackServer(serving: try Fixture.make()) { server in
            try server.addFault("throttle=131072,pack=Extras")  // 256 KiB at 128 KiB/s: about 2 s
            let extras = try #require(try await manager.manifest.assetPack(withID: "Extras"))
            manager.simulate(.init(osBehaviours: [.laterCancelsIgnored]))
            var outcomes: [String] = []
            for _ in 0..<2 {
                let updates = manager.statusUpdates(forAssetPackWithID: "Extras")
                let ensuring = Task {
                    try await manager.ensureLocalAvailability(of: extras, requireLatestVersion: false)
                }
                var last = "none"
                for await update in updates {  // ends after finished or failed
                    if case .downloading(_, let progress) = update, !progress.isCancelled { progress.cancel() }
                    last = names([update])[0]
                }
                let returned = await ensuring.result
                outcomes.append("\(last) \((try? returned.get()) == nil ? "threw" : "returned")")
            }
            // The first cancel cancels; the second does nothing and the download finishes.
            #expect(outcomes == ["failed threw", "finished returned"])
            #expect(try manager.contents(at: "Extras/big.bin").count == 256 << 10)
        }
    }
}
