internal import AssetPackFormat
internal import AssetPackServer
internal import BackgroundAssets
public import Foundation
internal import Logging
internal import ServiceLifecycle
internal import Synchronization
public import System
internal import SystemPackage

/// `ba-mock` serving a copy of an asset folder on 127.0.0.1 at a free port, in this process, for one test:
/// made by ``withAssetPackServer(serving:platform:language:primaryLanguage:infoPlist:format:_:)``, which
/// points `AssetPackManager.shared` at it and an empty app group of its own.
public struct MockAssetPackServer: Sendable {
    /// The server's base URL (`http://127.0.0.1:PORT`).
    public let url: URL
    /// The download manifest's URL, what `shared` reads (Apple's `BAManifestURL`).
    public let manifestURL: URL
    /// The copy of the asset folder the server serves: change files here, then ``publish()``.
    public let assetFolder: System.FilePath
    /// The app group `shared` installs into for this test (removed at its end).
    public let appGroup: System.FilePath
    let catalog: PackCatalog
    let faults: FaultPlan
    let log: Mutex<[String]>.Box

    /// Rebuilds the packs from ``assetFolder`` after a test changed it: a pack whose content changed gets
    /// the next version, as `ba-mock serve` does when it sees the change.
    /// - Returns: The packs whose version changed, by ID, with their new version.
    /// - Throws: The first problem the folder has (a bad manifest, a file that went away), as `ba-mock` says it.
    @discardableResult
    public func publish() async throws -> [String: Int] {
        let report = try await catalog.refresh()
        if let problem = report.problems.first { throw problem }
        return Dictionary(report.changes.map { ($0.id, $0.to) }) { _, last in last }
    }

    /// Publishes `version` as the pack's version (its content unchanged), as `ba-serve --asset-pack-versions`
    /// does: a higher one is an update to devices, a lower one is not.
    public func setVersion(_ version: Int, ofAssetPackWithID id: String) async throws {
        try await catalog.setVersion(version, forPackWithID: id)
    }

    /// Stops (or resumes) listing the pack in the manifest: devices then see it obsolete.
    public func setObsolete(_ obsolete: Bool, assetPackWithID id: String) async throws {
        try await catalog.setObsolete(obsolete, packWithID: id)
    }

    /// Adds a fault rule in `ba-mock serve --fault`'s syntax, e.g. `status=404,pack=Levels`,
    /// `reset-after=65536,pack=Levels,nth=1` or `throttle=20000` (README, "Faults on purpose").
    /// - Throws: The rule's syntax error.
    public func addFault(_ rule: String) throws { faults.add(try FaultRule(parsing: rule)) }

    /// Removes every fault rule.
    public func clearFaults() { faults.clear() }

    /// The request log so far, a line per response (method, path, status, bytes sent), oldest first.
    public var requestLog: [String] { log.value.withLock { $0 } }
}

extension Mutex where Value: Sendable {
    /// A mutex that can be shared (a `Mutex` cannot be copied).
    final class Box: Sendable {
        let value: Mutex<Value>
        init(_ initial: Value) { value = Mutex(initial) }
    }
}

/// Why the mock could not start.
public struct MockAssetPackServerError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// Starts `ba-mock` on a copy of `folder` (127.0.0.1, a free port), points `AssetPackManager.shared` at it
/// with an empty app group of the test's own, runs `body`, then stops the server and removes the copy and
/// the app group, whatever `body` did.
///
/// `shared` is pointed at the server for the task that calls this and the tasks it starts (a task-local
/// value), so tests that each call it run side by side.
/// - Parameters:
///   - folder: The asset folder: packaging manifests (`*.json`) beside the assets, as `ba-mock serve` takes; a
///     relative path starts at the working folder (the package's root under `swift test`). The folder is
///     copied (through a link, if it is one) and never written to.
///   - platform: The platform the device plays; packs for others are invisible. `nil` sees every pack.
///   - language: The app's preferred language (a BCP-47 tag); `nil` takes the environment's.
///   - primaryLanguage: The app's primary language, the resolved language's fallback.
///   - infoPlist: The app's Info.plist, whose first-install limits ``simulate(_:downloaderExtension:)`` holds
///     an `install` event to, as a device does.
///   - format: The packs' format: Apple Archive (what a device downloads) or ba-mock's tar+zstd.
///   - body: The test.
/// - Throws: ``MockAssetPackServerError`` when the folder has a problem (naming it), or what `body` throws.
public func withAssetPackServer<T: Sendable>(
    serving folder: System.FilePath,
    platform: String? = "iOS",
    language: String? = nil,
    primaryLanguage: String = "en",
    infoPlist: System.FilePath? = nil,
    format: MockPackFormat = .appleArchive,
    _ body: (MockAssetPackServer) async throws -> T
) async throws -> T {
    let scratch = try await BlockingIO.shortCall { try TestScratch() }
    do {
        let result = try await serve(
            copyOf: folder.underlying,
            in: scratch,
            platform: platform,
            language: language,
            primaryLanguage: primaryLanguage,
            infoPlist: infoPlist,
            format: format,
            body
        )
        await scratch.remove()
        return result
    } catch {
        await scratch.remove()
        throw error
    }
}

