import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

@Suite("Versions, live updates and the state folder")
struct CatalogTests {
    @Test func liveUpdateBumpsTheVersionWhileAnOldDownloadFinishesIntact() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Textures/big.bin", Scratch.noise(6 << 20, seed: 9))
        try await LiveServer.with(folder: scratch.root) { server in
            let old = try scratch.archive(of: "Textures", in: server.catalog)
            let oldPath = try #require(server.catalog.snapshot.pack(withID: "Textures")).archive

            // Start a download and take its first bytes only.
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: server.url + "/assets/Textures"),
                timeout: .seconds(30)
            )
            #expect(response.headers.first(name: "X-Asset-Pack-Version") == "1")
            var iterator = response.body.makeAsyncIterator()
            var received = Data()
            if let first = try await iterator.next() { received.append(contentsOf: first.readableBytesView) }
            #expect(received.count < old.count)

            // Change the content; the pack is rebuilt beside the old one and swapped in.
            try scratch.write("Textures/rock.ktx2", Scratch.noise(50_000, seed: 4))
            let report = try await server.catalog.refresh()
            #expect(report.changes == [CatalogReport.Change(id: "Textures", from: 1, to: 2)])
            #expect(!FileManager.default.fileExists(atPath: oldPath.string), "keeping 1 archive removes the old file")

            // The download under way finishes with the old bytes.
            while let chunk = try await iterator.next() { received.append(contentsOf: chunk.readableBytesView) }
            #expect(received == old)

            // New requests get version 2.
            let manifest = try await server.manifest()
            let entry = try #require(manifest.assetPacks.first { $0.id == "Textures" })
            #expect(entry.version == 2)
            let fresh = try await server.get("/assets/Textures")
            #expect(fresh.header("X-Asset-Pack-Version") == "2")
            #expect(FileDigest.sha256(of: fresh.body) == entry.sha256)
            #expect(fresh.body != old)
            // Other packs did not move.
            #expect(manifest.assetPacks.filter { $0.id != "Textures" }.allSatisfy { $0.version == 1 })
        }
    }

    @Test func versionsPersistAcrossRestartsAndOnlyMoveWithContent() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let folder = AssetFolder(root: scratch.root)
        let first = try PackCatalog(folder: folder)
        try await first.refresh()
        let before = first.snapshot

        // Touching a file (same bytes) rebuilds but keeps the version and the digest.
        try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 3}"#)
        let second = try PackCatalog(folder: folder)
        let touched = try await second.refresh()
        #expect(touched.changes.isEmpty)
        #expect(second.snapshot == before)

        // New content: version 2, persisted for the next start.
        try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 4}"#)
        let changed = try await second.refresh()
        #expect(changed.changes == [.init(id: "Levels", from: 1, to: 2)])
        let third = try PackCatalog(folder: folder)
        try await third.refresh()
        #expect(third.snapshot.pack(withID: "Levels")?.version == 2)
        #expect(third.snapshot.pack(withID: "Tutorial")?.version == 1)

        // The state lives in .ba-mock/ and holds only the archives in use.
        let packs = try FileManager.default.contentsOfDirectory(atPath: folder.stateFolder.appending("packs").string)
        #expect(Set(packs) == Set(third.snapshot.packs.map { $0.archive.lastComponent!.string }))
        #expect(FileManager.default.fileExists(atPath: folder.stateFolder.appending("state.json").string))
    }

    @Test func aSmallerDeltaDepthAtRestartDropsTheDeltasBeyondIt() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let folder = AssetFolder(root: scratch.root)
        let catalog = try PackCatalog(folder: folder)
        try await catalog.refresh()
        for enemies in 4...5 {  // versions 2 and 3: deltas from 2 and 1
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": \#(enemies)}"#)
            try await catalog.refresh()
        }
        func deltas(_ catalog: PackCatalog) -> [Int] {
            catalog.snapshot.pack(withID: "Levels")?.deltas.map(\.fromVersion) ?? []
        }
        func files() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: folder.stateFolder.appending("deltas").string).count
        }
        #expect(deltas(catalog) == [2, 1])
        #expect(try files() == 2)

        for (depth, expected) in [(1, [2]), (0, [])] {  // no pack changed: the restart alone drops them
            let restarted = try PackCatalog(folder: folder, deltaDepth: depth)
            try await restarted.refresh()
            #expect(deltas(restarted) == expected)
            #expect(try files() == expected.count)
            #expect(restarted.snapshot.pack(withID: "Levels")?.version == 3)
        }
    }

    @Test func noDeltaIsPublishedWhenEveryFileChanged() async throws {
        let scratch = try Scratch()
        try scratch.write(
            "One.json",
            #"{"assetPackID": "One", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "One"}], "platforms": ["iOS"]}"#
        )
        try scratch.write("One/only.bin", Scratch.noise(20_000, seed: 1))
        let lines = Mutex<[String]>([])
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root)) { line in
            lines.withLock { $0.append(line) }
        }
        try await catalog.refresh()
        try scratch.write("One/only.bin", Scratch.noise(20_000, seed: 2))
        try await catalog.refresh()
        #expect(catalog.snapshot.pack(withID: "One")?.version == 2)
        #expect(catalog.snapshot.pack(withID: "One")?.deltas.isEmpty == true)
        #expect(lines.withLock { $0 }.contains("no delta of One from version 1: it would be no smaller than the pack"))
    }

    @Test func removedManifestUnpublishesThePack() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            try FileManager.default.removeItem(atPath: scratch.root.appending("Textures.json").string)
            let report = try await server.catalog.refresh()
            #expect(report.removed == ["Textures"])
            let manifest = try await server.manifest()
            #expect(manifest.assetPacks.map(\.id) == ["Levels", "Tutorial"])
            #expect(try await server.get("/assets/Textures").status == 404)
        }
    }

    @Test func brokenManifestKeepsTheLastGoodVersion() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            try scratch.write("Levels.json", #"{"assetPackID": "Levels", "#)
            let report = try await server.catalog.refresh()
            #expect(report.problems.count == 1)
            #expect(report.problems.first?.code == .invalidJSON)
            #expect(report.removed.isEmpty)
            #expect(try await server.manifest().assetPacks.map(\.id) == ["Levels", "Textures", "Tutorial"])
        }
    }

    @Test(arguments: [#"{"assetPackID": "Levels", "#, "bad selector"])
    func aManifestBrokenAfterARestartKeepsTheLastGoodVersion(_ broken: String) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        // The first run names the folder one way, the next another (absolute, or with ./): the state file
        // recorded the manifest under the first spelling.
        try await PackCatalog(folder: AssetFolder(root: scratch.root)).refresh()
        let respelled = FilePath(scratch.root.string + "/./")
        let catalog = try PackCatalog(folder: AssetFolder(root: respelled), archivesKept: 1)
        try await catalog.refresh()
        if broken == "bad selector" {
            let text = String(decoding: try scratch.read(scratch.root.appending("Levels.json")), as: UTF8.self)
            try scratch.write(
                "Levels.json",
                text.replacingOccurrences(of: #"{"directory": "Levels"}"#, with: #"{"directory": "NoSuchFolder"}"#)
            )
        } else {
            try scratch.write("Levels.json", broken)
        }
        let report = try await catalog.refresh()
        #expect(report.problems.count == 1)
        #expect(report.removed.isEmpty)
        #expect(catalog.snapshot.packs.map(\.id) == ["Levels", "Textures", "Tutorial"])
        #expect(catalog.snapshot.pack(withID: "Levels")?.version == 1)
    }

    @Test func pinnedVersionIsPublished() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, pinnedVersions: ["Levels": 7]) { server in
            let manifest = try await server.manifest()
            #expect(manifest.assetPacks.first { $0.id == "Levels" }?.version == 7)
            #expect(manifest.assetPacks.first { $0.id == "Tutorial" }?.version == 1)
            #expect(try await server.get("/assets/Levels").header("X-Asset-Pack-Version") == "7")
        }
    }

    /// Cancelling a refresh (a server shutting down) stops the pack under way within a buffer and leaves
    /// nothing of it. The build ran to its end first, whatever its size; the server stopped waiting for it
    /// (a 60-line workaround) and left its thread writing.
    @Test func aCancelledRefreshStopsThePackUnderWayAndLeavesNothingOfIt() async throws {
        let scratch = try Scratch()
        let huge = try scratch.write("Assets/Huge/huge.bin", Data())
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: huge.string))
        try handle.truncate(atOffset: 4 << 30)  // sparse: reading and packing it takes seconds, storing it nothing
        try handle.close()
        try scratch.write(
            "Assets/Huge.json",
            #"{"assetPackID": "Huge", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Huge"}], "platforms": ["iOS"]}"#
        )
        let folder = scratch.root.appending("Assets")
        let catalog = try PackCatalog(folder: AssetFolder(root: folder))
        let refresh = Task { try await catalog.refresh() }
        let deadline = ContinuousClock.now + .seconds(60)
        while !catalog.snapshot.building.contains("Huge") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        refresh.cancel()
        let report = try await refresh.value
        #expect(report.changes.isEmpty, "the build ran to its end: \(report.changes)")
        #expect(catalog.snapshot.pack(withID: "Huge") == nil)
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.appending(".ba-mock/packs").string)
        #expect(left.isEmpty, "\(left)")
    }

    @Test func watcherPicksUpChangesWithoutARestart() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        let (reports, continuation) = AsyncStream<CatalogReport>.makeStream()
        let watcher = Task { await catalog.watch(every: .milliseconds(50)) { continuation.yield($0) } }
        defer { watcher.cancel() }
        try scratch.write("Textures/new.ktx2", Scratch.noise(1000, seed: 5))
        let report = try await withThrowingTaskGroup(of: CatalogReport?.self) { group in
            group.addTask { await reports.first { _ in true } }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(report?.changes == [.init(id: "Textures", from: 1, to: 2)])
        #expect(catalog.snapshot.pack(withID: "Textures")?.fileCount == 2)
    }

    /// Two edits close together (a save, then another a moment later) publish one version, built once the
    /// folder has been quiet for the settle time: not a version for the half-finished state between them.
    /// Measured on the catalog's clock, set relative to the files' own change times: the test slept and then
    /// asserted on the wall clock, which a loaded machine moves at its own pace.
    @Test func editsCloseTogetherPublishOneVersionOnceTheFolderIsQuiet() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let folder = AssetFolder(root: scratch.root)
        let catalog = try PackCatalog(folder: folder, archivesKept: 1)
        try await catalog.refresh()
        let settle = Duration.milliseconds(700)
        /// A refresh as the watcher makes it, `after` the folder's last change.
        func refresh(_ after: Duration) async throws -> CatalogReport {
            let last = try folder.scan().lastChange
            let (seconds, attoseconds) = after.components
            await catalog.useClock { last + seconds * 1_000_000_000 + attoseconds / 1_000_000_000 }
            return try await catalog.refresh(settle: settle)
        }
        // A file dated an hour ahead (a clock that jumped, `touch -d`) neither holds builds back nor hides the
        // edits that follow: it made every edit publish at once.
        let future = scratch.root.appending("Videos/Intro.m4v").string
        var times = [
            timespec(tv_sec: time(nil) + 3600, tv_nsec: 0), timespec(tv_sec: time(nil) + 3600, tv_nsec: 0),
        ]
        #expect(utimensat(AT_FDCWD, future, &times, 0) == 0)
        try scratch.write("Textures/new.ktx2", Scratch.noise(1000, seed: 5))
        let between = try await refresh(.milliseconds(400))  // the first save, the second not yet made
        #expect(between.settling && between.changes.isEmpty, "\(between.changes)")
        try scratch.write("Textures/new2.ktx2", Scratch.noise(1000, seed: 6))
        let early = try await refresh(.milliseconds(699))
        #expect(early.settling && early.changes.isEmpty, "built before the folder was quiet: \(early.changes)")
        #expect(catalog.snapshot.pack(withID: "Textures")?.version == 1)
        let quiet = try await refresh(settle)
        #expect(!quiet.settling && quiet.changes == [.init(id: "Textures", from: 1, to: 2)], "\(quiet.changes)")
        let again = try await refresh(.seconds(5))
        #expect(!again.settling && again.changes.isEmpty, "\(again.changes)")
        #expect(catalog.snapshot.pack(withID: "Textures")?.fileCount == 3)
        #expect(catalog.snapshot.pack(withID: "Textures")?.version == 2)
    }

    /// A manifest broken while serving is shown where scripts look: in the snapshot (the manifest and
    /// `/_mock/packs`), with its file and key, while the last good version stays published; fixing it clears it.
    @Test func aManifestBrokenWhileServingIsReportedUntilFixed() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        #expect(catalog.snapshot.problems.isEmpty)
        let good = try scratch.read(scratch.root.appending("Levels.json"))
        try scratch.write(
            "Levels.json",
            #"{"assetPackID": "Levels", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS"]}"#
        )
        let broken = try await catalog.refresh()
        #expect(broken.problems.count == 1)
        let problems = catalog.snapshot.problems
        #expect(problems.map(\.key) == ["fileSelectors"], "\(problems)")
        #expect(problems.first?.file.hasSuffix("Levels.json") == true)
        #expect(problems.first?.pack == "Levels")
        #expect(catalog.snapshot.pack(withID: "Levels")?.version == 1)
        let manifest = catalog.snapshot.manifest(baseURL: "http://x")
        #expect(manifest.mockProblems?.map(\.key) == ["fileSelectors"])
        let states = await catalog.packStates
        #expect(states.first { $0.id == "Levels" }?.problems.map(\.key) == ["fileSelectors"])
        try scratch.write("Levels.json", good)
        let fixed = try await catalog.refresh()
        #expect(fixed.fixed == [scratch.root.appending("Levels.json").string])
        #expect(catalog.snapshot.problems.isEmpty)
        #expect(catalog.snapshot.manifest(baseURL: "http://x").mockProblems == nil)
    }

    /// A copy of a manifest saved beside it with the same ID replaced the published pack with the copy's
    /// files (the copy's name sorted first); now neither builds and the last good version stays.
    @Test func aSecondManifestWithAPublishedIDDoesNotReplaceThePack() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        let before = try #require(catalog.snapshot.pack(withID: "Levels"))
        try scratch.write(
            "Copy.json",
            #"{"assetPackID": "Levels", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "Videos/Intro.m4v"}], "platforms": ["iOS"]}"#
        )
        let report = try await catalog.refresh()
        #expect(report.changes.isEmpty)
        let after = try #require(catalog.snapshot.pack(withID: "Levels"))
        #expect(after.version == before.version && after.sha256 == before.sha256)
        #expect(catalog.snapshot.problems.filter { $0.pack == "Levels" }.map(\.key) == ["assetPackID", "assetPackID"])
    }

    @Test func folderProblemsAreAllReported() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write(
            "Copy.json",
            String(decoding: try scratch.read(scratch.root.appending("Levels.json")), as: UTF8.self)
        )
        try scratch.write(
            "Overlap.json",
            #"{"assetPackID": "Overlap", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "Videos/Intro.m4v"}], "platforms": ["iOS"]}"#
        )
        try scratch.write("Bad.json", #"{"assetPackID": "Bad"}"#)
        // A localized pack holding the same path is the localized pattern, not a collision.
        try scratch.write(
            "French.json",
            #"{"assetPackID": "French", "language": "fr", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "Videos/Intro.m4v"}], "platforms": ["iOS"]}"#
        )
        let scan = try AssetFolder(root: scratch.root).scan()
        // Copy.json and Levels.json both say "Levels": neither is built (which was meant is not for a tool to
        // guess), and each names the other.
        #expect(scan.sources.map(\.manifest.assetPackID) == ["French", "Overlap", "Textures", "Tutorial"])
        let duplicates = scan.problems.filter { $0.code == .duplicatePackID }
        #expect(duplicates.count == 2)
        #expect(duplicates.allSatisfy { $0.message.contains("Levels.json") && $0.message.contains("Copy.json") })
        #expect(scan.problems.contains { $0.message.contains("Bad.json: downloadPolicy: is missing") })
        #expect(scan.warnings.contains { $0.hasPrefix("Videos/Intro.m4v is in packs Overlap, Tutorial:") })
        let collision = try #require(scan.manifestProblems.first { $0.message.contains("collides") })
        #expect(collision.fix?.contains("Keep each path in one pack") == true)
        #expect(!scan.warnings.contains { $0.contains("French") })
    }

    /// A FIFO and a symlink to `/dev/zero` named `*.json` are problems of their own beside valid manifests:
    /// an open waited for the FIFO's writer for good, and a read of /dev/zero grew until memory ran out.
    @Test func aFIFOOrADeviceAmongTheManifestsIsAProblemAndTheRestIsRead() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let fifo = scratch.root.appending("Bad.json")
        let zero = scratch.root.appending("Zero.json")
        #expect(mkfifo(fifo.string, 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: zero.string, withDestinationPath: "/dev/zero")
        let folder = AssetFolder(root: scratch.root)
        let outcome = finishing(
            within: 10,
            release: {
                unlink(zero.string)  // before the scan reaches it
                releaseFIFOReader(fifo.string)
            },
            { try folder.scan() }
        )
        let scan = try #require(outcome, "the scan waited for a writer on Bad.json").get()
        #expect(scan.sources.map(\.manifest.assetPackID) == ["Levels", "Textures", "Tutorial"])
        #expect(
            scan.problems.map(\.message) == [
                "\(fifo): (file): is a FIFO, not a regular file. Fix: remove it from the asset folder (a manifest is "
                    + "a regular file)",
                "\(zero): (file): is a symlink to a character device, not a regular file. Fix: remove it from the "
                    + "asset folder (a manifest is a regular file)",
            ]
        )
        #expect(scan.manifestProblems.filter { $0.severity == .error }.map(\.file) == [fifo.string, zero.string])
    }

    @Test func missingOrEmptyFolderSaysWhatToDo() throws {
        let missing = #expect(throws: AssetPackServerError.self) {
            try AssetFolder(root: "/nonexistent/Assets").scan()
        }
        #expect(missing?.code == .noAssetFolder)
        #expect(missing?.message.contains("ba-mock serve PATH") == true)
        let scratch = try Scratch()
        let empty = #expect(throws: AssetPackServerError.self) { try AssetFolder(root: scratch.root).scan() }
        #expect(empty?.message.contains("ba-mock template") == true)
    }
}

