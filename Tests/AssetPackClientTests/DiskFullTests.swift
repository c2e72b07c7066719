import AssetPackClient
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("A full disk", .enabled(if: canMountTmpfs, "needs root to mount a small tmpfs"))
struct DiskFullTests {
    /// A resumable download fills the disk with the archive first, or later with the extraction; a streamed
    /// one (the default) writes only the extraction.
    @Test(
        arguments: [
            ("320k", true, "while downloading"), ("1200k", true, "while installing"),
            ("320k", false, "while installing"),
        ],
        PackFormat.allCases
    )
    func diskFullGivesAClearErrorAndKeepsThePreviousVersion(
        _ disk: (size: String, resumable: Bool, phase: String),
        format: PackFormat
    ) async throws {
        let (size, resumable, phase) = disk
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Textures/big.bin", Scratch.noise(600_000, seed: 5))
        let appGroup = scratch.root.appending("AppGroup")
        try FileManager.default.createDirectory(atPath: appGroup.string, withIntermediateDirectories: true)
        #expect(
            try runTool(
                URL(fileURLWithPath: "/bin/mount"),
                ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", appGroup.string]
            ).status == 0
        )
        defer { _ = try? runTool(URL(fileURLWithPath: "/bin/umount"), ["-l", appGroup.string]) }
        try await LiveServer.with(folder: scratch.root, format: format) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: appGroup,
                    resumableDownloads: resumable
                )
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let before = try manager.contents(at: "Levels/World1/level1.json")
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
            }
            #expect(error?.message.contains("no space left") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains(phase) == true, "\(error?.message ?? "")")
            #expect(try manager.contents(at: "Levels/World1/level1.json") == before)
            #expect(try manager.verify() == 3)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/staging").string)
                    .isEmpty
            )
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/downloads").string)
                    .isEmpty
            )
        }
    }

    /// Two packs update at once on a disk with room for one: whichever fails keeps its previous version, and
    /// nothing installed has a hole (a short write is an error, never a file with zeros in it).
    @Test func packsUpdatingTogetherOnAFullDiskNeverCommitHoles() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Textures/big.bin", Scratch.noise(300_000, seed: 5))
        let appGroup = scratch.root.appending("AppGroup")
        try FileManager.default.createDirectory(atPath: appGroup.string, withIntermediateDirectories: true)
        #expect(
            try runTool(
                URL(fileURLWithPath: "/bin/mount"),
                ["-t", "tmpfs", "-o", "size=800k", "tmpfs", appGroup.string]
            )
            .status == 0
        )
        defer { _ = try? runTool(URL(fileURLWithPath: "/bin/umount"), ["-l", appGroup.string]) }
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(
                of: Set([
                    try await manager.assetPack(withID: "Textures"), try await manager.assetPack(withID: "Tutorial"),
                ])
            )
            let old = [
                "Textures/big.bin": try scratch.read(scratch.root.appending("Textures/big.bin")),
                "Videos/Intro.m4v": try scratch.read(scratch.root.appending("Videos/Intro.m4v")),
            ]
            // New content for both packs: 500 KB to extract beside 550 KB installed, on an 800 KiB disk. The
            // 300 KB update never fits, even alone (on a 1000 KiB disk only the two at once did not, and when
            // one happened to finish before the other began, nothing failed).
            try scratch.write("Textures/big.bin", Scratch.noise(300_000, seed: 6))
            try scratch.write("Videos/Intro.m4v", Scratch.noise(200_000, seed: 7))
            try await server.catalog.refresh()
            let new = [
                "Textures/big.bin": try scratch.read(scratch.root.appending("Textures/big.bin")),
                "Videos/Intro.m4v": try scratch.read(scratch.root.appending("Videos/Intro.m4v")),
            ]
            let failure = await #expect(throws: AssetPackClientError.self) {
                try await manager.checkForUpdatesAndWait()
            }
            #expect(failure?.message.contains("no space left") == true, "\(failure?.description ?? "")")
            #expect(try manager.verify() == 3)
            for (path, bytes) in old {
                let now = try manager.contents(at: FilePath(path))
                let version = try #require(
                    manager.installedPack(withID: path.hasPrefix("Textures") ? "Textures" : "Tutorial")
                )
                #expect(now == (version.version == 1 ? bytes : new[path]), "\(path) at version \(version.version)")
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/staging").string)
                    .isEmpty
            )
        }
    }

    /// The command that frees space works when space has run out.
    @Test func removeWorksOnAFullDisk() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        try FileManager.default.createDirectory(atPath: appGroup.string, withIntermediateDirectories: true)
        #expect(
            try runTool(
                URL(fileURLWithPath: "/bin/mount"),
                ["-t", "tmpfs", "-o", "size=400k", "tmpfs", appGroup.string]
            )
            .status == 0
        )
        defer { _ = try? runTool(URL(fileURLWithPath: "/bin/umount"), ["-l", appGroup.string]) }
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Tutorial"))
            // Fill what is left.
            let filler = appGroup.appending("filler")
            let fd = try FileDescriptor.open(filler, .writeOnly, options: [.create], permissions: .ownerReadWrite)
            let block = [UInt8](repeating: 1, count: 4096)
            while (try? fd.writeAll(block)) != nil {}
            try fd.close()
            try await manager.remove(assetPackWithID: "Tutorial")
            #expect(!manager.assetPackIsAvailableLocally(withID: "Tutorial"))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: appGroup.appending("AssetPacks").string).isEmpty
            )
        }
    }
}
