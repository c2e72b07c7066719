import AssetPackCLI
import AssetPackClient
import AssetPackServer
import Foundation
import Synchronization
import SystemPackage
import TestSupport
import Testing

/// A command's manager from start to end (what `ba-sync`'s commands run through).
@Suite("One command's manager session")
struct ManagerSessionTests {
    /// Counts how often the HTTP client was closed.
    final class Closes: Sendable {
        let count = Mutex(0)
        func close() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    struct Refused: Error {}

    func manager(_ appGroup: FilePath, server: String? = nil) throws -> AssetPackManager {
        try AssetPackManager(
            configuration: .init(
                server: server.flatMap(URL.init(string:)),
                appGroup: appGroup,
                retryPolicy: RetryPolicy(retries: 0)
            )
        )
    }

    @Test func theClientIsClosedOnceWhateverHappens() async throws {
        let scratch = try Scratch()
        let session = ManagerSession(json: false, appGroup: scratch.root)
        // The manager cannot be made: the client made for it is closed all the same.
        let unmade = Closes()
        await #expect(throws: Refused.self) {
            _ = try await session.run(making: { throw Refused() }, closing: { unmade.close() }) { _ in 1 }
        }
        #expect(unmade.value == 1)
        // The work fails.
        let failed = Closes()
        await #expect(throws: Refused.self) {
            _ = try await session.run(making: { try manager(scratch.root) }, closing: { failed.close() }) {
                _ -> Int in throw Refused()
            }
        }
        #expect(failed.value == 1)
        // The work succeeds: its result comes back, with no failure shown.
        let succeeded = Closes()
        let (value, shown) = try await session.run(
            making: { try manager(scratch.root) },
            closing: { succeeded.close() }
        ) { manager in await manager.localStatus(ofAssetPackWithID: "Levels").rawValue }
        #expect(value == 0 && shown.isEmpty && succeeded.value == 1)
    }

    /// A pack whose failure the progress showed in full is pointed at, not shown again, in text; JSON lines
    /// carry the error itself.
    @Test func aFailureTheProgressShowedIsNotShownAgain() async throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let faults = FaultPlan(rules: [try FaultRule(parsing: "status=404,pack=Levels")], seed: 1)
        try await LiveServer.with(folder: folder, faults: faults) { server in
            for json in [false, true] {
                let appGroup = scratch.root.appending(json ? "json" : "text")
                let session = ManagerSession(json: json, appGroup: appGroup)
                var thrown: (any Error)?
                do {
                    _ = try await session.run(
                        making: { try manager(appGroup, server: server.url) },
                        closing: {}
                    ) { manager in
                        do {
                            try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["Levels"])
                        } catch let error as AssetPackManager.LocalAvailabilityError {
                            throw try #require(error.failures.values.first)
                        }
                    }
                } catch {
                    thrown = error
                }
                if json {
                    let error = try #require(thrown as? AssetPackClientError)
                    #expect(error.assetPackID == "Levels")
                } else {
                    let error = try #require(thrown as? ShownFailure, "\(String(describing: thrown))")
                    #expect(error.description == "Levels failed (above)")
                }
            }
        }
    }
}
