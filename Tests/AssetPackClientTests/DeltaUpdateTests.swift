import AssetPackClient
import AssetPackFormat
import AssetPackServer
import Foundation
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

/// Updates through delta archives: only the changed files move, every file of the new version is verified,
/// and anything wrong with the delta falls back to the whole pack once.
@Suite("Delta updates")
struct DeltaUpdateTests {
    /// What a manager reported about deltas, and the download requests the server saw.
    struct Seen: Sendable {
        var deltas: [DeltaNotice] = []
        var fallbacks: [String] = []
    }

    /// Runs `body` against a live server over the sample folder with Levels installed at version 1, and
    /// collects the manager's delta events.
    func withLevelsInstalled(
        deltaDepth: Int = 3,
        deltaUpdates: Bool = true,
        _ body: @Sendable (LiveServer, AssetPackManager, Scratch) async throws -> Void
    ) async throws -> Seen {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Levels/World2/big.bin", Scratch.noise(400_000, seed: 8))  // what a delta leaves home
        return try await LiveServer.with(folder: scratch.root, deltaDepth: deltaDepth) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: scratch.root.appending("AppGroup"),
                    retryPolicy: RetryPolicy(retries: 1),
                    deltaUpdates: deltaUpdates
                )
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let events = manager.events
            let collector = Task {
                var seen = Seen()
                for await event in events {
                    if case .delta(_, let notice) = event { seen.deltas.append(notice) }
                    if case .deltaFailed(_, let reason) = event { seen.fallbacks.append(reason) }
                }
                return seen
            }
            try await body(server, manager, scratch)
            manager.finishStatusUpdates()
            return await collector.value
        }
    }

    /// The request lines for Levels' archive and deltas after the first install.
    func downloads(_ server: LiveServer) -> [String] {
        server.requestLines.withLock { lines in
            lines.filter { $0.contains("/assets/Levels") || $0.contains("/deltas/Levels") }.dropFirst().map { $0 }
        }
    }

    func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    @Test func oneFileChangedAddedAndRemovedMovesOnlyThoseFiles() async throws {
        let seen = try await withLevelsInstalled { server, manager, scratch in
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 4}"#)
            try scratch.write("Levels/World3/new.json", #"{"name": "3-1"}"#)
            try FileManager.default.removeItem(atPath: scratch.root.appending("Levels/World2/level1.json").string)
            try await server.catalog.refresh()

            #expect(try await manager.checkForUpdatesAndWait().updatingIDs == ["Levels"])
            let fetched = downloads(server)
            #expect(fetched.count == 1 && fetched[0].contains("GET /deltas/Levels/"), "\(fetched)")
            #expect(manager.installedPack(withID: "Levels")?.version == 2)
            #expect(text(try manager.contents(at: "Levels/World1/level1.json")).contains("4"))
            #expect(text(try manager.contents(at: "Levels/World3/new.json")).contains("3-1"))
            #expect(try manager.contents(at: "Levels/World2/big.bin") == Scratch.noise(400_000, seed: 8))
            #expect(throws: ManagedBackgroundAssetsError.fileNotFound(at: "Levels/World2/level1.json")) {
                try manager.contents(at: "Levels/World2/level1.json")
            }
            #expect(try manager.verify(assetPackWithID: "Levels") == 4)
            // The installed record is the new version's, digest included: the next delta starts from it.
            let published = try await manager.assetPack(withID: "Levels")
            #expect(manager.installedPack(withID: "Levels")?.sha256 == published.sha256)
        }
        #expect(seen.deltas.map(\.fromVersion) == [1])
        #expect(seen.deltas.first?.fileCount == 2)
        #expect(seen.deltas.first.map { $0.downloadSize * 20 < $0.fullSize } == true)
        #expect(seen.fallbacks.isEmpty)
    }

    @Test func aClientSeveralVersionsBehindUsesADeltaFromItsVersionWithinTheDepth() async throws {
        let seen = try await withLevelsInstalled(deltaDepth: 2) { server, manager, scratch in
            for enemies in [5, 6] {  // versions 2 and 3
                try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": \#(enemies)}"#)
                try await server.catalog.refresh()
            }
            let published = try await manager.assetPack(withID: "Levels")
            #expect(published.version == 3)
            #expect(published.deltas.map(\.fromVersion) == [2, 1])
            try await manager.checkForUpdatesAndWait()
            #expect(downloads(server).allSatisfy { $0.contains("/deltas/Levels/") })
            #expect(text(try manager.contents(at: "Levels/World1/level1.json")).contains("6"))

            // Three more versions: version 3 is now beyond a depth of 2, so the whole pack comes.
            for enemies in [7, 8, 9] {
                try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": \#(enemies)}"#)
                try await server.catalog.refresh()
            }
            #expect(try await manager.assetPack(withID: "Levels").deltas.map(\.fromVersion) == [5, 4])
            // The server keeps what the depth needs: deltas to the published version, indexes of its bases.
            let state = scratch.root.appending(".ba-mock")
            let deltaFiles = try FileManager.default.contentsOfDirectory(atPath: state.appending("deltas").string)
            #expect(deltaFiles.count == 2 && deltaFiles.allSatisfy { $0.hasPrefix("Levels-") }, "\(deltaFiles)")
            let indexes = try FileManager.default.contentsOfDirectory(atPath: state.appending("indexes").string)
            // An index and a chunk list (big.bin is chunked) for each.
            #expect(indexes.filter { $0.hasPrefix("Levels-") && $0.hasSuffix(".json") }.count == 3, "\(indexes)")
            #expect(indexes.filter { $0.hasPrefix("Levels-") && $0.hasSuffix(".chunks") }.count == 3, "\(indexes)")
            try await manager.checkForUpdatesAndWait()
            #expect(downloads(server).last?.contains("GET /assets/Levels") == true, "\(downloads(server))")
            #expect(text(try manager.contents(at: "Levels/World1/level1.json")).contains("9"))
            #expect(try manager.verify() == 4)
        }
        #expect(seen.deltas.map(\.fromVersion) == [1])
        #expect(seen.fallbacks.isEmpty)
    }

    @Test func aFileChangedInTheMiddleMovesOnlyTheChangedBytes() async throws {
        var changed = Scratch.noise(400_000, seed: 8)
        changed.replaceSubrange(200_000..<210_000, with: Scratch.noise(10_000, seed: 9))
        let expected = changed
        let seen = try await withLevelsInstalled { server, manager, scratch in
            try scratch.write("Levels/World2/big.bin", expected)
            try await server.catalog.refresh()
            try await manager.checkForUpdatesAndWait()
            #expect(downloads(server).count == 1 && downloads(server)[0].contains("GET /deltas/Levels/"))
            #expect(try manager.contents(at: "Levels/World2/big.bin") == expected)
            #expect(try manager.verify() == 4)
        }
        #expect(seen.fallbacks.isEmpty)
        // 10 000 new bytes, the chunks around them (16 KiB on average): not the 400 000-byte file.
        #expect(seen.deltas.count == 1 && seen.deltas[0].downloadSize < 100_000, "\(seen.deltas)")
    }

    /// The rule an update trusts installed files by: a file whose stat (inode, size, modification and change
    /// times) is the one recorded at its own verified install is linked unread. Shown here by a stat record
    /// forged to match a tampered file: the update does not read it (no fallback), and `verify`, which
    /// re-hashes everything, finds it.
    @Test func aFileWhoseStatIsUnchangedSinceItsInstallIsNotHashedAgainButVerifyIs() async throws {
        let seen = try await withLevelsInstalled { server, manager, scratch in
            let installed = try #require(manager.installedPack(withID: "Levels"))
            let root = scratch.root.appending("AppGroup")
            let stats = root.appending(".ba-sync/stats/Levels").appending(FilePath(installed.directory).lastComponent!)
            #expect(FileManager.default.fileExists(atPath: stats.string), "an install with deltas records stats")
            let big = try manager.reader.installedFile(at: "Levels/World2/big.bin")
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: big.string))
            try handle.write(contentsOf: Data("tampered".utf8))  // same size
            try handle.close()
            // The record forged to say what the file is now.
            try Data(try currentStats(root, installed)).write(to: URL(fileURLWithPath: stats.string))

            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 21}"#)
            try await server.catalog.refresh()
            try await manager.checkForUpdatesAndWait()
            #expect(manager.installedPack(withID: "Levels")?.version == 2)
            let verification = try manager.reader.verification(ofAssetPackWithID: "Levels")
            #expect(verification.problems.map(\.path) == ["Levels/World2/big.bin"])
        }
        #expect(seen.fallbacks.isEmpty)
    }

    /// The stats of the files of a version, as the quick check records them.
    func currentStats(_ root: FilePath, _ installed: InstalledPack) throws -> [UInt8] {
        let index = try PackIndex.load(from: root.appending(installed.directory + ".index.json"))
        var words: [UInt64] = []
        for file in index.files {
            var info = stat()
            #expect(lstat(root.appending(installed.directory).appending(file.path).string, &info) == 0)
            words += [UInt64(info.st_dev), UInt64(info.st_ino), UInt64(info.st_size)]
            for time in [info.st_mtim, info.st_ctim] {
                words.append(UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec))
            }
        }
        return words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }

    /// The files a delta links from the base share their inodes with it, and removing the base after the
    /// commit changes their change time: the record is taken after that, or the next update hashes them all.
    @Test func theStatsRecordedAfterADeltaAreTheFilesStatsOnceTheBaseIsGone() async throws {
        _ = try await withLevelsInstalled { server, manager, scratch in
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 22}"#)
            try await server.catalog.refresh()
            try await manager.checkForUpdatesAndWait()
            let installed = try #require(manager.installedPack(withID: "Levels"))
            #expect(installed.version == 2)
            let root = scratch.root.appending("AppGroup")
            let recorded = try scratch.read(
                root.appending(".ba-sync/stats/Levels").appending(FilePath(installed.directory).lastComponent!)
            )
            #expect(recorded == Data(try currentStats(root, installed)))
        }
    }

    @Test func aTamperedInstalledFileIsNotCarriedIntoTheNewVersion() async throws {
        let seen = try await withLevelsInstalled { server, manager, scratch in
            // A file the delta keeps from the installed version is changed on the device.
            let installed = try manager.reader.installedFile(at: "Levels/World2/big.bin")
            try Data("tampered".utf8).write(to: URL(fileURLWithPath: installed.string))
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 9}"#)
            try await server.catalog.refresh()

            try await manager.checkForUpdatesAndWait()
            let fetched = downloads(server)
            #expect(fetched.count == 2, "\(fetched)")
            #expect(
                fetched.first?.contains("/deltas/Levels/") == true && fetched.last?.contains("/assets/Levels") == true
            )
            #expect(try manager.contents(at: "Levels/World2/big.bin") == Scratch.noise(400_000, seed: 8))
            #expect(try manager.verify() == 4)
        }
        #expect(seen.deltas.count == 1)
        #expect(seen.fallbacks.count == 1)
        #expect(seen.fallbacks == ["installed Levels/World2/big.bin differs from its index"])
    }

    @Test(arguments: ["fifo", "gone", "symlink"])
    func somethingElseInPlaceOfAnInstalledFileNeverHangsAnUpdateOrARead(_ kind: String) async throws {
        let seen = try await withLevelsInstalled { server, manager, scratch in
            let installed = try manager.reader.installedFile(at: "Levels/World2/big.bin")
            try FileManager.default.removeItem(atPath: installed.string)
            // A FIFO with no writer: an open without O_NONBLOCK would wait for one forever.
            if kind == "fifo" { #expect(mkfifo(installed.string, 0o644) == 0) }
            if kind == "symlink" {  // to the right bytes elsewhere: still not the installed file
                let elsewhere = try scratch.write("elsewhere.bin", Scratch.noise(400_000, seed: 8))
                try FileManager.default.createSymbolicLink(
                    atPath: installed.string,
                    withDestinationPath: elsewhere.string
                )
            }
            let verification = try manager.reader.verification(ofAssetPackWithID: "Levels")
            #expect(verification.problems.map(\.kind) == [kind == "gone" ? .missing : .differs])
            let read = #expect(throws: AssetPackClientError.self) { try manager.contents(at: "Levels/World2/big.bin") }
            if kind == "fifo" {
                #expect(read?.message.contains("not a regular file") == true, "\(String(describing: read))")
            }
            // Opens are non-blocking (a FIFO cannot hang them); a descriptor handed out is blocking, as any is.
            let handed = try manager.descriptor(for: "Levels/World1/level1.json")
            #expect(fcntl(handed.rawValue, F_GETFL) & O_NONBLOCK == 0)
            try handed.close()

            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 12}"#)
            try await server.catalog.refresh()
            try await manager.checkForUpdatesAndWait()
            #expect(manager.installedPack(withID: "Levels")?.version == 2)
            #expect(try manager.contents(at: "Levels/World2/big.bin") == Scratch.noise(400_000, seed: 8))
            #expect(try manager.verify() == 4)
        }
        let reason = kind == "gone" ? "missing" : "unreadable"
        #expect(seen.fallbacks == ["installed Levels/World2/big.bin \(reason)"])
    }

    /// A folder of the installed pack replaced by a link to a copy elsewhere: the delta's reuse of the base's
    /// files must not hard-link the outside file into the new version.
    @Test func aFolderOfTheInstalledPackThatLinksElsewhereIsNotLinkedFrom() async throws {
        let seen = try await withLevelsInstalled { server, manager, scratch in
            let installed = try manager.reader.installedFile(at: "Levels/World2/big.bin").removingLastComponent()
            let outside = scratch.root.appending("Outside")
            #expect(rename(installed.string, outside.string) == 0)
            try FileManager.default.createSymbolicLink(atPath: installed.string, withDestinationPath: outside.string)
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 13}"#)
            try await server.catalog.refresh()

            try await manager.checkForUpdatesAndWait()
            #expect(manager.installedPack(withID: "Levels")?.version == 2)
            #expect(try manager.contents(at: "Levels/World2/big.bin") == Scratch.noise(400_000, seed: 8))
            // The outside file is where it was, with its one link: no file of the new version is it.
            let attributes = try FileManager.default.attributesOfItem(atPath: outside.appending("big.bin").string)
            #expect(attributes[.referenceCount] as? Int == 1)
            #expect(try manager.verify() == 4)
        }
        #expect(seen.fallbacks == ["installed Levels/World2/big.bin unreadable"])
    }

    @Test func aDeltaTheServerCannotGiveFallsBackToTheWholePackOnce() async throws {
        let seen = try await withLevelsInstalled { server, manager, scratch in
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 10}"#)
            try await server.catalog.refresh()
            // The first download request (the delta's) gets a 404, as from a CDN that lacks the file.
            _ = try await server.get("/_mock/faults", method: .POST, body: "status=404,pack=Levels,times=1")
            try await manager.checkForUpdatesAndWait()
            let fetched = downloads(server)
            #expect(fetched.count == 2, "\(fetched)")
            #expect(fetched.first?.contains(" 404 ") == true && fetched.last?.contains("/assets/Levels") == true)
            #expect(text(try manager.contents(at: "Levels/World1/level1.json")).contains("10"))
        }
        #expect(seen.fallbacks == ["status 404"])
    }

    @Test func noDeltasOnTheServerOrNoneWantedMeansWholePacks() async throws {
        for (depth, wanted) in [(0, true), (3, false)] {
            let seen = try await withLevelsInstalled(deltaDepth: depth, deltaUpdates: wanted) {
                server,
                manager,
                scratch in
                try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 11}"#)
                try await server.catalog.refresh()
                #expect(try await manager.assetPack(withID: "Levels").deltas.isEmpty == (depth == 0))
                try await manager.checkForUpdatesAndWait()
                let fetched = downloads(server)
                #expect(fetched.count == 1 && fetched[0].contains("GET /assets/Levels"), "\(fetched)")
            }
            #expect(seen.deltas.isEmpty && seen.fallbacks.isEmpty)
        }
    }
}