private func serve<T: Sendable>(
    copyOf folder: SystemPackage.FilePath,
    in scratch: TestScratch,
    platform: String?,
    language: String?,
    primaryLanguage: String,
    infoPlist: System.FilePath?,
    format: MockPackFormat,
    _ body: (MockAssetPackServer) async throws -> T
) async throws -> T {
    let copy = scratch.root.appending("assets")
    // The folder itself may be a link (a test's `Assets` linked to the app's): its content is copied, never the
    // link, so that nothing is built into the folder it leads to.
    let source = URL(fileURLWithPath: folder.string).resolvingSymlinksInPath().path
    do {
        try await BlockingIO.longJob { try FileManager.default.copyItem(atPath: source, toPath: copy.string) }
    } catch {
        throw MockAssetPackServerError(
            description: "cannot copy the asset folder \(folder) for the test's server: \(error.localizedDescription)"
        )
    }
    let faults = FaultPlan(seed: 1)
    let log = Mutex<[String]>.Box([])
    let catalog = try PackCatalog(
        folder: AssetFolder(root: copy),
        options: PackBuildOptions(format: format == .appleArchive ? .aar : .tar),
        archivesKept: 1
    )
    let report = try await catalog.refresh()
    if let problem = report.problems.first {
        throw MockAssetPackServerError(description: "the asset folder \(folder) has a problem: \(problem)")
    }
    let configuration = ServerConfiguration(
        host: "127.0.0.1",
        port: 0,
        watchInterval: nil,
        requestLog: { line in log.value.withLock { $0.append(line) } },
        faults: faults
    )
    let (urls, announce) = AsyncStream<String>.makeStream()
    let app = try buildApplication(catalog: catalog, configuration: configuration) { url in announce.yield(url) }
    let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "ba-mock"))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        defer { tasks.cancelAll() }
        var waiting = urls.makeAsyncIterator()
        guard let text = await waiting.next(), let url = URL(string: text) else {
            throw MockAssetPackServerError(description: "the server stopped before it listened")
        }
        var shared = SharedManagerConfiguration(appGroup: System.FilePath(scratch.root.appending("app-group")))
        shared.manifestURL = url.appendingPathComponent("manifest")
        shared.platform = platform
        shared.language = language
        shared.primaryLanguage = primaryLanguage
        shared.infoPlist = infoPlist
        let server = MockAssetPackServer(
            url: url,
            manifestURL: url.appendingPathComponent("manifest"),
            assetFolder: System.FilePath(copy),
            appGroup: shared.appGroup,
            catalog: catalog,
            faults: faults,
            log: log
        )
        let result: Result<T, any Error>
        do {
            result = .success(
                try await BackgroundAssets.AssetPackManager.withConfiguration(shared) { try await body(server) }
            )
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        try? await tasks.waitForAll()
        return try result.get()
    }
}

/// The format of the packs the mock serves.
public enum MockPackFormat: Sendable, Hashable {
    /// Apple Archive (LZFSE), what `ba-package` writes and a device downloads.
    case appleArchive
    /// ba-mock's pax tar with zstd.
    case tarZstd
}

/// A folder of the test's own under the temporary folder, removed at the end.
struct TestScratch: Sendable {
    let root: SystemPackage.FilePath

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/ba-assets-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw MockAssetPackServerError(description: "cannot make a folder under \(base): \(Errno(rawValue: errno))")
        }
        root = SystemPackage.FilePath(String(cString: made))
    }

    /// Removes the folder, off the cooperative pool (a recursive delete).
    func remove() async {
        let root = self.root
        _ = try? await BlockingIO.longJob { try FileManager.default.removeItem(atPath: root.string) }
    }
}
