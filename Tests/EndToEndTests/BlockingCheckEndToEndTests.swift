import AssetPackFormat
import Foundation
import NIOCore
import NIOPosix
import SystemPackage
import TestSupport
import Testing

/// Both tools, run with `BA_CHECK_BLOCKING=1`: a blocking primitive (file I/O, hashing, the app group's lock,
/// state files, a folder scan, TLS key generation) reached on Swift's cooperative pool or a NIO event loop
/// stops the process with its name. Every command a user runs, and a server that builds, rebuilds, serves over TLS and deltas, must
/// get through without one.
@Suite("No blocking call on the cooperative pool", .serialized)
struct BlockingCheckEndToEndTests {
    let mock = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")
    let checking: [String: String?] = ["BA_CHECK_BLOCKING": "1"]

    @Test func theCheckSeesATaskAndNothingElse() async throws {
        #expect(BlockingIO.isOnCooperativePool)
        #expect(try await BlockingIO.shortCall { BlockingIO.isOnCooperativePool } == false)
        #expect(try await BlockingIO.longJob { BlockingIO.isOnCooperativePool } == false)
        // NIO's event loops (the server's connections, the HTTP client's downloads) are the other threads
        // that must never block; its thread pool is where short blocking calls go.
        #expect(try await MultiThreadedEventLoopGroup.singleton.next().submit { BlockingIO.isOnEventLoop }.get())
        #expect(try await BlockingIO.shortCall { BlockingIO.isOnEventLoop } == false)
        #expect(BlockingIO.isOnEventLoop == false)
    }

    @Test func everyCommandRunsItsBlockingWorkOffThePool() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let appGroup = scratch.root.appending("AppGroup")
        let server = try RunningTool(
            mock,
            [
                "serve", folder.string, "--port", "0", "--watch-interval", "0.2", "--tls-self-signed", "--tls-dir",
                scratch.root.appending("tls").string,
            ],
            environment: checking
        )
        defer { server.interrupt() }
        let url = try #require(server.waitForFirstLine(), "\(server.stderr)")
        let ca = scratch.root.appending("tls/ca.pem").string
        func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            let result = try runTool(
                sync,
                Array(arguments.prefix(1)) + ["--server", url, "--app-group", appGroup.string, "--ca-cert", ca]
                    + arguments.dropFirst(),
                environment: checking
            )
            #expect(!result.stderr.contains("BA_CHECK_BLOCKING"), "\(arguments): \(result.stderr)")
            return result
        }
        #expect(try run(["sync", "--event", "install"]).status == 0)
        #expect(try run(["ensure", "HighResTextures"]).status == 0)
        try scratch.write("Assets/Levels/README.txt", "changed\n")
        #expect(waitFor("updated Levels: version 1 -> 2", in: server), "\(server.stderr)")
        let update = try run(["ensure", "--latest", "--delta", "Levels", "--json"])
        #expect(update.status == 0 && update.stdout.contains(#""event":"delta""#), "\(update.stdout)")
        for command in [
            ["check-updates"], ["status"], ["list"], ["verify"], ["cat", "Levels/README.txt"],
            ["url", "Levels/README.txt"], ["reconcile", "--language", "fr"], ["remove", "HighResTextures"],
        ] {
            let result = try run(command)
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        let offline = try runTool(sync, ["status", "--app-group", appGroup.string], environment: checking)
        #expect(offline.status == 0 && !offline.stderr.contains("BA_CHECK_BLOCKING"), "\(offline.stderr)")
        server.interrupt()
        #expect(!server.stderr.contains("BA_CHECK_BLOCKING"), "\(server.stderr)")
        #expect(server.process.terminationReason == .exit, "\(server.stderr)")

        // The other server commands: export (builds and deltas), validate, inspect.
        for command in [
            ["export", folder.string, "--out", scratch.root.appending("out").string],
            ["validate", folder.string],
        ] {
            let result = try runTool(mock, command, environment: checking)
            #expect(result.status == 0 && !result.stderr.contains("BA_CHECK_BLOCKING"), "\(command): \(result.stderr)")
        }
    }

    func waitFor(_ text: String, in server: RunningTool) -> Bool {
        for _ in 0..<200 {
            if server.stderr.contains(text) { return true }
            usleep(100_000)
        }
        return false
    }
}
