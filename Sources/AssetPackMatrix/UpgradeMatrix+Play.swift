import AssetPackClient
import AssetPackFormat
import AsyncHTTPClient
import Foundation
import Synchronization
import SystemPackage

extension UpgradeMatrix {
    /// Plays one pair in a fresh app group: every pack of `from` installed (nothing for a first install),
    /// then what a device does after an app update to `to` (a first install at `to`: its install event, then
    /// every pack), then the checks.
    static func play(
        from: Release?,
        to: Release,
        base: URL,
        appGroup: FilePath,
        request: Request,
        client: HTTPClient
    ) async -> Pair {
        try? await BlockingIO.longJob { try FileManager.default.removeItem(atPath: appGroup.string) }
        var pair = Pair(
            from: from?.number ?? 0,
            to: to.number,
            ok: false,
            seconds: 0,
            bytesDownloaded: 0,
            statusBefore: [:],
            updates: [:],
            installed: [:],
            removed: [],
            problems: [],
            replay: replay(request, from: from?.number ?? 0, to: to.number)
        )
        do {
            if let from {
                let older = try manager(from.manifestURL(base), appGroup: appGroup, request, client)
                try await older.ensureLocalAvailability(ofAssetPacksWithIDs: Array(from.packs.keys))
            }
            let newer = try manager(to.manifestURL(base), appGroup: appGroup, request, client)
            if from != nil {
                for entry in try await newer.statusReport().entries { pair.statusBefore[entry.id] = entry.status.names }
            }
            let watcher = Watcher(newer)
            let start = ContinuousClock.now
            do {
                try await update(&pair, newer, from: from, to: to)
            } catch {
                pair.problems.append("\(error)")
            }
            // What was downloaded counts whether or not the update went through.
            pair.seconds = (ContinuousClock.now - start).inSeconds
            newer.finishStatusUpdates()
            (pair.updates, pair.bytesDownloaded) = await watcher.stop()
            try await check(&pair, from: from, to: to, reader: newer.reader)
        } catch {
            pair.problems.append("\(error)")
        }
        pair.ok = pair.problems.isEmpty
        return pair
    }

    /// What a device does on the way to `to`: after an app update, the update event; at a first install, the
    /// install event, then every pack.
    private static func update(_ pair: inout Pair, _ newer: AssetPackManager, from: Release?, to: Release) async throws
    {
        if from == nil {
            _ = try await newer.sync(event: .install)
            try await newer.ensureLocalAvailability(ofAssetPacksWithIDs: Array(to.packs.keys))
            return
        }
        let report = try await newer.sync(event: .update)
        pair.removed = report.removed
        for (id, error) in report.failures.sorted(by: { $0.key < $1.key }) {
            pair.problems.append("\(id): \(error.message)")
        }
    }

    /// A manager of `appGroup` against the manifest at `manifestURL`.
    private static func manager(
        _ manifestURL: URL,
        appGroup: FilePath,
        _ request: Request,
        _ client: HTTPClient
    ) throws -> AssetPackManager {
        var configuration = AssetPackManager.Configuration(
            server: nil,
            manifestURL: manifestURL,
            appGroup: appGroup
        )
        configuration.platform = request.platform
        configuration.deltaUpdates = request.deltaUpdates
        configuration.retryPolicy = RetryPolicy(retries: 1, baseDelay: .milliseconds(50))
        return try AssetPackManager(configuration: configuration, client: client)
    }

