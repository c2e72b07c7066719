import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("A full disk", .enabled(if: canMountTmpfs, "needs root to mount a small tmpfs"))
struct DiskFullTests {
    /// A resumable download fills the disk with the archive first, or later with the extraction; a streamed
    /// one (the default) writes only the extraction.
    @Test(arguments: [
        ("320k", true, "while downloading"), ("1200k", true, "while installing"), ("320k", false, "while installing"),
    ])
    func diskFullGivesAClearErrorAndKeepsThePreviousVersion(_ size: String, _ resumable: Bool, _ phase: String)
        async throws
    {
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
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                server: URL(string: server.url)!,
                appGroup: appGroup,
                resumableDownloads: resumable
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
}
