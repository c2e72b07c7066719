import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

/// One command's manager, from start to end: the manager is made (with its HTTP client), its events are
/// shown as they happen and all written before the command prints its result, the client is closed
/// whatever happens, and a pack's failure the progress already showed in full is not shown in full again.
public struct ManagerSession: Sendable {
    /// JSON lines instead of text (a failure is then also printed as an `error` line).
    public var json: Bool
    /// The app group the progress names.
    public var appGroup: FilePath
    /// Errors that end a command on purpose (an exit code), not failures to print as JSON.
    public var isExit: @Sendable (any Error) -> Bool

    public init(json: Bool, appGroup: FilePath, isExit: @escaping @Sendable (any Error) -> Bool = { _ in false }) {
        self.json = json
        self.appGroup = appGroup
        self.isExit = isExit
    }

    /// Runs `body` with the manager `make` returns, showing its events, then closes the HTTP client.
    /// - Parameters:
    ///   - make: Makes the manager; when it throws, `close` still runs.
    ///   - close: Shuts the manager's HTTP client down; runs exactly once.
    ///   - body: The command's work.
    /// - Returns: What `body` returns, and the packs whose failure the progress showed.
    /// - Throws: What `make` or `body` throws; ``ShownFailure`` instead of a pack's
    ///   `AssetPackClientError` that the progress showed already (text output only).
    public func run<T: Sendable>(
        making make: () throws -> AssetPackManager,
        closing close: () async -> Void,
        _ body: (AssetPackManager) async throws -> T
    ) async throws -> (T, shown: Set<String>) {
        let root = appGroup
        let existed = (try? await BlockingIO.shortCall { FileManager.default.fileExists(atPath: root.string) }) ?? true
        let manager: AssetPackManager
        do {
            manager = try make()
        } catch {
            await close()
            if json { Console.jsonError(error) }
            throw error
        }
        let progress = ConsoleProgress(json: json, appGroup: appGroup.string)
        progress.show(manager.conditions)
        let events = manager.events
        let printer = Task { for await event in events { progress.show(event) } }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(manager))
        } catch {
            result = .failure(error)
        }
        manager.finishStatusUpdates()
        await printer.value
        progress.flush()
        await close()
        let shown = progress.failuresShown
        if case .failure = result, !existed {  // a failed first command leaves no empty app group behind
            _ = try? await BlockingIO.shortCall { AppGroupStore(root: root).removeIfEmpty() }
        }
        if case .failure(let error) = result {
            if json, !isExit(error) { Console.jsonError(error) }
            if let shownFailure = Self.alreadyShown(error, json: json, shown: shown) { throw shownFailure }
        }
        return (try result.get(), shown)
    }

    /// A pack's client error whose failure the progress showed in full (text only: JSON lines carry it).
    static func alreadyShown(_ error: any Error, json: Bool, shown: Set<String>) -> ShownFailure? {
        guard !json, let error = error as? AssetPackClientError, let id = error.assetPackID, shown.contains(id)
        else { return nil }
        return ShownFailure(pack: id)
    }
}

/// A pack's failure that the progress lines showed already: the command's error only points at it.
public struct ShownFailure: Error, CustomStringConvertible {
    public var pack: String
    public var description: String { "\(pack) failed (above)" }
}
