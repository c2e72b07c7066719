import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

/// The built `ba-mock` binary, run as a user would.
@Suite("ba-mock end to end", .serialized)
struct BAMockEndToEndTests {
    let tool = builtProduct("ba-mock")

    /// A copy of the repository's sample Assets/ (serve writes its state into the folder).
    func sampleFolder(_ scratch: Scratch) throws -> FilePath { try scratch.copySampleAssets() }

    func fetch(_ url: String) async throws -> (status: Int, body: Data) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 512 << 20)
        return (Int(response.status.code), Data(body.readableBytesView))
    }

    /// Downloads every pack of a manifest, checks it against the manifest, extracts it, and compares each
    /// file with the asset folder.
    func checkPacks(manifestURL: String, folder: FilePath, scratch: Scratch) async throws -> DownloadManifest {
        let (status, body) = try await fetch(manifestURL)
        #expect(status == 200)
        let manifest = try JSONDecoder().decode(DownloadManifest.self, from: body)
        #expect(manifest.assetPacks.map(\.id) == ["HighResTextures", "Levels", "Tutorial"])
        for entry in manifest.assetPacks {
            let url = URL(string: entry.url, relativeTo: URL(string: manifestURL))!.absoluteString
            let (packStatus, pack) = try await fetch(url)
            #expect(packStatus == 200, "\(url)")
            #expect(Int64(pack.count) == entry.downloadSize, "\(entry.id) size")
            #expect(FileDigest.sha256(of: pack) == entry.sha256, "\(entry.id) digest")
            let archive = try scratch.write("downloads/\(entry.id)-\(UUID().uuidString)", pack)
            let destination = scratch.root.appending("extracted/\(entry.id)-\(UUID().uuidString)")
            try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
            let index = try PackArchiveReader.extract(archive, into: destination, limit: entry.installSize)
            #expect(index.fileCount == entry.fileCount)
            #expect(index.downloadPolicy == entry.downloadPolicy)
            let parsed = try PackagingManifest.load(from: folder.appending("\(entry.id).json"))
            let expected = try PackSource.resolve(parsed, root: folder).files.map(\.path)
            #expect(index.files.map(\.path) == expected)
            for path in expected {
                let extracted = try scratch.read(destination.appending(path))
                #expect(extracted == (try scratch.read(folder.appending(path))), "\(entry.id): \(path)")
            }
        }
        return manifest
    }

    @Test func servesTheSampleFolderAsAUserWouldSeeIt() async throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let server = try RunningTool(tool, ["serve", folder.string, "--port", "0"])
        let url = try #require(server.waitForFirstLine(), "no URL on stdout; stderr: \(server.stderr)")
        #expect(url.hasPrefix("http://127.0.0.1:"))
        #expect(!url.hasSuffix(":0"))
        _ = try await checkPacks(manifestURL: url + "/manifest", folder: folder, scratch: scratch)
        let output = server.stdout
        #expect(output.contains("PACK"))
        #expect(output.contains("Tutorial") && output.contains("essential"))
        #expect(output.contains("GET /manifest - 200"))
        #expect(server.interrupt() == 0, "stops cleanly on SIGINT; stderr: \(server.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.appending(".ba-mock/state.json").string))
    }

    /// `serve` is the default: `ba-mock FOLDER` serves the folder and `--help` says so. A first argument that names a
    /// subcommand runs that one, with the default left out of the parse (`BAMock.namesASubcommand`, for speed).
    @Test func servesWithoutASubcommandAndRunsTheOneNamed() async throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let server = try RunningTool(tool, [folder.string, "--port", "0"])
        let url = try #require(server.waitForFirstLine(), "no URL on stdout; stderr: \(server.stderr)")
        #expect(try await fetch(url + "/manifest").status == 200)
        #expect(server.interrupt() == 0, "\(server.stderr)")
        #expect(try runTool(tool, ["--help"]).stdout.contains("serve (default)"))
        // An Apple Archive whatever the output's name, as its help says; tar only when asked for.
        let package = try runTool(tool, ["package", "Tutorial.json", "-o", "T.tar"], directory: folder.string)
        #expect(package.status == 0, "\(package.stderr)")
        #expect(package.stdout.contains(" aar lzfse, "), "\(package.stdout)")
        let help = try runTool(tool, ["package", "--help"]).stdout.replacingOccurrences(of: "\n", with: " ")
        #expect(help.contains("an Apple Archive as ba-package writes one (the default, whatever the output's name)"))
        #expect(help.contains("With --format tar, or a compression only tar has"))
        let evaluate = try runTool(tool, ["evaluate", "Tutorial.json"], directory: folder.string)
        #expect(evaluate.status == 0, "\(evaluate.stderr)")
        // Where no ./Assets is, validate says what to give, a folder or a manifest, and how to write the latter.
        let empty = try scratch.write("empty/.keep", "").removingLastComponent()
        let nowhere = try runTool(tool, ["validate"], directory: empty.string)
        #expect(nowhere.status == 1)
        #expect(nowhere.stdout.contains("Fix: check the path: give an asset folder, or a packaging manifest"))
        #expect(nowhere.stdout.contains("(`ba-mock template > NAME.json` writes one)"), "\(nowhere.stdout)")
    }

    /// Apple Archive (LZFSE) is what serve, export and package write unless told otherwise, since it is what a
    /// device downloads; the start-up table says each pack's format and language. tar+zstd stays a choice.
    @Test func appleArchiveIsTheDefaultFormatAndTheTableSaysSo() async throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        try scratch.write("Assets/Voice/fr/intro.txt", "bonjour")
        try scratch.write(
            "Assets/VoiceFR.json",
            """
            {"assetPackID": "VoiceFR", "downloadPolicy": {"onDemand": {}}, "language": "fr",
             "fileSelectors": [{"directory": "Voice/fr"}], "platforms": ["iOS"]}
            """
        )
        let server = try RunningTool(tool, ["serve", folder.string, "--port", "0"])
        let url = try #require(server.waitForFirstLine(), "no URL on stdout; stderr: \(server.stderr)")
        let manifest = try DownloadManifest.decode(try await fetch(url + "/manifest").body, source: url)
        #expect(manifest.assetPacks.map(\.compression) == Array(repeating: .lzfse, count: 4))
        let pack = try await fetch(url + "/assets/Levels").body
        #expect(pack.prefix(4) == Data("pbze".utf8))
        let table = server.stdout.split(separator: "\n").map(String.init)
        let header = try #require(table.first { $0.hasPrefix("PACK") })
        #expect(header.contains("LANGUAGE") && header.contains("FORMAT"), "\(header)")
        let voice = try #require(table.first { $0.hasPrefix("VoiceFR") }, "\(table)")
        #expect(voice.contains(" fr ") && voice.contains("aar lzfse"), "\(voice)")
        let levels = try #require(table.first { $0.hasPrefix("Levels") })
        #expect(levels.contains(" - ") && levels.contains("aar lzfse"), "\(levels)")
        #expect(server.interrupt() == 0, "\(server.stderr)")

        // --format tar keeps ba-mock's own.
        let tar = try RunningTool(tool, ["serve", folder.string, "--port", "0", "--format", "tar"])
        let tarURL = try #require(tar.waitForFirstLine(), "stderr: \(tar.stderr)")
        let tarManifest = try DownloadManifest.decode(try await fetch(tarURL + "/manifest").body, source: tarURL)
        #expect(tarManifest.assetPacks.map(\.compression) == Array(repeating: .zstd, count: 4))
        #expect(tar.stdout.contains("tar zstd"), "\(tar.stdout)")
        #expect(tar.interrupt() == 0)

        // export and package, with no option, write Apple Archives.
        let out = scratch.root.appending("out")
        let exported = try runTool(tool, ["export", folder.string, "--out", out.string])
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(try scratch.read(out.appending("assets/Levels")).prefix(4) == Data("pbze".utf8))
        let packaged = try runTool(
            tool,
            ["package", "Levels.json", "-o", scratch.root.appending("Levels.pack").string],
            directory: folder.string
        )
        #expect(packaged.status == 0, "\(packaged.stderr)")
        #expect(try scratch.read(scratch.root.appending("Levels.pack")).prefix(4) == Data("pbze".utf8))
        // A compression only tar has still means a tar, as it did.
        let zstd = try runTool(
            tool,
            ["package", "Levels.json", "-o", scratch.root.appending("Levels.tar.zst").string, "--compression", "zstd"],
            directory: folder.string
        )
        #expect(zstd.status == 0, "\(zstd.stderr)")
        #expect(try scratch.read(scratch.root.appending("Levels.tar.zst")).prefix(4) == Data([0x28, 0xB5, 0x2F, 0xFD]))
    }

    @Test func aStdoutNobodyReadsDoesNotSlowServing() async throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let process = Process()
        process.executableURL = tool
        process.arguments = ["serve", folder.string, "--port", "0"]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        // Read up to the manifest line, then stop reading: the request log fills the pipe (64 KiB) at once.
        var head = ""
        while !head.contains("manifest: ") || !head.hasSuffix("\n") {
            let data = stdout.fileHandleForReading.availableData
            guard !data.isEmpty else { break }
            head += String(decoding: data, as: UTF8.self)
        }
        let url = try #require(head.split(separator: "\n").first.map(String.init))

        let manifest = try JSONDecoder().decode(DownloadManifest.self, from: try await fetch(url + "/manifest").body)
        let size = try #require(manifest.assetPacks.first { $0.id == "Tutorial" }).downloadSize
        let clients = 32
        let requestsPerClient = 80
        let served = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    var ok = 0
                    let (status, pack) = try await fetch(url + "/assets/Tutorial")
                    if status == 200 && Int64(pack.count) == size { ok += 1 }
                    for _ in 1..<requestsPerClient where try await fetch(url + "/manifest").status == 200 { ok += 1 }
                    return ok
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(90))
                throw CancellationError()  // serving stalled behind the unread pipe
            }
            var total = 0
            for _ in 0..<clients { total += try await group.next() ?? 0 }
            group.cancelAll()
            return total
        }
        #expect(served == clients * requestsPerClient)  // within the 90 s guard above: no request waited on the pipe

        // The reader comes back: every request line was kept (the queue holds 4 MiB), none was lost.
        var log = ""
        while log.components(separatedBy: " 200 ").count - 1 < clients * requestsPerClient {
            let data = stdout.fileHandleForReading.availableData
            guard !data.isEmpty else { break }
            log += String(decoding: data, as: UTF8.self)
        }
        #expect(log.components(separatedBy: "GET /manifest - 200").count - 1 == 1 + clients * (requestsPerClient - 1))
        #expect(!log.contains("dropped"))
    }

    @Test func clientsThatStopReadingAreDroppedAndDoNotHoldAShutdown() throws {
        let scratch = try Scratch()
        try scratch.write("Assets/Big/big.bin", Scratch.noise(8 << 20, seed: 3))
        try scratch.write(
            "Assets/Big.json",
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Big"}], "platforms": ["iOS"]}"#
        )
        let folder = scratch.root.appending("Assets")
        let request = "GET /assets/Big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        func port(_ url: String) throws -> Int { try #require(url.split(separator: ":").last.flatMap { Int($0) }) }

        // Peers that send a request and read nothing are cut after --send-timeout.
        let server = try RunningTool(tool, ["serve", folder.string, "--port", "0", "--send-timeout", "1"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        let peers = try (0..<20).map { _ in try RawConnection(port: try port(url)) }
        for peer in peers { peer.send(request) }
        // The server says when it gave up on each: the response's log line, written once it ends, is marked
        // aborted (an 8 MiB body cannot end otherwise into a 4 KiB buffer nobody reads).
        func dropped() -> Int {
            server.stdout.split(separator: "\n").filter {
                $0.hasPrefix("GET /assets/Big - 200") && $0.hasSuffix(" aborted")
            }.count
        }
        #expect(waitUntil(within: 30) { dropped() == 20 }, "\(dropped()) dropped: \(server.stdout)")
        for peer in peers {
            let (bytes, closed) = peer.readToEnd(timeout: 10)
            #expect(closed && bytes < 8 << 20, "\(bytes) bytes, closed: \(closed)")
        }
        #expect(server.stdout.components(separatedBy: "GET /assets/Big - 200").count - 1 == 20, "\(server.stdout)")
        #expect(server.stdout.contains("aborted"), "\(server.stdout)")
        // A reader that does read gets the whole pack meanwhile.
        let reader = try RawConnection(port: try port(url), receiveBuffer: 1 << 20)
        reader.send("GET /assets/Big HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let (bytes, closed) = reader.readToEnd(timeout: 20)
        #expect(closed && bytes > 8 << 20)

        // SIGTERM with stalled peers connected: the server waits --shutdown-grace, then closes them and exits.
        let patient = try RunningTool(
            tool,
            ["serve", folder.string, "--port", "0", "--send-timeout", "60", "--shutdown-grace", "1"]
        )
        let patientURL = try #require(patient.waitForFirstLine(), "\(patient.stderr)")
        let lingering = try (0..<5).map { _ in try RawConnection(port: try port(patientURL)) }
        for peer in lingering { peer.send(request) }
        // SIGTERM once each of them is being answered (its first bytes arrived), so shutdown meets five
        // responses in flight, not five requests it may not have read yet.
        for peer in lingering { #expect(!peer.read(atLeast: 1, timeout: 10).isEmpty) }
        // The grace (1 s) ends the five responses, not their send timeout (60 s): the process exits 0 before
        // `interrupt` gives up on it (15 s) and kills it.
        let status = patient.interrupt(signal: SIGTERM, timeout: 15)
        #expect(status == 0, "\(patient.stderr)")
    }

    /// A second ba-mock on a folder that a server serves (an export, another server) builds in a copy of the
    /// server's state and says so: the server's `.ba-mock` is left byte for byte as it was and every pack it
    /// publishes stays served. Both wrote the same `.ba-mock`, each sweeping what the other had just built:
    /// export failed (`cannot open …/.ba-mock/deltas/….delta: No such file or directory`).
    @Test func aSecondBAMockOnAServedFolderLeavesTheServersStateAlone() async throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let server = try RunningTool(tool, ["serve", folder.string, "--port", "0", "--watch-interval", "0.1"])
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "no URL on stdout; stderr: \(server.stderr)")
        for _ in 0..<300 where !server.stderr.contains("Ctrl-C stops") { usleep(50_000) }
        let stateFile = folder.appending(".ba-mock/state.json")
        let state = try scratch.read(stateFile)
        let held = "another ba-mock (process \(server.process.processIdentifier)) keeps"
        for round in 0..<3 {  // a tar export rebuilds every pack, with deltas, while the server watches
            let out = scratch.root.appending("export-\(round)")
            let exported = try runTool(tool, ["export", folder.string, "--out", out.string, "--format", "tar"])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(exported.stderr.contains(held), "\(exported.stderr)")
            #expect(FileManager.default.fileExists(atPath: out.appending("manifest").string))
            try await Task.sleep(for: .milliseconds(300))  // the server's watcher looks at the folder again
        }
        #expect(try scratch.read(stateFile) == state)
        _ = try await checkPacks(manifestURL: url + "/manifest", folder: folder, scratch: scratch)

        let second = try RunningTool(tool, ["serve", folder.string, "--port", "0"])
        let secondURL = try #require(second.waitForFirstLine(), "stderr: \(second.stderr)")
        _ = try await checkPacks(manifestURL: secondURL + "/manifest", folder: folder, scratch: scratch)
        #expect(second.interrupt() == 0, "\(second.stderr)")
        #expect(second.stderr.contains(held), "\(second.stderr)")
        #expect(try scratch.read(stateFile) == state)
        _ = try await checkPacks(manifestURL: url + "/manifest", folder: folder, scratch: scratch)
    }

    @Test func exportServedByNginxMatchesServe() async throws {
        guard Nginx.installed else {
            Issue.record("nginx is not installed: run `make deps`")
            return
        }
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let out = scratch.root.appending("export")
        let exported = try runTool(tool, ["export", folder.string, "--out", out.string])
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.appending("manifest").string))

        let nginx = try await Nginx(
            scratch: scratch,
            server: "root \(out.string);\nlocation / { try_files $uri =404; }"
        )
        defer { nginx.stop() }
        let base = nginx.base
        let viaNginx = try await checkPacks(manifestURL: base + "/manifest", folder: folder, scratch: scratch)
        #expect(viaNginx.assetPacks.allSatisfy { $0.url == "assets/\($0.id)" })

        // ba-mock serve on the same folder publishes the same packs, bytes and versions.
        let server = try RunningTool(tool, ["serve", folder.string, "--port", "0"])
        let url = try #require(server.waitForFirstLine(), "stderr: \(server.stderr)")
        let viaMock = try await checkPacks(manifestURL: url + "/manifest", folder: folder, scratch: scratch)
        server.interrupt()
        func strip(_ manifest: DownloadManifest) -> [DownloadManifest.Entry] {
            manifest.assetPacks.map { entry in
                var copy = entry
                copy.url = ""
                return copy
            }
        }
        #expect(strip(viaNginx) == strip(viaMock))

        // An update served by nginx goes through the delta that export wrote as a static file.
        let sync = builtProduct("ba-sync")
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--server", base, "--app-group", appGroup.string]
        #expect(try runTool(sync, ["ensure", "Levels"] + common).status == 0)
        try scratch.write("Assets/Levels/README.txt", "changed for the delta\n")
        #expect(try runTool(tool, ["export", folder.string, "--out", out.string]).status == 0)
        let delta = try await fetch(base + "/manifest").body
        let entry = try #require(
            try DownloadManifest.decode(delta, source: base).assetPacks.first { $0.id == "Levels" }
        )
        let deltaURL = try #require(entry.deltas?.first?.url)
        #expect(deltaURL.hasPrefix("deltas/Levels/"))
        #expect(FileManager.default.fileExists(atPath: out.appending(deltaURL).string))
        let atVersion1 = scratch.root.appending("AppGroup-v1")
        try FileManager.default.copyItem(atPath: appGroup.string, toPath: atVersion1.string)
        let updated = try runTool(sync, ["ensure", "--latest", "--delta", "Levels", "--json"] + common)
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(updated.stdout.contains(#""event":"delta""#), "\(updated.stdout)")
        #expect(try runTool(sync, ["verify", "--app-group", appGroup.string]).status == 0)
        let cat = try runTool(sync, ["cat", "Levels/README.txt", "--app-group", appGroup.string])
        #expect(cat.stdout == "changed for the delta\n")

        // A manifest whose version 3 entry offers the delta to version 2 (its own digest and size, a genuine
        // file): the delta says what it produces, so it is refused and the whole pack installed, never
        // version 2's files under version 3's digest.
        try FileManager.default.copyItem(
            atPath: out.appending(deltaURL).string,
            toPath: out.appending("to-version-2.delta").string
        )
        let toVersion2 = try #require(
            (try JSONSerialization.jsonObject(with: delta) as? [String: Any])
                .flatMap { $0["assetPacks"] as? [[String: Any]] }?.first { $0["id"] as? String == "Levels" }?["deltas"]
                as? [[String: Any]]
        ).first { $0["fromVersion"] as? Int == 1 }
        var offered = try #require(toVersion2)
        offered["url"] = "to-version-2.delta"
        try scratch.write("Assets/Levels/README.txt", "version 3\n")
        #expect(try runTool(tool, ["export", folder.string, "--out", out.string]).status == 0)
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: try scratch.read(out.appending("manifest"))) as? [String: Any]
        )
        manifest["assetPacks"] = (manifest["assetPacks"] as? [[String: Any]] ?? []).map { entry in
            var entry = entry
            if entry["id"] as? String == "Levels" { entry["deltas"] = [offered] }
            return entry
        }
        try JSONSerialization.data(withJSONObject: manifest).write(
            to: URL(fileURLWithPath: out.appending("manifest").string)
        )
        let refused = try runTool(
            sync,
            ["ensure", "--latest", "--delta", "Levels", "--server", base, "--app-group", atVersion1.string]
        )
        #expect(refused.status == 0, "\(refused.stderr)")
        #expect(refused.stderr.contains("Levels: delta from v1"), "\(refused.stderr)")
        #expect(refused.stderr.contains("the delta failed ("), "\(refused.stderr)")
        #expect(refused.stderr.contains("Levels: installed version 3"), "\(refused.stderr)")
        #expect(try runTool(sync, ["verify", "--app-group", atVersion1.string]).status == 0)
        let third = try runTool(sync, ["cat", "Levels/README.txt", "--app-group", atVersion1.string])
        #expect(third.stdout == "version 3\n")
    }

    @Test func packageTemplateAndInspectWorkTogether() throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let template = try runTool(tool, ["template"])
        #expect(template.status == 0)
        #expect(template.stdout.contains("\"assetPackID\""))
        #expect(template.stdout.contains("installationEventTypes"))

        let output = scratch.root.appending("Levels.pack")
        let packaged = try runTool(
            tool,
            ["package", "Levels.json", "-o", output.string, "--compression", "xz", "--json"],
            directory: folder.string
        )
        #expect(packaged.status == 0, "\(packaged.stderr)")
        let built = try JSONDecoder().decode(BuiltPack.self, from: Data(packaged.stdout.utf8))
        #expect(built.compression == .xz)
        #expect(built.sha256 == FileDigest.sha256(of: try scratch.read(output)))

        let inspected = try runTool(tool, ["inspect", output.string, "--verify"])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(inspected.stdout.hasPrefix("Levels: prefetch, \(built.fileCount) files"))
        #expect(inspected.stdout.contains("Levels/World1/Level1/level.json"))
        #expect(inspected.stdout.contains("verified"))
    }

    /// A FIFO and a symlink to /dev/zero named `*.json` beside good manifests: `validate` names both at once
    /// and exits 1, and `export` refuses the folder as it does any invalid manifest, naming both. Both hung
    /// in `open` on the FIFO; a read of /dev/zero grew `validate` to 5 GB in 20 s.
    @Test func aFIFOOrADeviceNamedJSONIsAManifestProblemNotAHang() throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let fifo = folder.appending("Bad.json")
        let zero = folder.appending("Zero.json")
        #expect(mkfifo(fifo.string, 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: zero.string, withDestinationPath: "/dev/zero")
        let fix = "Fix: remove it from the asset folder (a manifest is a regular file)"
        let fifoProblem = "error: \(fifo): (file): is a FIFO, not a regular file. \(fix)"
        let zeroProblem = "error: \(zero): (file): is a symlink to a character device, not a regular file. \(fix)"

        let validated = try runTool(tool, ["validate", folder.string], timeout: 15)
        #expect(validated.status == 1, "-9: killed after 15 s; stderr: \(validated.stderr)")
        #expect(validated.stdout.contains(fifoProblem), "\(validated.stdout)")
        #expect(validated.stdout.contains(zeroProblem), "\(validated.stdout)")
        #expect(validated.stdout.hasSuffix("2 error(s), 0 warning(s)\n"), "\(validated.stdout)")
        let direct = try runTool(tool, ["validate", zero.string], timeout: 15)
        #expect(direct.status == 1, "-9: killed after 15 s; stderr: \(direct.stderr)")
        #expect(direct.stdout.contains(zeroProblem), "\(direct.stdout)")

        let out = scratch.root.appending("site")
        let exported = try runTool(tool, ["export", folder.string, "--out", out.string], timeout: 60)
        #expect(exported.status == 1, "-9: killed after 60 s; stderr: \(exported.stderr)")
        #expect(exported.stderr.contains("has 2 invalid manifest(s)"), "\(exported.stderr)")
        #expect(exported.stderr.contains("\(fifo): (file): is a FIFO"), "\(exported.stderr)")
        #expect(exported.stderr.contains("\(zero): (file): is a symlink to a character device"), "\(exported.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.appending("manifest").string))
    }

    /// A FIFO and a symlink to /dev/zero put into a served folder are logged as problems while the server keeps
    /// publishing, a pack added after them included, and SIGTERM still stops it. The watcher hung in `open`
    /// on the FIFO: nothing was published from then on and SIGTERM was ignored.
    @Test func aServedFolderKeepsPublishingPastAFIFOOrADeviceAndStopsOnSIGTERM() async throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let server = try RunningTool(tool, ["serve", folder.string, "--port", "0", "--watch-interval", "0.2"])
        let url = try #require(server.waitForFirstLine(), "no URL on stdout; stderr: \(server.stderr)")
        let fifo = folder.appending("Bad.json")
        let zero = folder.appending("Zero.json")
        #expect(mkfifo(fifo.string, 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: zero.string, withDestinationPath: "/dev/zero")
        let tutorial = String(decoding: try scratch.read(folder.appending("Tutorial.json")), as: UTF8.self)
        try scratch.write(
            "Assets/Extra.json",
            tutorial.replacingOccurrences(of: #""assetPackID": "Tutorial""#, with: #""assetPackID": "Extra""#)
        )
        // The refresh publishes Extra, then logs its report: the problems show a moment after the pack.
        let fifoError = "error: \(fifo): (file): is a FIFO, not a regular file"
        let zeroError = "error: \(zero): (file): is a symlink to a character device"
        var ids: [String] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let logged = server.stderr
            if ids.contains("Extra") && logged.contains(fifoError) && logged.contains(zeroError) { break }
            try await Task.sleep(for: .milliseconds(200))
            let manifest = try JSONDecoder().decode(
                DownloadManifest.self,
                from: try await fetch(url + "/manifest").body
            )
            ids = manifest.assetPacks.map(\.id)
        }
        #expect(ids == ["Extra", "HighResTextures", "Levels", "Tutorial"], "stderr: \(server.stderr)")
        #expect(server.stderr.contains(fifoError), "\(server.stderr)")
        #expect(server.stderr.contains(zeroError), "\(server.stderr)")
        #expect(server.interrupt(signal: SIGTERM, timeout: 15) == 0, "-9: SIGTERM ignored; \(server.stderr)")
    }

    /// A manifest broken while serving shows in `/manifest` (`mockProblems`) and `/_mock/packs` with its file,
    /// key and pack, the last good version stays published, and the log says when it is fixed and when a pin is
    /// removed. It was said on stderr only: CI reading the manifest saw nothing.
    @Test func aManifestBrokenWhileServingShowsWhereScriptsLook() async throws {
        let scratch = try Scratch()
        let folder = try sampleFolder(scratch)
        let server = try RunningTool(
            tool,
            ["serve", folder.string, "--port", "0", "--watch-interval", "0.1", "--settle", "0.3"]
        )
        let url = try #require(server.waitForFirstLine(), "no URL on stdout; stderr: \(server.stderr)")
        let levels = folder.appending("Levels.json")
        let good = try scratch.read(levels)
        try scratch.write("Assets/Levels.json", #"{"assetPackID": "Levels", "downloadPolicy": {"onDemand": {}}}"#)
        var manifest = try JSONDecoder().decode(DownloadManifest.self, from: try await fetch(url + "/manifest").body)
        let deadline = ContinuousClock.now + .seconds(30)
        while manifest.mockProblems == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            manifest = try JSONDecoder().decode(DownloadManifest.self, from: try await fetch(url + "/manifest").body)
        }
        let problems = try #require(manifest.mockProblems, "stderr: \(server.stderr)")
        #expect(problems.map(\.key) == ["fileSelectors", "platforms"])
        #expect(problems.allSatisfy { $0.file == levels.string && $0.pack == "Levels" && $0.fix != nil })
        #expect(manifest.assetPacks.first { $0.id == "Levels" }?.version == 1, "the last good version stays")
        let control = try JSONSerialization.jsonObject(with: try await fetch(url + "/_mock/packs").body)
        let packs = try #require((control as? [String: Any])?["packs"] as? [[String: Any]])
        let listed = try #require(packs.first { $0["id"] as? String == "Levels" }?["problems"] as? [[String: Any]])
        #expect(listed.compactMap { $0["key"] as? String } == ["fileSelectors", "platforms"])
        // The line goes out through the output queue, after the manifest changed: wait for it, not for the clock.
        while !server.stderr.contains("error: \(levels): fileSelectors: is missing") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(server.stderr.contains("error: \(levels): fileSelectors: is missing"), "\(server.stderr)")
        try scratch.write("Assets/Levels.json", good)
        while manifest.mockProblems != nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            manifest = try JSONDecoder().decode(DownloadManifest.self, from: try await fetch(url + "/manifest").body)
        }
        #expect(manifest.mockProblems == nil)
        let raw = String(decoding: try await fetch(url + "/manifest").body, as: UTF8.self)
        #expect(!raw.contains("mockProblems"), "the key is there only while something is broken")
        while !server.stderr.contains("fixed: \(levels) has no error any more") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(server.stderr.contains("fixed: \(levels) has no error any more"), "\(server.stderr)")
        var pin = HTTPClientRequest(url: url + "/_mock/packs/Levels/version/9")
        pin.method = .PUT
        _ = try await HTTPClient.shared.execute(pin, timeout: .seconds(10))
        var unpin = HTTPClientRequest(url: url + "/_mock/packs/Levels/version")
        unpin.method = .DELETE
        _ = try await HTTPClient.shared.execute(unpin, timeout: .seconds(10))
        #expect(server.interrupt() == 0)
        #expect(
            server.stderr.contains("unpinned Levels: was published as version 9, now as version 1"),
            "\(server.stderr)"
        )
    }

    /// `--fault '='` crashed ba-mock at start ("Index out of range", exit 132), and a stall too long for the clock
    /// was accepted and crashed the first download; both are refused with a usage error that gives the range.
    @Test func faultRulesThatCrashedServeAreRefused() throws {
        let scratch = try Scratch()
        let assets = try sampleFolder(scratch)
        for (rule, says) in [
            ("=", "has no name"), ("stall=9223372036854775807", "stall needs a whole number from 0 to 86400"),
            ("throttle=0", "from 1 to 1099511627776"),
        ] {
            let refused = try runTool(tool, ["serve", assets.string, "--port", "0", "--fault", rule], timeout: 60)
            #expect(refused.status == 64, "\(rule): exit \(refused.status), \(refused.stderr)")
            #expect(refused.stderr.contains(says), "\(rule): \(refused.stderr)")
            #expect(refused.stdout.isEmpty, "\(rule): nothing is served")
        }
    }

    @Test func errorsSayWhatWentWrongAndExitNonZero() throws {
        let scratch = try Scratch()
        try scratch.write(
            "Broken.json",
            #"{"assetPackID": "Broken", "downloadPolicy": {"prefetch": {}}, "fileSelectors": [{"file": "x"}], "platforms": ["iOS"]}"#
        )
        let bad = try runTool(
            tool,
            ["package", scratch.root.appending("Broken.json").string, "-o", scratch.root.appending("x.pack").string]
        )
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("Broken.json: downloadPolicy.prefetch.installationEventTypes: is missing"))
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending("x.pack").string))

        let served = try runTool(tool, ["serve", scratch.root.string, "--port", "0"], timeout: 60)
        #expect(served.status != 0)
        #expect(served.stderr.contains("invalid manifest"))
        #expect(served.stderr.contains("Fix: "))

        let missing = try runTool(tool, ["--port", "0"], directory: scratch.root.appending("..").string)
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no asset folder at Assets"))

        let level = try runTool(tool, ["package", "x.json", "-o", "y", "--compression", "gzip", "--level", "30"])
        #expect(level.status != 0)
        #expect(level.stderr.contains("use 1 to 9"))

        // Names of packs that do not exist, and version 0, are refused before anything is served.
        let assets = try sampleFolder(scratch)
        for (arguments, says) in [
            (
                ["--pack-version", "Nope=3"],
                "there is no pack Nope served here (packs: HighResTextures, Levels, Tutorial)"
            ),
            (["--pack-version", "Levels=0"], "a version of 1 or more"),
            (["--fault", "status=500,pack=Nope"], "--fault …,pack=Nope: there is no pack Nope"),
            (["--host", "0.0.0.0", "--tls-self-signed"], "Fix: add --tls-name"),
        ] {
            let refused = try runTool(tool, ["serve", assets.string, "--port", "0"] + arguments, timeout: 60)
            #expect(refused.status != 0, "\(arguments)")
            #expect(refused.stderr.contains(says), "\(arguments): \(refused.stderr)")
        }
    }
}
