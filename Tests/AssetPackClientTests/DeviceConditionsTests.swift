import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackClient

/// The device's conditions played on purpose: free space, offline, a network that drops and comes back.
@Suite("Device conditions")
struct DeviceConditionsTests {
    /// A live ba-mock over the sample folder (Textures holds 450 000 bytes of noise), and a manager playing
    /// `conditions` with quick backoff.
    func withDevice<T: Sendable>(
        _ conditions: DeviceConditions,
        resumable: Bool = false,
        _ body: @Sendable (LiveServer, AssetPackManager, Scratch) async throws -> T
    ) async throws -> T {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Textures/big.bin", Scratch.noise(400_000, seed: 21))
        return try await LiveServer.with(folder: scratch.root) { server in
            var configuration = AssetPackManager.Configuration(
                server: URL(string: server.url)!,
                appGroup: scratch.root.appending("AppGroup")
            )
            configuration.retryPolicy = RetryPolicy(baseDelay: .milliseconds(10), maximumDelay: .milliseconds(50))
            configuration.resumableDownloads = resumable
            configuration.conditions = conditions
            let manager = try AssetPackManager(configuration: configuration)
            return try await body(server, manager, scratch)
        }
    }

    func packRequests(_ server: LiveServer, _ id: String) -> [String] {
        server.requestLines.withLock { $0.filter { $0.contains(" /assets/\(id) ") } }
    }

    /// Collects one pack's status updates while `body` runs, up to `finished` or `failed`, and what `body`
    /// threw.
    func updates(
        of id: String,
        _ manager: AssetPackManager,
        during body: () async throws -> Void
    ) async -> ([String], (any Error)?) {
        let stream = manager.statusUpdates(forAssetPackWithID: id)
        let collector = Task {
            var seen: [String] = []
            for await update in stream {
                switch update {
                case .began: seen.append("began")
                case .paused: seen.append("paused")
                case .downloading: if seen.last != "downloading" { seen.append("downloading") }
                case .finished: seen.append("finished")
                case .failed: seen.append("failed")
                }
                if seen.last == "finished" || seen.last == "failed" { break }
            }
            return seen
        }
        var thrown: (any Error)?
        do {
            try await body()
        } catch {
            thrown = error
        }
        return (await collector.value, thrown)
    }

    @Test(arguments: [false, true])
    func aPackThatWouldNotFitFailsBeforeAByteAndKeepsWhatIsInstalled(_ resumable: Bool) async throws {
        // Levels takes about 30 KB; Textures about 450 KB (and its archive as much again when resumable).
        try await withDevice(.init(freeSpace: 200_000), resumable: resumable) { server, manager, _ in
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let before = try manager.contents(at: "Levels/World1/level1.json")
            let textures = try await manager.assetPack(withID: "Textures")
            let (seen, thrown) = await updates(of: "Textures", manager) {
                try await manager.ensureLocalAvailability(of: textures)
            }
            let error = try #require(thrown as? AssetPackClientError, "\(String(describing: thrown))")
            #expect(error.code == .io)
            #expect(
                (error.cause as? Errno) == .noSpace,
                "the cause a full disk gives: \(String(describing: error.cause))"
            )
            #expect(error.message.contains("no space left on the device for pack Textures"), "\(error.message)")
            #expect(error.message.contains("--free-space 200000"), "\(error.message)")
            #expect(seen == ["failed"], "the sequence ends with failed: \(seen)")
            #expect(packRequests(server, "Textures").isEmpty, "nothing of the pack was fetched")
            #expect(try manager.contents(at: "Levels/World1/level1.json") == before)
            #expect(!manager.reader.assetPackIsAvailableLocally(withID: "Textures"))
            // Room made: the same call installs it.
            manager.setConditions(.init(freeSpace: 2_000_000))
            try await manager.ensureLocalAvailability(of: textures)
            #expect(try manager.verify(assetPackWithID: "Textures") == 2)
        }
    }

    @Test func freeSpaceCountsWhatEachInstallTook() async throws {
        // Room for Levels and Tutorial (about 230 KB together), not then for Textures too.
        try await withDevice(.init(freeSpace: 500_000)) { _, manager, _ in
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Tutorial"))
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
            }
            #expect(error?.message.contains("are free") == true, "\(error?.message ?? "")")
            // Removing a pack gives its room back.
            try await manager.remove(assetPackWithID: "Tutorial")
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
        }
    }

    @Test func offlineFailsAtOnceWithNotConnectedAndReadsStillWork() async throws {
        try await withDevice(.init()) { server, manager, _ in
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            manager.setConditions(.init(network: .offline))
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
            }
            #expect(error?.message.contains("attempts") == false, "not retried: \(error?.message ?? "")")
            #expect(error?.code == .network)
            #expect((error?.cause as? URLError)?.code == .notConnectedToInternet)
            #expect(error?.message.contains("the device is offline") == true, "\(error?.message ?? "")")
            #expect(packRequests(server, "Textures").isEmpty)
            #expect(try manager.contents(at: "Levels/World1/level1.json").count > 0)
            // Offline, assetPack(withID:) answers from the manifest last fetched, as Apple's does from its cache.
            #expect(try await manager.assetPack(withID: "Textures").id == "Textures")
        }
    }

    @Test(arguments: [false, true])
    func aDropPausesTheDownloadAndItResumesWhereItStopped(_ resumable: Bool) async throws {
        let drop = DeviceConditions.Drop(afterBytes: 100_000, downFor: .milliseconds(300))
        try await withDevice(.init(drop: drop), resumable: resumable) { server, manager, scratch in
            let textures = try await manager.assetPack(withID: "Textures")
            let start = ContinuousClock.now
            let (seen, thrown) = await updates(of: "Textures", manager) {
                try await manager.ensureLocalAvailability(of: textures)
            }
            #expect(thrown == nil, "\(String(describing: thrown))")
            #expect(ContinuousClock.now - start >= .milliseconds(300), "waited for the network")
            #expect(seen == ["began", "downloading", "paused", "began", "downloading", "finished"], "\(seen)")
            #expect(
                try manager.contents(at: "Textures/big.bin") == scratch.read(scratch.root.appending("Textures/big.bin"))
            )
            #expect(try manager.verify(assetPackWithID: "Textures") == 2)
            var requests: [String] = []
            for _ in 0..<100 where requests.count < 2 {
                requests = packRequests(server, "Textures")
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(requests.count == 2, "\(requests)")
            #expect(requests.last?.contains(" bytes=") == true, "resumed with a range: \(requests)")
        }
    }

    @Test func goingOfflineDuringADownloadPausesItUntilTheNetworkIsBack() async throws {
        try await withDevice(.init(drop: .init(afterBytes: 50_000, downFor: .milliseconds(100)))) {
            _,
            manager,
            scratch in
            let textures = try await manager.assetPack(withID: "Textures")
            // Offline the moment the drop comes; back 400 ms later.
            let stream = manager.statusUpdates(forAssetPackWithID: "Textures")
            let toggler = Task {
                for await update in stream {
                    if case .paused = update {
                        manager.setConditions(.init(network: .offline))
                        try await Task.sleep(for: .milliseconds(400))
                        manager.setConditions(.init())
                        return ContinuousClock.now
                    }
                }
                return ContinuousClock.now
            }
            try await manager.ensureLocalAvailability(of: textures)
            let finished = ContinuousClock.now
            let backOnline = try await toggler.value
            #expect(finished >= backOnline, "finished only once the network was back")
            #expect(
                try manager.contents(at: "Textures/big.bin") == scratch.read(scratch.root.appending("Textures/big.bin"))
            )
        }
    }
}
