import AssetPackClient
import AssetPackFormat
import AssetPackServer
import Foundation
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

@Suite("AssetPackManager against a live ba-mock")
struct AssetPackManagerTests {
    func manager(_ server: LiveServer, _ appGroup: FilePath) throws -> AssetPackManager {
        try AssetPackManager(configuration: .init(server: URL(string: server.url)!, appGroup: appGroup))
    }

    @Test func eventsFollowThePolicies() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, appGroup)
            let install = try await manager.sync(event: .install)
            #expect(install.installed == ["Levels", "Tutorial"])  // essential + prefetch(firstInstallation)
            #expect(install.failures.isEmpty)
            #expect(!manager.assetPackIsAvailableLocally(withID: "Textures"))  // on demand
            #expect(
                try manager.contents(at: "Videos/Intro.m4v") == scratch.read(scratch.root.appending("Videos/Intro.m4v"))
            )

            // New content on the server: update installs the prefetch pack's update (subsequentUpdate) and the
            // installed essential pack's update.
            try scratch.write("Levels/World2/level1.json", #"{"name": "2-1", "enemies": 6}"#)
            try scratch.write("Videos/Intro.m4v", Scratch.noise(1000, seed: 77))
            try await server.catalog.refresh()
            let update = try await manager.sync(event: .update)
            #expect(update.installed == ["Levels", "Tutorial"])
            #expect(manager.installedPack(withID: "Levels")?.version == 2)
            #expect(
                String(decoding: try manager.contents(at: "Levels/World2/level1.json"), as: UTF8.self).contains("6")
            )

            // Periodic: nothing changed.
            let periodic = try await manager.sync(event: .periodic)
            #expect(periodic.installed.isEmpty && periodic.removed.isEmpty)
            #expect(try manager.verify() == 4)
        }
    }

    // A miss says what would find the file (issue 34): a pack the server lists that is not installed, or the
    // same name in its other Unicode spelling.
    @Test func aMissNamesThePacksNotInstalledAndTheOtherUnicodeSpelling() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Levels/World1/Caf\u{E9}.json", "{}")  // NFC on disk
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, appGroup)
            try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["Levels"])
            let reader = manager.reader
            do {
                _ = try reader.contents(at: "Textures/rock.ktx2")
                Issue.record("read a file of a pack that is not installed")
            } catch let error as AssetPackClientError {
                #expect(error.code == .fileNotFound)
                #expect(error.message.contains("Packs Textures, Tutorial are listed by the server but not installed"))
                #expect(error.message.contains("`ba-sync ensure <pack>`"))
            }
            do {
                _ = try reader.contents(at: "Levels/World1/Cafe\u{301}.json")  // asked for in NFD
                Issue.record("read a file by its other Unicode spelling")
            } catch let error as AssetPackClientError {
                #expect(error.code == .fileNotFound)
                #expect(error.message.contains("differs only in its Unicode form"), "\(error.message)")
                #expect(error.message.contains("(NFC)"), "\(error.message)")
            }
        }
    }

    @Test func ensureRemoveAndEnsureAgain() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, scratch.root.appending("AppGroup"))
            let pack = try await manager.assetPack(withID: "Textures")
            #expect(await manager.localStatus(ofAssetPackWithID: "Textures") == [])
            try await manager.ensureLocalAvailability(of: pack)
            let source = try scratch.read(scratch.root.appending("Textures/rock.ktx2"))
            #expect(try manager.contents(at: "Textures/rock.ktx2") == source)
            #expect(try await manager.status(relativeTo: pack) == [.downloadAvailable, .upToDate, .downloaded])
            #expect(try await manager.status(relativeTo: pack).rawValue == 69)  // as Apple's forum example

            try await manager.remove(assetPackWithID: "Textures")
            #expect(!manager.assetPackIsAvailableLocally(withID: "Textures"))
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Textures/rock.ktx2")) {
                try manager.contents(at: "Textures/rock.ktx2")
            }
            #expect(
                !FileManager.default.fileExists(atPath: scratch.root.appending("AppGroup/AssetPacks/Textures").string)
            )

            try await manager.ensureLocalAvailability(of: pack)
            #expect(try manager.contents(at: "Textures/rock.ktx2") == source)
            await #expect(throws: ManagedBackgroundAssetsError.assetPackNotFound(withID: "Nope")) {
                try await manager.assetPack(withID: "Nope")
            }
        }
    }

    @Test func mappingTakenBeforeAnUpdateKeepsItsBytes() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, scratch.root.appending("AppGroup"))
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let old = try scratch.read(scratch.root.appending("Levels/World1/level1.json"))
            let mapped = try manager.contents(at: "Levels/World1/level1.json")
            let descriptor = try manager.descriptor(for: "Levels/World1/level1.json")
            defer { try? descriptor.close() }
            #expect(mapped == old)

            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 9, "boss": true}"#)
            try await server.catalog.refresh()
            let (updating, removed) = try await manager.checkForUpdates()
            #expect(updating == ["Levels"])
            #expect(removed.isEmpty)
            #expect(await manager.waitForScheduledUpdates().isEmpty)

            #expect(mapped == old)  // the old mapping still reads the old bytes
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = try buffer.withUnsafeMutableBytes { try descriptor.read(fromAbsoluteOffset: 0, into: $0) }
            #expect(Data(buffer[0..<count]) == old)
            let fresh = try manager.contents(at: "Levels/World1/level1.json")
            #expect(String(decoding: fresh, as: UTF8.self).contains("boss"))
            #expect(manager.installedPack(withID: "Levels")?.version == 2)
        }
    }

    @Test func obsoletePackIsRemovedAndCannotComeBack() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, scratch.root.appending("AppGroup"))
            let pack = try await manager.assetPack(withID: "Textures")
            try await manager.ensureLocalAvailability(of: pack)
            try FileManager.default.removeItem(atPath: scratch.root.appending("Textures.json").string)
            try await server.catalog.refresh()
            #expect(try await manager.status(relativeTo: pack).contains(.obsolete))
            let (_, removed) = try await manager.checkForUpdates()
            #expect(removed == ["Textures"])
            #expect(!manager.assetPackIsAvailableLocally(withID: "Textures"))
            #expect(await manager.localStatus(ofAssetPackWithID: "Textures") == [.obsolete])
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: pack)
            }
            #expect(error?.code == .obsolete)
        }
    }

    @Test func aPackPublishedAgainIsNoLongerObsolete() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, scratch.root.appending("AppGroup"))
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
            #expect(try await server.get("/_mock/packs/Textures/obsolete", method: .PUT).status == 200)
            #expect(try await manager.checkForUpdates().removedIDs == ["Textures"])
            #expect(await manager.localStatus(ofAssetPackWithID: "Textures") == [.obsolete])

            // The server lists it again: it can be downloaded again, and is no longer obsolete.
            #expect(try await server.get("/_mock/packs/Textures/obsolete", method: .DELETE).status == 200)
            #expect(try await server.manifest().assetPacks.contains { $0.id == "Textures" })
            let pack = try await manager.assetPack(withID: "Textures")
            try await manager.ensureLocalAvailability(of: pack)
            #expect(
                try manager.contents(at: "Textures/rock.ktx2")
                    == scratch.read(scratch.root.appending("Textures/rock.ktx2"))
            )
            #expect(!(await manager.localStatus(ofAssetPackWithID: "Textures")).contains(.obsolete))
            #expect(try await manager.checkForUpdates().removedIDs.isEmpty)
        }
    }

    @Test func collisionsResolveByRuleUnlessAPackIsNamed() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write(
            "Zoo.json",
            #"{"assetPackID": "Zoo", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "Textures/rock.ktx2"}], "platforms": ["iOS"]}"#
        )
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, scratch.root.appending("AppGroup"))
            try await manager.ensureLocalAvailability(
                of: Set([try await manager.assetPack(withID: "Zoo"), try await manager.assetPack(withID: "Textures")])
            )
            #expect(try manager.assetPackID(containing: "Textures/rock.ktx2") == "Textures")  // "Textures" < "Zoo"
            #expect(try manager.contents(at: "Textures/rock.ktx2", searchingInAssetPackWithID: "Zoo").count == 50_000)
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Videos/Intro.m4v")) {
                try manager.contents(at: "Videos/Intro.m4v", searchingInAssetPackWithID: "Zoo")
            }
            let escape = #expect(throws: AssetPackClientError.self) {
                try manager.contents(at: "../AppGroup/.ba-sync/state.json")
            }
            #expect(escape?.code == .invalidPath)
        }
    }

    @Test func statusUpdatesReportTheDownload() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try manager(server, scratch.root.appending("AppGroup"))
            let updates = manager.statusUpdates(forAssetPackWithID: "Tutorial")
            let collector = Task {
                var seen: [String] = []
                for await update in updates {
                    switch update {
                    case .began: seen.append("began")
                    case .downloading(_, let progress):
                        if progress.completed == progress.total { seen.append("complete") }
                    case .finished: seen.append("finished"); return seen
                    case .failed: seen.append("failed"); return seen
                    case .paused: seen.append("paused")
                    }
                }
                return seen
            }
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Tutorial"))
            #expect(await collector.value == ["began", "complete", "finished"])
        }
    }

    @Test func secondManagerWaitsForTheLockAndSaysWho() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let appGroup = scratch.root.appending("AppGroup")
            let first = try manager(server, appGroup)
            let waited = WaitRecorder()
            let second = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            ) {
                waited.record($0)
            }
            let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
            let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await first.withExclusiveControl {
                    enteredContinuation.yield()
                    for await _ in release { break }
                }
            }
            for await _ in entered { break }
            let contender = Task { try await second.sync(event: .install) }
            for _ in 0..<1000 where waited.pid == nil { try await Task.sleep(for: .milliseconds(10)) }
            #expect(waited.pid == getpid())
            releaseContinuation.yield()
            try await holder.value
            let report = try await contender.value
            #expect(report.installed == ["Levels", "Tutorial"])
        }
    }
}

final class WaitRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var holder: Int32??
    func record(_ pid: Int32?) { lock.withLock { holder = .some(pid) } }
    var pid: Int32? { lock.withLock { holder ?? nil } }
}
