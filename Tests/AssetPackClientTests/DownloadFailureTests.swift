import AssetPackClient
import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import SystemPackage
import TestSupport
import Testing

@Suite("Downloads that go wrong")
struct DownloadFailureTests {
    /// A real pack archive of some incompressible files.
    func makePack(_ scratch: Scratch, size: Int = 600_000, compression: PackCompression = .zstd) throws -> (Data, Int64)
    {
        try scratch.write("Assets/Blobs/a.bin", Scratch.noise(size, seed: 11))
        try scratch.write("Assets/Blobs/b.txt", "hello\n")
        try scratch.write(
            "Assets/Blobs.json",
            #"{"assetPackID": "Blobs", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Blobs"}], "platforms": ["iOS"]}"#
        )
        let parsed = try PackagingManifest.load(from: scratch.root.appending("Assets/Blobs.json"))
        let source = try PackSource.resolve(parsed, root: scratch.root.appending("Assets"))
        let output = scratch.root.appending("Blobs.pack")
        let built = try PackBuilder.build(source, to: output, options: PackBuildOptions(compression: compression))
        return (try scratch.read(output), built.installSize)
    }

    @Test func cutDownloadResumesWithARange() async throws {
        let scratch = try Scratch()
        let (bytes, installSize) = try makePack(scratch)
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, installSize: installSize)
        try await StubServer.with(
            manifest: manifest,
            packs: ["Blobs": bytes],
            options: .init(cutFirstDownloadAfter: 200_000)
        ) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: scratch.root.appending("AppGroup"))
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Blobs"))
            #expect(
                try manager.contents(at: "Blobs/a.bin") == scratch.read(scratch.root.appending("Assets/Blobs/a.bin"))
            )
            let requests = server.log.lines
            #expect(requests.count == 2, "\(requests)")
            #expect(requests.first == "GET Blobs range=- if-range=-")
            let resume = try #require(requests.last)
            #expect(resume.hasPrefix("GET Blobs range=bytes="), "\(resume)")
            let start = Int(resume.dropFirst("GET Blobs range=bytes=".count).prefix { $0 != "-" }) ?? 0
            #expect(start > 0 && start <= 200_000)
            #expect(resume.hasSuffix("if-range=\"\(FileDigest.sha256(of: bytes))\""))
        }
    }

    /// Zero blocks after a plain tar's end marker, which libarchive does not read, are still taken from the
    /// download, so it never waits on a full feed; the digest covers them, so this archive installs.
    @Test func bytesAfterTheArchiveEndDoNotStallAStreamedInstall() async throws {
        let scratch = try Scratch()
        let (pack, installSize) = try makePack(scratch, compression: .none)
        let bytes = pack + Data(count: 12 << 20)  // more than the 8 MiB the feed holds
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, installSize: installSize)
        try await StubServer.with(manifest: manifest, packs: ["Blobs": bytes]) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: scratch.root.appending("AppGroup"),
                    retryPolicy: RetryPolicy(retries: 0),
                    stallTimeout: .seconds(3)
                )
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Blobs"))
            #expect(try manager.contents(at: "Blobs/b.txt") == Data("hello\n".utf8))
            #expect(server.log.lines.count == 1)
        }
    }

    @Test func partialDownloadResumesInALaterRun() async throws {
        let scratch = try Scratch()
        let (bytes, installSize) = try makePack(scratch)
        let appGroup = scratch.root.appending("AppGroup")
        // A previous run left 300 000 bytes of this very archive.
        let store = AppGroupStore(root: appGroup)
        _ = store
        try scratch.write("AppGroup/.ba-sync/downloads/Blobs.partial", bytes.prefix(300_000))
        let info = #"{"sha256":"\#(FileDigest.sha256(of: bytes))","downloadSize":\#(bytes.count),"url":"x"}"#
        try scratch.write("AppGroup/.ba-sync/downloads/Blobs.partial.json", info)
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, installSize: installSize)
        try await StubServer.with(manifest: manifest, packs: ["Blobs": bytes]) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Blobs"))
            #expect(server.log.lines.first?.hasPrefix("GET Blobs range=bytes=300000-") == true, "\(server.log.lines)")
            #expect(try manager.verify(assetPackWithID: "Blobs") == 2)
            let leftovers = try FileManager.default.contentsOfDirectory(
                atPath: appGroup.appending(".ba-sync/downloads").string
            )
            #expect(leftovers.isEmpty)
        }
    }

    /// A partial download of another version is never resumed, and never kept: once a version is installed (the
    /// stream path, which never reads it) or the pack removed, it only held its bytes for good.
    @Test func partialOfAnotherVersionIsNeverSplicedNorKept() async throws {
        let scratch = try Scratch()
        let (bytes, installSize) = try makePack(scratch)
        let appGroup = scratch.root.appending("AppGroup")
        let downloads = appGroup.appending(".ba-sync/downloads").string
        let leaveAPartialOfAnotherVersion: @Sendable () throws -> Void = {
            try scratch.write("AppGroup/.ba-sync/downloads/Blobs.partial", Scratch.noise(300_000, seed: 99))
            try scratch.write(
                "AppGroup/.ba-sync/downloads/Blobs.partial.json",
                #"{"sha256":"\#(String(repeating: "0", count: 64))","downloadSize":\#(bytes.count),"url":"x"}"#
            )
        }
        try leaveAPartialOfAnotherVersion()
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, installSize: installSize)
        try await StubServer.with(manifest: manifest, packs: ["Blobs": bytes]) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Blobs"))
            #expect(server.log.lines == ["GET Blobs range=- if-range=-"])
            #expect(try manager.verify() == 2)
            #expect(try FileManager.default.contentsOfDirectory(atPath: downloads) == [])
            try leaveAPartialOfAnotherVersion()
            try await manager.remove(assetPackWithID: "Blobs")
            #expect(try FileManager.default.contentsOfDirectory(atPath: downloads) == [])
        }
    }

    @Test(arguments: ["size", "digest"])
    func manifestThatLiesIsRejectedWithNothingInstalled(_ lie: String) async throws {
        let scratch = try Scratch()
        let (bytes, installSize) = try makePack(scratch)
        let manifest =
            lie == "size"
            ? StubServer.manifest(id: "Blobs", bytes: bytes, downloadSize: bytes.count + 1, installSize: installSize)
            : StubServer.manifest(
                id: "Blobs",
                bytes: bytes,
                sha256: String(repeating: "a", count: 64),
                installSize: installSize
            )
        try await StubServer.with(manifest: manifest, packs: ["Blobs": bytes]) { server in
            let appGroup = scratch.root.appending("AppGroup")
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            let pack = try await manager.assetPack(withID: "Blobs")
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: pack)
            }
            #expect(error?.code == (lie == "size" ? .sizeMismatch : .digestMismatch))
            #expect(
                error?.message.contains("Blobs") == true && error?.message.contains("nothing was installed") == true
            )
            #expect(!manager.assetPackIsAvailableLocally(withID: "Blobs"))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: appGroup.appending("AssetPacks").string).isEmpty
            )
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/downloads").string)
                    .isEmpty
            )
        }
    }

    @Test(arguments: ["dotdot", "symlink"])
    func hostileArchiveIsRefused(_ kind: String) async throws {
        let scratch = try Scratch()
        let archive = scratch.root.appending("hostile.pack")
        let ok = Data("ok".utf8)
        let entries: [ArchiveFixture.Entry] =
            kind == "dotdot"
            ? [
                .init("Contents/../../../escaped.txt", .file(ok)),
                .init("Index.json", .file(ArchiveFixture.index([], id: "Evil"))),
            ]
            : [
                .init("Contents/link", .symlink("/etc/passwd")),
                .init("Index.json", .file(ArchiveFixture.index([], id: "Evil"))),
            ]
        try ArchiveFixture.write(entries, to: archive)
        let bytes = try scratch.read(archive)
        let manifest = StubServer.manifest(id: "Evil", bytes: bytes, installSize: 1000)
        try await StubServer.with(manifest: manifest, packs: ["Evil": bytes]) { server in
            let appGroup = scratch.root.appending("AppGroup")
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Evil"))
            }
            #expect(error?.code == .corruptPack)
            // The same bytes would break the same rule again: downloaded once, not three times.
            #expect(server.log.lines.count == 1, "\(server.log.lines)")
            #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("escaped.txt").string))
            #expect(!FileManager.default.fileExists(atPath: appGroup.appending("escaped.txt").string))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/staging").string)
                    .isEmpty
            )
            #expect(!manager.assetPackIsAvailableLocally(withID: "Evil"))
        }
    }

    /// Each installed byte is checked once against what was published: by the archive's digest when the
    /// manifest gives one (the files are not hashed again), else by every file's digest in the pack's index.
    /// A pack whose index gives a file the wrong digest at its right size tells the two apart: refused from a
    /// manifest of Apple's shape, installed from one whose digest vouches for those very bytes, and then
    /// found by `verify`.
    @Test(arguments: [false, true])
    func aFileIsCheckedByTheArchiveDigestOrElseByItsIndexRow(digested: Bool) async throws {
        let scratch = try Scratch()
        let archive = scratch.root.appending("lying.pack")
        try ArchiveFixture.write(
            [
                .init("Contents/a.txt", .file(Data("evil".utf8))),
                .init("Index.json", .file(ArchiveFixture.index([("a.txt", Data("fine".utf8))], id: "Lying"))),
            ],
            to: archive
        )
        let bytes = try scratch.read(archive)
        let manifest = StubServer.manifest(id: "Lying", bytes: bytes, digested: digested, installSize: 4)
        try await StubServer.with(manifest: manifest, packs: ["Lying": bytes]) { server in
            let appGroup = scratch.root.appending("AppGroup")
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            let pack = try await manager.assetPack(withID: "Lying")
            guard digested else {
                let error = await #expect(throws: AssetPackClientError.self) {
                    try await manager.ensureLocalAvailability(of: pack)
                }
                #expect(error?.code == .corruptPack)
                #expect(
                    error?.message.contains("holds a.txt with 4 bytes and SHA-256") == true,
                    "\(error?.message ?? "")"
                )
                #expect(!manager.assetPackIsAvailableLocally(withID: "Lying"))
                return
            }
            try await manager.ensureLocalAvailability(of: pack)
            #expect(try manager.contents(at: "a.txt") == Data("evil".utf8))
            let error = #expect(throws: AssetPackClientError.self) {
                try AssetPackReader(appGroup: appGroup).verify(assetPackWithID: "Lying")
            }
            #expect(error?.code == .verificationFailed)
            #expect(error?.message.contains("Lying: a.txt differs from the pack's index") == true)
        }
    }

    @Test func unreachableServerSaysWhatToCheck() async throws {
        let scratch = try Scratch()
        let port = try freeLoopbackPort()
        let client = AssetPackManager.makeHTTPClient(connectTimeout: .seconds(1))
        let manager = try AssetPackManager(
            configuration: .init(
                server: URL(string: "http://127.0.0.1:\(port)")!,
                appGroup: scratch.root.appending("AppGroup"),
                retryPolicy: RetryPolicy(retries: 0)
            ),
            client: client
        )
        let error = await #expect(throws: AssetPackClientError.self) { try await manager.assetPack(withID: "X") }
        try await client.shutdown()
        #expect(error?.code == .network)
        #expect(error?.message.contains("127.0.0.1:\(port)/manifest") == true)
    }

    @Test func aManifestDrippedAByteAtATimeFailsAtTheDeadline() async throws {
        let scratch = try Scratch()
        let (bytes, installSize) = try makePack(scratch)
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, installSize: installSize)
        try await StubServer.with(
            manifest: manifest,
            packs: ["Blobs": bytes],
            options: .init(dripManifestEvery: .milliseconds(100))
        ) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: scratch.root.appending("AppGroup"),
                    retryPolicy: RetryPolicy(retries: 0),
                    manifestTimeout: .seconds(1)
                )
            )
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.assetPack(withID: "Blobs")
            }
            #expect(error?.code == .network)
            #expect(error?.message.contains("did not arrive whole within 1.0 s") == true, "\(error?.message ?? "")")
        }
    }

    @Test func aPackDrippedBelowTheMinimumRateCountsAsAStall() async throws {
        let scratch = try Scratch()
        let (bytes, installSize) = try makePack(scratch)
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, installSize: installSize)
        try await StubServer.with(
            manifest: manifest,
            packs: ["Blobs": bytes],
            options: .init(packBytesPerSecond: 300)  // never idle, never done
        ) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: scratch.root.appending("AppGroup"),
                    retryPolicy: RetryPolicy(retries: 0),
                    stallTimeout: .seconds(1)
                )
            )
            let pack = try await manager.assetPack(withID: "Blobs")
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: pack)
            }
            #expect(error?.message.contains("ran slower than 1024 bytes/s") == true, "\(error?.message ?? "")")
        }
    }

    @Test func garbageUnderAHugeDeclaredSizeIsNotReadToTheEnd() async throws {
        let scratch = try Scratch()
        let (bytes, installSize) = try makePack(scratch)
        let huge = 2 << 30  // 2 GiB of garbage on offer
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, downloadSize: huge, installSize: installSize)
        try await StubServer.with(manifest: manifest, packs: ["Blobs": bytes], options: .init(garbageBytes: huge)) {
            server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: scratch.root.appending("AppGroup"))
            )
            let pack = try await manager.assetPack(withID: "Blobs")
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: pack)
            }
            #expect(error?.code == .corruptPack, "\(error?.description ?? "")")
            #expect(error?.message.contains("after 3 attempts") == true, "\(error?.message ?? "")")
            // Three attempts, each stopped as soon as the bytes failed to extract: what the server sent, not a
            // clock, says it (reading 2 GiB three times would send it all).
            #expect(server.log.lines.count == 3)
            #expect(server.log.garbageSent < huge, "\(server.log.garbageSent) bytes sent")
        }
    }

    @Test func megabytesAfterTheArchiveEndAreRefused() async throws {
        let scratch = try Scratch()
        let (pack, installSize) = try makePack(scratch, compression: .none)
        let bytes = pack + Scratch.noise(4 << 20, seed: 8)  // size and digest in the manifest cover it all
        let manifest = StubServer.manifest(id: "Blobs", bytes: bytes, installSize: installSize)
        try await StubServer.with(manifest: manifest, packs: ["Blobs": bytes]) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: scratch.root.appending("AppGroup"))
            )
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Blobs"))
            }
            #expect(error?.code == .corruptPack)
            #expect(error?.message.contains("after the end of its archive") == true, "\(error?.message ?? "")")
            #expect(!manager.assetPackIsAvailableLocally(withID: "Blobs"))
        }
    }

    @Test func aDeadServerFailsWithoutRetryingForLong() async throws {
        let scratch = try Scratch()
        let port = try freeLoopbackPort()
        let client = AssetPackManager.makeHTTPClient(connectTimeout: .seconds(1))
        let manager = try AssetPackManager(
            configuration: .init(
                server: URL(string: "http://127.0.0.1:\(port)")!,
                appGroup: scratch.root.appending("AppGroup")
            ),
            client: client
        )
        let error = await #expect(throws: AssetPackClientError.self) { try await manager.assetPack(withID: "X") }
        try await client.shutdown()
        // The default policy retries 5 times with backoff; a refused connection is not worth it: one attempt
        // (a retried failure's message ends "(after N attempts)").
        #expect(error?.message.contains("attempts") == false, "\(error?.message ?? "")")
        #expect(error?.message.contains("cannot connect to 127.0.0.1:\(port)") == true, "\(error?.message ?? "")")
    }
}

