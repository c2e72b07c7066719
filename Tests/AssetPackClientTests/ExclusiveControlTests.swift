import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackClient

@Suite("Exclusive control that is exclusive")
struct ExclusiveControlTests {
    /// The request lines for `path`, once at least `count` arrived (a line is written when its body ends).
    func lines(_ server: LiveServer, _ path: String, atLeast count: Int) async throws -> [String] {
        var found: [String] = []
        for _ in 0..<100 {
            found = server.requestLines.withLock { $0.filter { $0.hasPrefix("GET \(path) ") } }
            if found.count >= count { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        return found
    }

    @Test func twoEnsuresOfOnePackInOneProcessDownloadItOnce() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Textures/big.bin", Scratch.noise(3_000_000, seed: 5))
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            let pack = try await manager.assetPack(withID: "Textures")
            let updates = manager.statusUpdates(forAssetPackWithID: "Textures")
            let began = Task {
                var count = 0
                for await case .began in updates { count += 1 }
                return count
            }
            // Both calls run inside one exclusive section, so both are past the app group's lock before either
            // looks at what is installed: only a per-pack gate keeps the second from downloading too.
            try await manager.withExclusiveControl {
                async let first: Void = manager.ensureLocalAvailability(of: pack)
                async let second: Void = manager.ensureLocalAvailability(of: pack)
                _ = try await (first, second)
            }

            // Both calls have returned, so every download either made has begun and ended: the client counts
            // the ones it began (its updates end here, after all it sent), the server the bodies it sent.
            manager.finishStatusUpdates()
            #expect(await began.value == 1)
            #expect(try await lines(server, "/assets/Textures", atLeast: 1).count == 1)
            // The live folder is the one the state names, whole, and it is the only one.
            let installed = try #require(manager.installedPack(withID: "Textures"))
            let versions = try FileManager.default.contentsOfDirectory(
                atPath: appGroup.appending("AssetPacks/Textures").string
            )
            let live = String(installed.directory.split(separator: "/").last ?? "")
            #expect(Set(versions) == [live, live + ".index.json"])
            #expect(try manager.verify(assetPackWithID: "Textures") == 2)
            #expect(
                try manager.contents(at: "Textures/big.bin") == scratch.read(scratch.root.appending("Textures/big.bin"))
            )
        }
    }

    @Test func aDamagedStateReleasesTheLockForTheNextCall() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        try scratch.write("AppGroup/.ba-sync/state.json", "{ not json")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            let pack = try await manager.assetPack(withID: "Tutorial")
            let damaged = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: pack)
            }
            #expect(damaged?.message.contains("state.json is damaged") == true, "\(damaged?.description ?? "")")

            // The user follows the fix; the same manager (and another one) gets the lock at once.
            try FileManager.default.removeItem(atPath: appGroup.appending(".ba-sync/state.json").string)
            let retried = Task { try await manager.ensureLocalAvailability(of: pack) }
            let watchdog = Task {
                try await Task.sleep(for: .seconds(10))
                retried.cancel()
            }
            try await retried.value
            watchdog.cancel()
            #expect(manager.assetPackIsAvailableLocally(withID: "Tutorial"))
            let other = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup, lockTimeout: .seconds(5))
            )
            try await other.withExclusiveControl {}
        }
    }

    @Test func aLockWaitEndsAtTheTimeoutOrWhenCancelled() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let holder = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            let waiter = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: appGroup,
                    lockTimeout: .milliseconds(300)
                )
            )
            let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
            let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
            let holding = Task {
                try await holder.withExclusiveControl {
                    enteredContinuation.yield()
                    for await _ in release { break }
                }
            }
            for await _ in entered { break }
            let timedOut = await #expect(throws: AssetPackClientError.self) {
                try await waiter.withExclusiveControl {}
            }
            #expect(timedOut?.code == .lockTimeout)
            #expect(timedOut?.message.contains("pid \(getpid())") == true, "\(timedOut?.description ?? "")")

            // Cancelled once it says it waits for the holder, not after a guess at how long it takes to start.
            let (waits, waitsContinuation) = AsyncStream<Int32?>.makeStream()
            let patient = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            ) {
                waitsContinuation.yield($0)
            }
            let waiting = Task { try await patient.withExclusiveControl {} }
            let deadline = Task {
                try await Task.sleep(for: .seconds(10))
                waitsContinuation.finish()
            }
            var holderSeen: Int32?? = nil
            for await holder in waits {
                holderSeen = holder
                break
            }
            deadline.cancel()
            #expect(holderSeen == .some(getpid()), "it never said it waits")
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }

            releaseContinuation.yield()
            try await holding.value
            try await waiter.withExclusiveControl {}  // free again
        }
    }

    @Test func aReadThatLosesARaceWithAnUpdateLooksAgain() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            // The view a reader resolved with, just before an update commits and removes its folder.
            let before = try manager.reader.currentNamespace()
            let oldFolder = try #require(manager.installedPack(withID: "Levels")).directory

            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 9}"#)
            try await server.catalog.refresh()
            #expect(try await manager.checkForUpdatesAndWait().updatingIDs == ["Levels"])
            #expect(!FileManager.default.fileExists(atPath: appGroup.appending(oldFolder).string))

            let (fd, file, _) = try manager.reader.openInstalled("Levels/World1/level1.json", nil, view: before)
            defer { try? fd.close() }
            #expect(!file.contains(oldFolder))
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = try buffer.withUnsafeMutableBytes { try fd.read(fromAbsoluteOffset: 0, into: $0) }
            #expect(String(decoding: buffer[0..<count], as: UTF8.self).contains("9"))
        }
    }
}
