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

/// `ba-mock serve` and `export` as library calls: options in, a server or a report out, no process.
@Suite("serve and export as library calls")
struct MockServerTests {
    /// A pack archive of its own (pack Bonus), built from a manifest file as `ba-mock package` builds one.
    private func bonusArchive(in scratch: Scratch) throws -> FilePath {
        try scratch.write("bonus-src/Bonus/readme.txt", "bonus level")
        let manifest = try scratch.write(
            "bonus-src/Bonus.json",
            #"{"assetPackID": "Bonus", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Bonus"}], "platforms": ["iOS"]}"#
        )
        let archive = scratch.root.appending("archives/Bonus.pack")
        let built = try PackBuilder.build(
            manifest: manifest,
            root: scratch.root.appending("bonus-src"),
            to: archive,
            options: PackBuildOptions()
        )
        #expect(built.assetPackID == "Bonus" && built.fileCount == 1)
        return archive
    }

    private func get(_ url: String) async throws -> (status: Int, body: Data) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), Data(body.readableBytesView))
    }

    @Test func aServerBuiltFromOptionsServesWhatTheyAsk() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        var options = ServeOptions(folder: scratch.root, archives: [try bonusArchive(in: scratch)])
        options.archiveVersions = [7]
        options.pinnedVersions = ["Levels": 5]
        options.faults = [try FaultRule(parsing: "status=503,pack=Tutorial")]
        (options.seed, options.port, options.watchInterval, options.dashboard) = (42, 0, nil, false)
        let lines = Mutex<[String]>([])
        let built = Mutex<Result<CatalogReport, any Error>?>(nil)
        let (urls, listening) = AsyncStream<String>.makeStream()
        let (manifest, tutorial, seed) = try await MockServer.with(options, log: { _ in }) { server in
            let app = try server.application(
                requestLog: { line in lines.withLock { $0.append(line) } },
                log: { _ in },
                onListening: { listening.yield($0) },
                onFirstBuild: { report in built.withLock { $0 = report } }
            )
            return try await runServing(app, urls: urls) { url in
                #expect(url.hasPrefix("http://127.0.0.1:") && !url.hasSuffix(":0"))
                while built.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(20)) }
                let manifest = try await get(url + "/manifest")
                let tutorial = try await get(url + "/assets/Tutorial")
                return (manifest, tutorial.status, server.faults.seed)
            }
        }
        #expect(manifest.status == 200)
        let published = try JSONDecoder().decode(DownloadManifest.self, from: manifest.body)
        let versions = Dictionary(uniqueKeysWithValues: published.assetPacks.map { ($0.id, $0.version) })
        #expect(versions == ["Bonus": 7, "Levels": 5, "Textures": 1, "Tutorial": 1])
        #expect(tutorial == 503)
        #expect(seed == 42)
        #expect(lines.withLock { $0.contains { $0.contains("/assets/Tutorial") && $0.contains(" 503 ") } })
        // The archives-only scratch folder is not used here: the folder's own state was claimed and kept.
        #expect(FileManager.default.fileExists(atPath: scratch.root.appending(".ba-mock/state.json").string))
    }

    @Test func preparingRefusesWhatNamesNoPackOrTwoArchivesOfOnePack() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let bonus = try bonusArchive(in: scratch)
        var twice = ServeOptions(folder: nil, archives: [bonus, bonus])
        twice.port = 0
        let refusedTwice = await #expect(throws: AssetPackServerError.self) {
            try await MockServer.with(twice, log: { _ in }) { _ in }
        }
        #expect(refusedTwice?.code == .invalidOption)
        #expect(refusedTwice?.message == "\(bonus) and \(bonus) are both pack Bonus; serve one")

        var pinned = ServeOptions(folder: scratch.root)
        pinned.pinnedVersions = ["Levls": 2]
        let refusedPin = await #expect(throws: AssetPackServerError.self) {
            try await MockServer.with(pinned, log: { _ in }) { _ in }
        }
        #expect(refusedPin?.code == .invalidOption)
        let said = "--pack-version Levls=…: there is no pack Levls served here (did you mean Levels?"
        #expect(refusedPin?.message.hasPrefix(said) == true)
    }

    /// An export while another ba-mock holds the folder's state works in a copy of it, says so, and leaves the
    /// holder's state as it was.
    @Test func exportBesideAServedFolderSaysSoAndLeavesItsStateAlone() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let first = scratch.root.appending("first")
        _ = try await Exporter.export(Exporter.Options(folder: scratch.root, out: first), log: { _ in })
        let stateFile = scratch.root.appending(".ba-mock/state.json")
        let state = try scratch.read(stateFile)

        let holder = try AssetFolder(root: scratch.root).claimState()
        #expect(holder.claim != nil)
        try scratch.write("Levels/World3/level1.json", #"{"name": "3-1"}"#)
        let said = Mutex<[String]>([])
        var options = Exporter.Options(folder: scratch.root, out: scratch.root.appending("second"))
        options.platforms = ["macOS"]
        let report = try await Exporter.export(options, log: { line in said.withLock { $0.append(line) } })
        withExtendedLifetime(holder.claim) {}

        #expect(said.withLock { $0 }.first?.hasPrefix("note: another ba-mock (process \(getpid())) keeps") == true)
        #expect(try scratch.read(stateFile) == state)
        #expect(report.snapshot.pack(withID: "Levels")?.version == 2)
        #expect(report.result.manifest.assetPacks.map(\.id) == ["Levels", "Textures", "Tutorial"])
        #expect(report.result.platformManifests["macOS"] == scratch.root.appending("second/manifest-macOS.json"))
    }

    /// A state copied aside onto another file system (no hard link there, so each file is copied) keeps its
    /// archives' modification times: nothing is built again in it. Copied with a new time, every archive looked
    /// changed since it was built, and every pack was built again.
    @Test func aStateCopiedAsideKeepsItsArchivesAsBuilt() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let folder = AssetFolder(root: scratch.root)
        try await PackCatalog(folder: folder).refresh()
        var (own, shm) = (stat(), stat())
        #expect(stat(scratch.root.string, &own) == 0 && stat("/dev/shm", &shm) == 0)
        #expect(own.st_dev != shm.st_dev, "/dev/shm is another file system, where no hard link to the state goes")

        let aside = try folder.withStateAside(in: "/dev/shm")
        defer { aside.removeStateAside() }
        let said = Mutex<[String]>([])
        let catalog = try PackCatalog(folder: aside, log: { line in said.withLock { $0.append(line) } })
        try await catalog.refresh()
        #expect(said.withLock { $0 } == [])
        #expect(catalog.snapshot.packs.map(\.id) == ["Levels", "Textures", "Tutorial"])
    }
}
