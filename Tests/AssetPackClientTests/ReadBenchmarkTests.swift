import AssetPackBench
import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

/// What `ba-sync bench` measures, checked against the page cache itself.
@Suite("Read benchmark")
struct ReadBenchmarkTests {
    /// Pages of `file` in the page cache (mincore of a mapping that touches none of them).
    func residentPages(_ file: FilePath) throws -> Int {
        let fd = open(file.string, O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        let size = Int(info.st_size)
        let map = try #require(mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0))
        #expect(map != MAP_FAILED)
        defer { munmap(map, size) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (size + page - 1) / page)
        #expect(mincore(map, size, &vector) == 0)
        return vector.filter { $0 & 1 == 1 }.count
    }

    /// tmpfs keeps its pages whatever `POSIX_FADV_DONTNEED` says: there, nothing can be read cold.
    static let scratchIsOnDisk =
        ReadBenchmark.Environment(
            tool: "",
            folder: FilePath(FileManager.default.temporaryDirectory.path),
            options: ReadBenchmark.Options()
        ).fileSystem != "tmpfs"

    @Test(.enabled(if: scratchIsOnDisk, "the scratch folder is on tmpfs, which cannot drop pages"))
    func aColdRandomCaseStaysColdToItsLastRead() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Levels/World2/big.bin", Scratch.noise(4 << 20, seed: 3))
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: scratch.root.appending("AppGroup"))
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let file = try manager.reader.installedFile(at: "Levels/World2/big.bin")
            for method in [ReadBenchmark.Method.descriptor, .contents, .copy] {
                for cache in [ReadBenchmark.Cache.cold, .warm] {
                    var options = ReadBenchmark.Options()
                    options.methods = [method]
                    options.patterns = [.random]
                    options.caches = [cache]
                    options.blockSizes = [4096]
                    options.iterations = 300
                    let benchmark = try ReadBenchmark(
                        reader: manager.reader,
                        paths: ["Levels/World2/big.bin"],
                        options: options
                    )
                    let results = try benchmark.run()
                    #expect(results.map(\.operations) == [300])
                    let resident = try residentPages(file)
                    if cache == .cold {
                        // Neither the blocks read nor their read-ahead stay: every read went to the disk.
                        #expect(resident == 0, "\(method): \(resident) pages stayed in the page cache")
                    } else {
                        #expect(resident > 0, "\(method)")
                    }
                }
            }
        }
    }

    /// `ba-sync bench` as a library call: a run saved as the baseline gates the next (its histogram and page
    /// written), and a baseline that is not a report is refused before anything is measured.
    @Test func aRunComparesWithItsBaselineAndWritesItsFiles() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: scratch.root.appending("AppGroup"))
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            var options = ReadBenchmark.Options()
            (options.methods, options.patterns, options.caches) = ([.descriptor], [.lookup], [.warm])
            options.iterations = 200
            var request = ReadBenchmark.Request(options: options, tool: "tests")
            let first = try ReadBenchmark.run(request, reader: manager.reader)
            #expect(first.results.map(\.operations) == [200] && first.baseline == nil)
            let saved = try scratch.write("out/base.json", try first.json())

            request.baselineFile = saved
            request.tolerance = 1_000_000
            (request.histogramFile, request.htmlFile) = (
                scratch.root.appending("out/h.hgrm"), scratch.root.appending("out/r/x.html")
            )
            let second = try ReadBenchmark.run(request, reader: manager.reader)
            #expect(second.baseline?.count == 1 && second.baseline?.contains(where: \.regressed) == false)
            #expect(
                String(decoding: try scratch.read(scratch.root.appending("out/h.hgrm")), as: UTF8.self).hasPrefix(
                    "# namespace lookup"
                )
            )
            #expect(
                String(decoding: try scratch.read(scratch.root.appending("out/r/x.html")), as: UTF8.self).contains(
                    "<svg"
                )
            )

            request.baselineFile = try scratch.write("out/not.json", "[1, 2]")
            let refused = #expect(throws: AssetPackFormatError.self) {
                try ReadBenchmark.run(request, reader: manager.reader)
            }
            #expect(refused?.code == .invalidOption)
            #expect(refused?.message.contains("is not a report of `ba-sync bench --json`") == true)
        }
    }

    /// `bench --layers`: both layers read the same installed files, every round and call counted; a pack the
    /// manifest lists but that is not installed is refused before anything is asked of a server.
    @Test func theLayersAreMeasuredOnTheSameFiles() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        let installed = try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            return try manager.reader.paths(inAssetPackWithID: "Levels").count
        }
        // The server is gone: a first read after ensureLocalAvailability of an installed pack asks none.
        var options = LayerBenchmark.Options()
        (options.rounds, options.calls) = (4, 1500)
        let report = try await LayerBenchmark.run(appGroup: appGroup, assetPackID: "Levels", options: options)
        #expect(report.files == installed && installed > 1)
        for layer in [report.backgroundAssets, report.engine] {
            #expect(layer.firstRead.count == 4 && layer.firstRead.allSatisfy { $0 > 0 })
            #expect(layer.contentsCall.p50 > 0 && layer.contentsCall.p99 >= layer.contentsCall.p50)
        }
        #expect(report.tableRows().map(\.first) == ["layer", "BackgroundAssets", "engine", "ratio"])

        let error = await #expect(throws: AssetPackClientError.self) {
            try await LayerBenchmark.run(appGroup: appGroup, assetPackID: "Textures", options: options)
        }
        #expect(error?.code == .assetPackNotFound)
        #expect(error?.message.contains("Textures is not installed") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("ba-sync ensure Textures") == true, "\(error?.message ?? "")")
    }
}
