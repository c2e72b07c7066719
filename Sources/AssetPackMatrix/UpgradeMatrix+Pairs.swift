import AssetPackClient
import AssetPackFormat
import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import Synchronization
import SystemPackage

extension UpgradeMatrix {
    /// Plays the matrix `request` asks for.
    /// - Parameter progress: Told about each release and pair as it goes (a tool shows it).
    /// - Returns: Every release and every pair's outcome; a pair that fails is in the report, not thrown.
    /// - Throws: ``UpgradeMatrixError`` for releases that cannot be played (fewer than one, an input that is
    ///   no folder, a pair out of range); what building a release throws.
    public static func run(_ request: Request, progress: @escaping @Sendable (Progress) -> Void = { _ in })
        async throws -> Report
    {
        guard !request.releases.isEmpty else {
            throw UpgradeMatrixError("no release given. Fix: give the releases, oldest first")
        }
        if let only = request.only, !(0..<only.to).contains(only.from) || only.to > request.releases.count {
            throw UpgradeMatrixError(
                "the pair \(only.from) → \(only.to) is not among releases 1 to \(request.releases.count) (0 is a first install)"
            )
        }
        let start = ContinuousClock.now
        let temporary = FilePath(FileManager.default.temporaryDirectory.path)
        try await BlockingIO.shortCall {
            try checkOutputs(request)
            sweepAbandoned(in: temporary)
        }
        let pid = ProcessInfo.processInfo.processIdentifier
        let work = temporary.appending("ba-matrix-\(pid)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(atPath: work.string) }
        let published = try await publish(
            request.releases,
            options: request.packOptions,
            platform: request.platform,
            in: work,
            progress: progress
        )
        let pairs = try await serving(published) { base in
            let client = AssetPackManager.makeHTTPClient()
            var played: [Pair] = []
            let wanted = Self.pairs(request, count: published.count)
            for (index, pair) in wanted.enumerated() {
                progress(.pair(from: pair.from, to: pair.to, index: index + 1, of: wanted.count))
                let groups = request.keepAppGroups ?? work.appending("groups")
                let outcome = await play(
                    from: pair.from == 0 ? nil : published[pair.from - 1].release,
                    to: published[pair.to - 1].release,
                    base: base,
                    appGroup: groups.appending("\(pair.from)-to-\(pair.to)"),
                    request: request,
                    client: client
                )
                progress(.played(outcome))
                played.append(outcome)
            }
            try? await client.shutdown()
            return played
        }
        let report = Report(
            releases: published.map(\.release),
            pairs: pairs,
            seconds: (ContinuousClock.now - start).inSeconds
        )
        if let file = request.htmlFile {
            let page = Data(report.html.utf8)
            try await BlockingIO.shortCall { try page.write(to: URL(fileURLWithPath: file.string), options: .atomic) }
        }
        return report
    }

    /// Serves each release's folder at `/r<n>/` on 127.0.0.1 (a port of its own) while `body` runs with the
    /// base URL.
    static func serving<T: Sendable>(
        _ releases: [Published],
        _ body: @escaping @Sendable (URL) async throws -> T
    ) async throws -> T {
        let quiet = Logger(label: "upgrade-matrix") { _ in SwiftLogNoOpLogHandler() }  // a library never prints
        let router = Router()
        for release in releases {
            router.add(
                middleware: FileMiddleware(
                    release.folder.string,
                    urlBasePath: "/r\(release.release.number)",
                    logger: quiet
                )
            )
        }
        let (ports, listening) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "ba-sync upgrade-matrix"),
            onServerRunning: { channel in listening.yield(channel.localAddress?.port ?? 0) },
            logger: quiet
        )
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await app.runService(gracefulShutdownSignals: [])
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), let base = URL(string: "http://127.0.0.1:\(port)") else {
                throw UpgradeMatrixError("the releases could not be served on 127.0.0.1")
            }
            group.addTask { try await body(base) }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw UpgradeMatrixError("the server of the releases stopped")
        }
    }

    /// Fails before any work when the report or the app groups cannot be written where asked.
    static func checkOutputs(_ request: Request) throws {
        let files = FileManager.default
        var isFolder: ObjCBool = false
        if let html = request.htmlFile {
            let parent = html.removingLastComponent()
            let folder = parent.isEmpty ? "." : parent.string
            guard files.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw UpgradeMatrixError("--html \(html): the folder \(folder) does not exist. Fix: create it first")
            }
        }
        if let keep = request.keepAppGroups {
            if files.fileExists(atPath: keep.string, isDirectory: &isFolder), !isFolder.boolValue {
                throw UpgradeMatrixError("--keep-app-groups \(keep) is a file. Fix: name a folder (it is created)")
            }
            do {
                try files.createDirectory(atPath: keep.string, withIntermediateDirectories: true)
            } catch {
                throw UpgradeMatrixError("--keep-app-groups \(keep) cannot be created: \(error.localizedDescription)")
            }
        }
    }

    /// Removes the working folders of matrices whose process is gone (killed before it could clean up).
    static func sweepAbandoned(in temporary: FilePath) {
        let files = FileManager.default
        for name in (try? files.contentsOfDirectory(atPath: temporary.string)) ?? [] where name.hasPrefix("ba-matrix-")
        {
            let pid = name.dropFirst("ba-matrix-".count).prefix { $0.isNumber }
            guard !pid.isEmpty, !files.fileExists(atPath: "/proc/\(pid)") else { continue }
            try? files.removeItem(atPath: temporary.appending(name).string)
        }
    }
}