    /// What must hold after the update: every pack of the older release that the newer one still lists is at
    /// the newer version, every pack it no longer lists is gone, and every installed file has its digest.
    private static func check(_ pair: inout Pair, from: Release?, to: Release, reader: AssetPackReader) async throws {
        let installed = try await BlockingIO.shortCall { reader.installedPacks }
        pair.installed = Dictionary(installed.map { ($0.id, $0.version) }) { first, _ in first }
        for pack in installed.sorted(by: { $0.id < $1.id }) {
            guard let held = pack.sha256, let published = to.digests[pack.id], held != published,
                to.packs[pack.id] == pack.version
            else { continue }
            pair.problems.append(
                "\(pack.id): release \(to.number) changed its content (SHA-256 \(published.prefix(12))) but kept "
                    + "version \(pack.version), so a device holding version \(pack.version) (\(held.prefix(12))) keeps "
                    + "the old files. Fix: publish it as a new version"
            )
        }
        for (id, version) in pair.installed.sorted(by: { $0.key < $1.key }) {
            guard let published = to.packs[id] else {
                pair.problems.append(
                    "\(id): still installed (version \(version)), but release \(to.number) no longer lists it"
                )
                continue
            }
            if version != published {
                pair.problems.append("\(id): version \(version) installed, release \(to.number) publishes \(published)")
            }
        }
        let expected = from.map { Set($0.packs.keys).intersection(to.packs.keys) } ?? Set(to.packs.keys)
        for id in expected.subtracting(pair.installed.keys).sorted() {
            pair.problems.append("\(id): not installed after the update, though release \(to.number) lists it")
        }
        for id in Set(to.packs.keys).subtracting(expected).subtracting(pair.installed.keys).sorted() {
            pair.notes.append(
                "\(id): new in release \(to.number), and its download policy does not download it at an update: "
                    + "users who update get it when the app calls ensureLocalAvailability"
            )
        }
        let verification = try await BlockingIO.longJob { try reader.verification() }
        for problem in verification.problems {
            pair.problems.append("\(problem.pack): \(problem.path ?? "its index") \(problem.kind)")
        }
    }

    /// The command that plays one pair alone and keeps its app group.
    static func replay(_ request: Request, from: Int, to: Int) -> String {
        let here = FilePath(FileManager.default.currentDirectoryPath)
        let absolute = { (path: FilePath) in path.isAbsolute ? path : here.pushing(path) }
        var words = ["ba-sync", "upgrade-matrix"] + request.releases.map { shellQuoted(absolute($0).string) }
        let keep = request.keepAppGroups.map(absolute)?.string ?? "./matrix-app-groups"
        words += ["--only", "\(from):\(to)", "--keep-app-groups", shellQuoted(keep)]
        if request.deltaUpdates { words.append("--delta") }
        if let platform = request.platform, platform != "iOS" { words += ["--platform", platform] }
        if request.platform == nil { words += ["--platform", "any"] }
        return words.joined(separator: " ")
    }

    private static func shellQuoted(_ text: String) -> String {
        let plain = text.allSatisfy { $0.isLetter || $0.isNumber || "/._-+:@".contains($0) }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Collects a manager's status updates per pack, and the bytes each download took, while a pair plays.
private final class Watcher: Sendable {
    private final class Seen: Sendable {
        let state = Mutex<(updates: [String: [String]], bytes: [String: Int64], total: Int64)>(([:], [:], 0))

        func record(_ update: AssetPackManager.DownloadStatusUpdate) {
            state.withLock { state in
                let id = update.assetPack.id
                let name: String
                switch update {
                case .began: name = "began"
                case .paused: name = "paused"
                case .downloading(_, let progress):
                    name = "downloading"
                    state.bytes[id] = max(state.bytes[id] ?? 0, progress.completed)
                case .finished, .failed:
                    if case .finished = update { name = "finished" } else { name = "failed" }
                    state.total += state.bytes.removeValue(forKey: id) ?? 0
                }
                if name != "downloading" || state.updates[id]?.last != name {
                    state.updates[id, default: []].append(name)
                }
            }
        }
    }

    private let seen = Seen()
    private let task: Task<Void, Never>

    init(_ manager: AssetPackManager) {
        let stream = manager.statusUpdates
        let seen = self.seen
        task = Task { for await update in stream { seen.record(update) } }
    }

    /// The updates per pack and the bytes downloaded, once the manager's updates have ended.
    func stop() async -> ([String: [String]], Int64) {
        await task.value
        return seen.state.withLock { ($0.updates, $0.total + $0.bytes.values.reduce(0, +)) }
    }
}