/// Item 12 of the attack run: 10 000 packs were all built before the server listened, nothing was saved
/// until the last, and a restart built them all again. A refresh now publishes and saves as it goes.
@Suite("A catalog of many packs")
struct ManyPacksCatalogTests {
    /// What the catalog had published and saved when it began to build each pack.
    struct Seen: Sendable {
        var published: [String: [String]] = [:]
        var saved: [String: Bool] = [:]
        var building: [String: Set<String>] = [:]
    }

    @Test func eachPackIsPublishedAndSavedOnceBuiltNotAfterTheLast() async throws {
        let scratch = try Scratch()
        for number in 0..<5 {
            try scratch.write("Content/P\(number)/file.txt", "pack \(number)")
            try scratch.write(
                "P\(number).json",
                #"{"assetPackID": "P\#(number)", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Content/P\#(number)"}], "platforms": ["iOS"]}"#
            )
        }
        let folder = AssetFolder(root: scratch.root)
        let stateFile = folder.stateFolder.appending("state.json").string
        let seen = Mutex(Seen())
        let box = Mutex<PackCatalog?>(nil)
        let catalog = try PackCatalog(folder: folder, deltaDepth: 0) { line in
            guard line.hasPrefix("building "), let catalog = box.withLock({ $0 }) else { return }
            let id = String(line.dropFirst("building ".count).prefix { $0 != ":" })
            let snapshot = catalog.snapshot
            let saved = (try? String(contentsOfFile: stateFile, encoding: .utf8))?.contains("\"P0\"") ?? false
            seen.withLock {
                $0.published[id] = snapshot.packs.map(\.id)
                $0.saved[id] = saved
                $0.building[id] = snapshot.building
            }
        }
        box.withLock { $0 = catalog }
        let (_, ids) = try await catalog.check()
        #expect(ids == ["P0", "P1", "P2", "P3", "P4"])
        #expect(catalog.snapshot.building == ids)  // announced before any is built
        try await catalog.refresh()
        let result = seen.withLock { $0 }
        #expect(result.published["P0"] == [])
        #expect(result.published["P1"] == ["P0"])  // served before the next one is built
        #expect(result.saved["P1"] == true)  // and saved: a restart would not build it again
        #expect(result.building["P1"] == ["P1", "P2", "P3", "P4"])
        #expect(catalog.snapshot.packs.map(\.id) == ["P0", "P1", "P2", "P3", "P4"])
        #expect(catalog.snapshot.building.isEmpty)
    }

