import AssetPackBench
import AssetPackClient
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
}
