import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackFormat

#if canImport(Glibc)
    import Glibc
#endif

/// What a folder holds while ``AtomicFile`` writes into it and after: the file whole or not at all, and nothing
/// else (a pack built by `ba-mock package -o DIR/X.aar` and stopped by Ctrl-C had left a 75 MB `.X.aar.tmp-…`).
@Suite("Atomic file writes")
struct AtomicFileTests {
    /// Whether the scratch folder's file system has unnamed files (`O_TMPFILE`): ext4, xfs, btrfs and tmpfs do.
    /// Asked of the kernel (`stat -f`), not of the code under test.
    static let unnamedFilesHere: Bool = {
        let kind = try? runTool(
            URL(fileURLWithPath: "/usr/bin/stat"),
            ["-f", "-c", "%T", FileManager.default.temporaryDirectory.path]
        )
        let name = kind?.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return ["ext2/ext3", "xfs", "btrfs", "tmpfs"].contains(name)
    }()

    /// While the body writes, the folder has no entry for the file at all: a process killed then (SIGKILL runs no
    /// cleanup) leaves nothing behind. Once done, the file is there whole, with its mode, and alone.
    @Test(.enabled(if: unnamedFilesHere, "the scratch folder's file system has no unnamed files (O_TMPFILE)"))
    func aFileBeingWrittenHasNoNameUntilItIsWhole() throws {
        let scratch = try Scratch()
        let folder = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        let bytes = Array(Scratch.noise(300_000, seed: 3))
        let during = try AtomicFile.write(to: folder.appending("Über 🎮.aar")) { fd in
            _ = try fd.writeAll(bytes)
            return try FileManager.default.contentsOfDirectory(atPath: folder.string)
        }
        #expect(during.isEmpty, "named while being written: \(during)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.string) == ["Über 🎮.aar"])
        #expect(Array(try scratch.read(folder.appending("Über 🎮.aar"))) == bytes)
        var info = stat()
        #expect(stat(folder.appending("Über 🎮.aar").string, &info) == 0 && info.st_mode & 0o777 == 0o644)
    }

    /// A body that throws leaves the file that was there as it was, and nothing beside it.
    @Test func aWriteThatFailsLeavesTheOldFileAndNothingElse() throws {
        let scratch = try Scratch()
        let old = try scratch.write("out/state.json", "{\"old\": true}")
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try AtomicFile.write(to: old) { fd in
                _ = try fd.writeAll(Array("{\"new\": ".utf8))
                throw Stop()
            }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: old.removingLastComponent().string)
        #expect(left == ["state.json"])
        #expect(String(decoding: try scratch.read(old), as: UTF8.self) == "{\"old\": true}")
    }

    /// A symlink where the file goes is replaced by the file, never written through.
    @Test func aSymlinkAtTheNameIsReplacedNotFollowed() throws {
        let scratch = try Scratch()
        let target = try scratch.write("elsewhere.txt", "keep")
        let link = scratch.root.appending("out/Pack.aar")
        try FileManager.default.createDirectory(
            atPath: link.removingLastComponent().string,
            withIntermediateDirectories: true
        )
        try FileManager.default.createSymbolicLink(atPath: link.string, withDestinationPath: target.string)
        try AtomicFile.write(Array("new".utf8), to: link)
        #expect(String(decoding: try scratch.read(target), as: UTF8.self) == "keep")
        let kind = try FileManager.default.attributesOfItem(atPath: link.string)[.type] as? FileAttributeType
        #expect(kind == .typeRegular)
        #expect(String(decoding: try scratch.read(link), as: UTF8.self) == "new")
    }
}