    /// The manifest waits for the first build; a build that ends early (the folder gone) ends the wait too,
    /// or the manifest would answer 503 for good.
    @Test func aFirstBuildThatFailsEndsTheManifestsWait() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), deltaDepth: 0)
        _ = try await catalog.check()
        #expect(catalog.snapshot.incomplete)
        for name in try FileManager.default.contentsOfDirectory(atPath: scratch.root.string) where name != ".ba-mock" {
            try FileManager.default.removeItem(atPath: scratch.root.appending(name).string)
        }
        await #expect(throws: AssetPackServerError.self) { try await catalog.refresh() }  // ends early
        #expect(!catalog.snapshot.incomplete)
        #expect(catalog.snapshot.building.isEmpty)
    }
}

/// The state folder is written and swept (files no record names are deleted): a link in its place had
/// ba-mock write and delete in the folder it pointed to.
@Suite("The state folder is a folder of ba-mock's own")
struct StateFolderLinkTests {
    @Test(arguments: [".ba-mock", ".ba-mock/packs", ".ba-mock/indexes", ".ba-mock/deltas"])
    func aStateFolderThatLinksElsewhereIsRefusedAndNothingIsTouchedThere(_ linked: String) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Victim/packs/precious.txt", "keep")
        try scratch.write("Victim/precious.txt", "keep")
        let parent = scratch.root.appending(linked).removingLastComponent()
        try FileManager.default.createDirectory(atPath: parent.string, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending(linked).string,
            withDestinationPath: scratch.root.appending("Victim").string
        )
        let error = #expect(throws: AssetPackServerError.self) {
            _ = try PackCatalog(folder: AssetFolder(root: scratch.root))
        }
        #expect(error?.code == .state)
        #expect(error?.message.contains("is a symlink") == true, "\(error?.message ?? "")")
        let left = try FileManager.default.subpathsOfDirectory(atPath: scratch.root.appending("Victim").string)
        #expect(left.sorted() == ["packs", "packs/precious.txt", "precious.txt"])
    }
}
