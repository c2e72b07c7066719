import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

@Suite("export into a folder that holds other things")
struct ExportTests {
    @Test func exportRemovesOnlyWhatItWroteBefore() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let out = scratch.root.appending("site")
        // A web root with things of its own, some named like pack IDs.
        try scratch.write("site/assets/images/logo.png", Scratch.noise(100, seed: 1))
        try scratch.write("site/assets/style.css", "body {}")
        try scratch.write("site/index.html", "<html></html>")
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        _ = try Exporter.export(catalog.snapshot, to: out, baseURL: nil)
        for id in ["Levels", "Textures", "Tutorial"] {
            #expect(FileManager.default.fileExists(atPath: out.appending("assets/\(id)").string))
        }

        try FileManager.default.removeItem(atPath: scratch.root.appending("Textures.json").string)
        try await catalog.refresh()
        let result = try Exporter.export(catalog.snapshot, to: out, baseURL: nil)
        #expect(result.manifest.assetPacks.map(\.id) == ["Levels", "Tutorial"])
        #expect(!FileManager.default.fileExists(atPath: out.appending("assets/Textures").string))
        #expect(try scratch.read(out.appending("assets/images/logo.png")) == Scratch.noise(100, seed: 1))
        #expect(try scratch.read(out.appending("assets/style.css")) == Data("body {}".utf8))
        #expect(try scratch.read(out.appending("index.html")) == Data("<html></html>".utf8))
    }

    /// A pack is exported as a hard link to the archive built in `.ba-mock` (one write of its bytes, not two)
    /// where the file system allows, and as a copy on request: the same bytes and digest either way.
    @Test func packsAreLinkedWhereTheyCanBeAndCopiedOnRequest() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        let (linked, copied) = (scratch.root.appending("linked"), scratch.root.appending("copied"))
        _ = try Exporter.export(catalog.snapshot, to: linked, baseURL: nil)
        _ = try Exporter.export(catalog.snapshot, to: copied, baseURL: nil, linking: false)
        for pack in catalog.snapshot.packs {
            let built = try FileManager.default.attributesOfItem(atPath: pack.archive.string)
            for (out, shared) in [(linked, true), (copied, false)] {
                let exported = out.appending("assets/\(pack.id)")
                let attributes = try FileManager.default.attributesOfItem(atPath: exported.string)
                let same = attributes[.systemFileNumber] as? Int == built[.systemFileNumber] as? Int
                #expect(same == shared, "\(exported) shares the built archive's inode: \(same)")
                #expect(try FileDigest.sha256(of: exported) == pack.sha256)
            }
        }
    }

    /// A symlink planted where a built archive is, after the build, is neither linked into the output (a web
    /// server would follow it) nor followed: the export fails and nothing from where it leads is written.
    @Test(arguments: [true, false])
    func aSymlinkPlantedForABuiltArchiveIsNotExported(linking: Bool) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let secret = try scratch.write("secret.txt", "not a pack")
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        let archive = try #require(catalog.snapshot.pack(withID: "Levels")).archive
        try FileManager.default.removeItem(atPath: archive.string)
        try FileManager.default.createSymbolicLink(atPath: archive.string, withDestinationPath: secret.string)
        let out = scratch.root.appending("site")
        let error = #expect(throws: AssetPackFormatError.self) {
            try Exporter.export(catalog.snapshot, to: out, baseURL: nil, linking: linking)
        }
        #expect(error?.code == .io, "\(String(describing: error))")
        let exported = out.appending("assets/Levels").string
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: exported)) == nil)
        #expect(!FileManager.default.fileExists(atPath: exported))
    }

    /// An exported pack edited in place (it is a hard link to the built archive, so the archive changed too) is
    /// not served as it is: the next refresh, of this run or of a later one, sees the archive differs from what
    /// was built and builds it again; the pack keeps its version and digest, and the edited file (the user's) is
    /// left as it is.
    @Test(arguments: [false, true])
    func aPackEditedInPlaceThroughAnExportedLinkIsBuiltAgain(laterRun: Bool) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let out = scratch.root.appending("site")
        let said = Mutex<[String]>([])
        let log: @Sendable (String) -> Void = { line in said.withLock { $0.append(line) } }
        let folder = AssetFolder(root: scratch.root)
        var catalog = try PackCatalog(folder: folder, archivesKept: 1, log: log)
        try await catalog.refresh()
        let before = try #require(catalog.snapshot.pack(withID: "Levels"))
        _ = try Exporter.export(catalog.snapshot, to: out, baseURL: nil)
        let exported = out.appending("assets/Levels")
        var edited = try scratch.read(exported)
        edited[edited.count / 2] ^= 0xFF
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: exported.string))
        try handle.write(contentsOf: edited)  // in place, as `dd conv=notrunc` would
        try handle.close()

        if laterRun { catalog = try PackCatalog(folder: folder, archivesKept: 1, log: log) }
        try await catalog.refresh()
        let after = try #require(catalog.snapshot.pack(withID: "Levels"))
        #expect(after.version == before.version)
        #expect(try FileDigest.sha256(of: after.archive) == before.sha256)
        #expect(try scratch.read(exported) == edited)
        let lines = said.withLock { $0 }
        #expect(lines.contains { $0.contains("Levels") && $0.contains("changed since it was built") }, "\(lines)")
    }

    /// A tampered record cannot make export delete outside the output folder: `lnk -> ../victim` planted in
    /// OUT and `lnk/keep.txt` (and `../victim/keep.txt`) added to `.ba-mock-export.json` delete nothing
    /// there. Export followed the link and deleted the victim's file.
    @Test func aRecordedPathThroughASymlinkIsNotDeleted() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let out = scratch.root.appending("site")
        let victim = try scratch.write("victim/keep.txt", "not export's")
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        _ = try Exporter.export(catalog.snapshot, to: out, baseURL: nil)

        try FileManager.default.createSymbolicLink(
            atPath: out.appending("lnk").string,
            withDestinationPath: "../victim"
        )
        let recordFile = out.appending(".ba-mock-export.json")
        var record = try #require(
            try JSONSerialization.jsonObject(with: try scratch.read(recordFile)) as? [String: [String]]
        )
        record["files", default: []] += ["lnk/keep.txt", "../victim/keep.txt"]
        try JSONSerialization.data(withJSONObject: record).write(to: URL(fileURLWithPath: recordFile.string))

        let result = try Exporter.export(catalog.snapshot, to: out, baseURL: nil)
        #expect(result.manifest.assetPacks.map(\.id) == ["Levels", "Textures", "Tutorial"])
        #expect(try scratch.read(victim) == Data("not export's".utf8))
        #expect(
            result.warnings == [
                "left \"../victim/keep.txt\" alone: \(recordFile) lists it, but it is not a path inside \(out)",
                "left \(out)/lnk/keep.txt alone: \(out)/lnk is a symlink: export never writes or removes anything "
                    + "through one, as it could lead out of the output folder. Fix: remove \(out)/lnk, or export into "
                    + "another folder",
            ]
        )
    }

    /// A symlink planted on the way to what export writes (`assets`, `deltas`, `deltas/<id>`) is refused with
    /// a clear error, and nothing is written where it leads. Export wrote the packs into the link's target.
    @Test(arguments: ["assets", "deltas", "deltas/Levels"])
    func aSymlinkOnTheWayToWhatExportWritesIsRefused(_ planted: String) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let out = scratch.root.appending("site")
        try scratch.write("victim/mine.txt", "not export's")
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 4}"#)
        try await catalog.refresh()
        #expect(catalog.snapshot.pack(withID: "Levels")?.deltas.count == 1, "a delta to write under deltas/Levels")

        let link = out.appending(planted)
        try FileManager.default.createDirectory(
            atPath: link.removingLastComponent().string,
            withIntermediateDirectories: true
        )
        let target = String(repeating: "../", count: planted.split(separator: "/").count) + "victim"
        try FileManager.default.createSymbolicLink(atPath: link.string, withDestinationPath: target)
        let error = #expect(throws: AssetPackFormatError.self) {
            try Exporter.export(catalog.snapshot, to: out, baseURL: nil)
        }
        #expect(error?.code == .unsafePath)
        #expect(
            error?.message
                == "\(link) is a symlink: export never writes or removes anything through one, as it could lead out "
                + "of the output folder. Fix: remove \(link), or export into another folder"
        )
        #expect(!FileManager.default.fileExists(atPath: out.appending("manifest").string))
        let victim = scratch.root.appending("victim")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victim.string) == ["mine.txt"])
        #expect(try scratch.read(victim.appending("mine.txt")) == Data("not export's".utf8))
    }

    /// A record that is a FIFO or a symlink is refused as not the record export writes, never waited on or read
    /// through (the symlink was followed, the FIFO refused as "permission denied").
    @Test(arguments: ["fifo", "symlink"])
    func aRecordThatIsNotARegularFileIsRefused(_ kind: String) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let out = scratch.root.appending("site")
        let recordFile = out.appending(".ba-mock-export.json")
        let elsewhere = try scratch.write("elsewhere.json", #"{"files": []}"#)
        try FileManager.default.createDirectory(atPath: out.string, withIntermediateDirectories: true)
        if kind == "fifo" {
            #expect(mkfifo(recordFile.string, 0o644) == 0)
        } else {
            try FileManager.default.createSymbolicLink(atPath: recordFile.string, withDestinationPath: elsewhere.string)
        }
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        let snapshot = catalog.snapshot
        let outcome = finishing(within: 10, release: { releaseFIFOReader(recordFile.string) }) {
            try Exporter.export(snapshot, to: out, baseURL: nil)
        }
        let result = try #require(outcome, "export waited for a writer on the record")
        let error = #expect(throws: AssetPackFormatError.self) { try result.get() }
        #expect(error?.code == .invalidState)
        let what = kind == "fifo" ? "is a FIFO, not a regular file" : "is a symlink"
        #expect(
            error?.message
                == "\(recordFile) \(what): not a state file this tool wrote. Fix: remove it (it is written anew)"
        )
        #expect(try scratch.read(elsewhere) == Data(#"{"files": []}"#.utf8))
    }
}
