import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackClient

/// Symlinks planted inside an app group, as another process of the device (or a careless script) could: the
/// client refuses them or removes the link itself, and never writes, links or deletes through one.
@Suite("Symlinks planted in the app group")
struct PlantedSymlinkTests {
    /// Runs `body` with a live server over the sample folder, an app group, and a folder outside both that
    /// holds one file (`keep.txt`), which must survive unchanged whatever the client does.
    func withAppGroup(
        _ body: @Sendable (LiveServer, FilePath, FilePath, Scratch) async throws -> Void
    ) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let outside = scratch.root.appending("Outside")
        try scratch.write("Outside/keep.txt", "precious")
        try await LiveServer.with(folder: scratch.root) { server in
            try await body(server, scratch.root.appending("AppGroup"), outside, scratch)
        }
    }

    func manager(_ server: LiveServer, _ appGroup: FilePath) throws -> AssetPackManager {
        try AssetPackManager(
            configuration: .init(
                server: URL(string: server.url)!,
                appGroup: appGroup,
                retryPolicy: RetryPolicy(retries: 0)
            )
        )
    }

    /// The names below a folder (not following links), sorted, with each regular file's bytes.
    func listing(_ folder: FilePath) throws -> [String: Data] {
        var found: [String: Data] = [:]
        for name in try FileManager.default.subpathsOfDirectory(atPath: folder.string) {
            let path = folder.appending(name).string
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let isFile = attributes[.type] as? FileAttributeType == .typeRegular
            found[name] = isFile ? try Data(contentsOf: URL(fileURLWithPath: path)) : Data()
        }
        return found
    }

    func isSymlink(_ path: FilePath) -> Bool {
        var info = stat()
        return lstat(path.string, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    @Test func aStagingFolderThatLinksElsewhereIsRefusedAndNothingIsWrittenThere() async throws {
        try await withAppGroup { server, appGroup, outside, _ in
            try FileManager.default.createDirectory(
                atPath: appGroup.appending(".ba-sync").string,
                withIntermediateDirectories: true
            )
            try FileManager.default.createSymbolicLink(
                atPath: appGroup.appending(".ba-sync/staging").string,
                withDestinationPath: outside.string
            )
            let manager = try manager(server, appGroup)
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            }
            #expect(error?.message.contains("leads through a symlink") == true, "\(String(describing: error))")
            #expect(try listing(outside) == ["keep.txt": Data("precious".utf8)])
        }
    }

    @Test func aLockFileThatLinksElsewhereCreatesNothingThere() async throws {
        try await withAppGroup { server, appGroup, outside, _ in
            try FileManager.default.createDirectory(
                atPath: appGroup.appending(".ba-sync").string,
                withIntermediateDirectories: true
            )
            let target = outside.appending("created-by-lock")
            try FileManager.default.createSymbolicLink(
                atPath: appGroup.appending(".ba-sync/lock").string,
                withDestinationPath: target.string
            )
            let manager = try manager(server, appGroup)
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            }
            #expect(error?.message.contains("is a symlink") == true, "\(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: target.string))
            #expect(try listing(outside) == ["keep.txt": Data("precious".utf8)])
        }
    }

    /// A partial download replaced by a link to a file elsewhere, beside a description of the very archive
    /// the manifest lists (public facts): the resumed download appended the pack's bytes to the outside file.
    @Test(arguments: [true, false])
    func aPartialDownloadThatLinksElsewhereIsNotWrittenThrough(resumable: Bool) async throws {
        try await withAppGroup { server, appGroup, outside, _ in
            let downloads = appGroup.appending(".ba-sync/downloads")
            try FileManager.default.createDirectory(atPath: downloads.string, withIntermediateDirectories: true)
            let pack = try await manager(server, appGroup).assetPack(withID: "Levels")
            let description =
                #"{"sha256":"\#(pack.sha256 ?? "")","downloadSize":\#(pack.downloadSize),"url":"\#(pack.url.absoluteString)"}"#
            try Data(description.utf8).write(
                to: URL(fileURLWithPath: downloads.appending("Levels.partial.json").string)
            )
            try FileManager.default.createSymbolicLink(
                atPath: downloads.appending("Levels.partial").string,
                withDestinationPath: outside.appending("keep.txt").string
            )
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: appGroup,
                    retryPolicy: RetryPolicy(retries: 0),
                    resumableDownloads: resumable
                )
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            #expect(try listing(outside) == ["keep.txt": Data("precious".utf8)])
            #expect(try manager.verify() == 3)
        }
    }

    @Test func aPackFolderThatLinksElsewhereIsNeitherFollowedNorEmptied() async throws {
        try await withAppGroup { server, appGroup, outside, scratch in
            let manager = try manager(server, appGroup)
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            // The installed pack's folder moved outside the app group and linked back in its place.
            let packFolder = appGroup.appending("AssetPacks/Levels")
            let moved = outside.appending("Levels")
            #expect(rename(packFolder.string, moved.string) == 0)
            try FileManager.default.createSymbolicLink(atPath: packFolder.string, withDestinationPath: moved.string)
            let before = try listing(outside)

            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 30}"#)
            try await server.catalog.refresh()
            let again = try self.manager(server, appGroup)
            _ = try? await again.checkForUpdatesAndWait()
            try await again.ensureLocalAvailability(of: try await again.assetPack(withID: "Levels"))

            #expect(try listing(outside) == before)  // nothing written, linked or deleted there
            #expect(!isSymlink(packFolder))
            #expect(String(decoding: try again.contents(at: "Levels/World1/level1.json"), as: UTF8.self).contains("30"))
            #expect(try again.verify() == 3)
        }
    }

    /// The quick check's records (`.ba-sync/stats`, `.ba-sync/stats/<id>`) replaced by links to a folder
    /// elsewhere: recovery sweeps records no version names, and it swept the folder the link led to.
    @Test(arguments: [".ba-sync/stats", ".ba-sync/stats/Levels"])
    func aStatsFolderThatLinksElsewhereIsNeitherFollowedNorSwept(_ planted: String) async throws {
        try await withAppGroup { server, appGroup, outside, scratch in
            let manager = try manager(server, appGroup)
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let link = appGroup.appending(planted)
            try FileManager.default.removeItem(atPath: link.string)
            try FileManager.default.createSymbolicLink(atPath: link.string, withDestinationPath: outside.string)
            let before = try listing(outside)

            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 31}"#)
            try await server.catalog.refresh()
            let again = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: appGroup,
                    retryPolicy: RetryPolicy(retries: 0),
                    deltaUpdates: true
                )
            )
            _ = try? await again.checkForUpdatesAndWait()
            try await again.ensureLocalAvailability(of: try await again.assetPack(withID: "Levels"))

            #expect(try listing(outside) == before)  // nothing written, read as a record, or deleted there
            #expect(String(decoding: try again.contents(at: "Levels/World1/level1.json"), as: UTF8.self).contains("31"))
            #expect(try again.verify() == 3)
        }
    }

    /// Replaces the installed index of `id` with `what`: a FIFO, or a link to /dev/zero.
    func plant(_ what: String, atIndexOf id: String, in appGroup: FilePath) throws {
        let installed = try #require(AssetPackReader(appGroup: appGroup).installedPack(withID: id))
        let index = appGroup.appending(installed.directory + ".index.json").string
        try FileManager.default.removeItem(atPath: index)
        if what == "fifo" {
            #expect(mkfifo(index, 0o644) == 0)
        } else {
            try FileManager.default.createSymbolicLink(atPath: index, withDestinationPath: "/dev/zero")
        }
    }

    // A FIFO or a link to /dev/zero where the installed index is: every read refuses it at once, naming it,
    // instead of waiting for a writer forever or reading zeros until memory runs out (attack run, issue 34).
    @Test(.timeLimit(.minutes(1)), arguments: ["fifo", "link to /dev/zero"])
    func anInstalledIndexThatIsNotARegularFileIsRefusedAtOnce(_ what: String) async throws {
        try await withAppGroup { server, appGroup, _, _ in
            let manager = try manager(server, appGroup)
            try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["Levels"])
            try plant(what, atIndexOf: "Levels", in: appGroup)
            let reader = AssetPackReader(appGroup: appGroup)
            let error = try await BlockingIO.longJob { () -> String in
                _ = try? reader.verify(assetPackWithID: "Levels")  // returns or throws; never waits
                do {
                    _ = try reader.contents(at: "Levels/World1/level1.json")
                    return ""
                } catch {
                    return "\(error)"
                }
            }
            #expect(error.contains(".index.json"))
            #expect(error.contains(what == "fifo" ? "a FIFO" : "symlink"))
        }
    }

    // The app group's state file is read as the other state files are: a FIFO there is refused, not waited on.
    @Test(.timeLimit(.minutes(1)))
    func aStateFileThatIsAFIFOIsRefusedAtOnce() async throws {
        try await withAppGroup { server, appGroup, _, _ in
            let manager = try manager(server, appGroup)
            try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["Levels"])
            let state = appGroup.appending(".ba-sync/state.json").string
            try FileManager.default.removeItem(atPath: state)
            #expect(mkfifo(state, 0o644) == 0)
            let store = AppGroupStore(root: appGroup)
            let error = try await BlockingIO.longJob { () -> String in
                do {
                    _ = try store.loadState()
                    return ""
                } catch {
                    return "\(error)"
                }
            }
            #expect(error.contains("state.json"))
            #expect(error.contains("a FIFO"))
        }
    }

    /// Removing an app group a failed first command made (``AppGroupStore/removeIfEmpty()``) never deletes
    /// through a `.ba-sync` planted as a symlink to a folder holding a `lock` and a `state.json` of its own. Two
    /// things hold it today: the state is not read through the link (so nothing counts as empty), and every
    /// removal is relative to folders opened without following links; either alone keeps `Outside` whole.
    @Test func removingAnEmptyAppGroupNeverDeletesThroughALink() throws {
        let scratch = try Scratch()
        try scratch.write("Outside/lock", "precious")
        try scratch.write("Outside/state.json", #"{"installed": {}}"#)
        try FileManager.default.createDirectory(
            atPath: scratch.root.appending("AppGroup").string,
            withIntermediateDirectories: true
        )
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("AppGroup/.ba-sync").string,
            withDestinationPath: scratch.root.appending("Outside").string
        )
        AppGroupStore(root: scratch.root.appending("AppGroup")).removeIfEmpty()
        let outside = try FileManager.default.contentsOfDirectory(atPath: scratch.root.appending("Outside").string)
        #expect(outside.sorted() == ["lock", "state.json"])
    }

    /// Dropping a pack's partial download (after each install, and on remove) never deletes through a
    /// `.ba-sync/downloads` planted as a symlink to a folder holding files of the same names.
    @Test func droppingAPartialDownloadNeverDeletesThroughALink() throws {
        let scratch = try Scratch()
        try scratch.write("Outside/Levels.partial", "precious")
        try scratch.write("Outside/Levels.partial.json", "{}")
        try FileManager.default.createDirectory(
            atPath: scratch.root.appending("AppGroup/.ba-sync").string,
            withIntermediateDirectories: true
        )
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("AppGroup/.ba-sync/downloads").string,
            withDestinationPath: scratch.root.appending("Outside").string
        )
        PartialDownload.discard("Levels", in: AppGroupStore(root: scratch.root.appending("AppGroup")))
        let outside = try FileManager.default.contentsOfDirectory(atPath: scratch.root.appending("Outside").string)
        #expect(outside.sorted() == ["Levels.partial", "Levels.partial.json"])
    }
}