@Suite("Recovery after a killed run")
struct RecoveryTests {
    @Test func leftoversOfAKilledRunAreRemovedWhenTheLockIsTaken() async throws {
        let scratch = try Scratch()
        let appGroup = scratch.root.appending("AppGroup")
        _ = AppGroupStore(root: appGroup)
        try scratch.write("AppGroup/.ba-sync/.state.json.tmp-99-1", "{")
        try scratch.write("AppGroup/.ba-sync/downloads/.Blobs.partial.json.tmp-99-2", "{")
        try scratch.write("AppGroup/.ba-sync/staging/Blobs-1234/Blobs/a.bin", "half")
        try scratch.write("AppGroup/AssetPacks/Ghost/1-abcdef/x.txt", "not in the state")
        try scratch.write("AppGroup/.ba-sync/downloads/Blobs.partial", "kept to resume")
        let manager = try AssetPackManager(
            configuration: .init(server: URL(fileURLWithPath: "/dev/null"), appGroup: appGroup)
        )
        try await manager.withExclusiveControl {}
        let control = try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync").string)
        #expect(!control.contains { $0.contains(".tmp-") })
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/staging").string).isEmpty
        )
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: appGroup.appending(".ba-sync/downloads").string) == [
                "Blobs.partial"
            ]
        )
        #expect(try FileManager.default.contentsOfDirectory(atPath: appGroup.appending("AssetPacks").string).isEmpty)
    }
}
