import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

@Suite("TLS")
struct TLSTests {
    @Test func selfSignedCertificateIsTrustedThroughItsCA() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let tls = try #require(
            try TLSSetup.make(mode: .selfSigned, host: "127.0.0.1", folder: scratch.root.appending("tls-home"))
        )
        let ca = try #require(tls.caFile)
        #expect(FileManager.default.fileExists(atPath: ca.string))

        try await LiveServer.with(folder: scratch.root, tls: tls) { server in
            #expect(server.url.hasPrefix("https://127.0.0.1:"))
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(ca.string)
            let trusting = HTTPClient(configuration: .init(tlsConfiguration: configuration))
            let fetched = try await server.get("/manifest", client: trusting)
            #expect(fetched.status == 200)
            let manifest = try JSONDecoder().decode(DownloadManifest.self, from: fetched.body)
            #expect(manifest.assetPacks.first?.url.hasPrefix("https://127.0.0.1:") == true)
            let pack = try await server.get("/assets/Tutorial", client: trusting)
            #expect(FileDigest.sha256(of: pack.body) == manifest.assetPacks.first { $0.id == "Tutorial" }?.sha256)
            try await trusting.shutdown()

            // A client that does not trust the CA is refused (AsyncHTTPClient retries a failed handshake
            // until the deadline, so the deadline is short).
            await #expect(throws: (any Error).self) { _ = try await server.get("/manifest", timeout: .seconds(2)) }
        }

        // The CA is made once; a second setup reuses it.
        let before = try scratch.read(ca)
        let again = try #require(
            try TLSSetup.make(mode: .selfSigned, host: "127.0.0.1", folder: scratch.root.appending("tls-home"))
        )
        #expect(try scratch.read(try #require(again.caFile)) == before)
    }

    @Test func aWildcardHostNeedsTheNamesClientsUse() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let unnamed = #expect(throws: AssetPackServerError.self) {
            try TLSSetup.make(mode: .selfSigned, host: "0.0.0.0", folder: scratch.root.appending("tls-home"))
        }
        #expect(unnamed?.message.contains("--tls-name") == true)
        // Named for the address and a DNS name clients use: both verify.
        let tls = try #require(
            try TLSSetup.make(
                mode: .selfSigned,
                host: "0.0.0.0",
                names: ["127.0.0.1", "localhost"],
                folder: scratch.root.appending("tls-home")
            )
        )
        try await LiveServer.with(folder: scratch.root, tls: tls) { server in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(try #require(tls.caFile).string)
            let trusting = HTTPClient(configuration: .init(tlsConfiguration: configuration))
            #expect(try await server.get("/manifest", client: trusting).status == 200)
            let byName = server.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            let response = try await trusting.execute(
                HTTPClientRequest(url: byName + "/manifest"),
                timeout: .seconds(10)
            )
            #expect(response.status.code == 200)
            try await trusting.shutdown()
        }
    }

    /// The CA's key once lived in the asset folder's state, where a manifest could select it; it lives in a
    /// folder of the user's now, and an old one is moved there (phones that trust it keep working) and
    /// deleted from the asset folder.
    @Test func theCAKeyLivesOutsideTheAssetFolderAndAnOldOneIsMovedOut() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let legacy = AssetFolder(root: scratch.root).stateFolder.appending("tls")
        let old = try #require(
            try TLSSetup.make(mode: .selfSigned, host: "127.0.0.1", folder: legacy)
        )
        let oldCA = try scratch.read(try #require(old.caFile))
        let home = scratch.root.appending("home/tls")
        let moved = try #require(
            try TLSSetup.make(mode: .selfSigned, host: "127.0.0.1", folder: home, legacyFolder: legacy)
        )
        #expect(moved.caFile == home.appending("ca.pem"))
        #expect(try scratch.read(home.appending("ca.pem")) == oldCA)
        #expect(!FileManager.default.fileExists(atPath: legacy.string))
        #expect(moved.notes.count == 2, "\(moved.notes)")
        let mode = try FileManager.default.attributesOfItem(atPath: home.string)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        let keyMode =
            try FileManager.default.attributesOfItem(atPath: home.appending("ca-key.pem").string)[
                .posixPermissions
            ] as? Int
        #expect(keyMode == 0o600)
        #expect(TLSSetup.defaultFolder(environment: ["HOME": "/home/u"]) == "/home/u/.local/state/ba-mock/tls")
        #expect(TLSSetup.defaultFolder(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/ba-mock/tls")
    }

    /// A --tls-dir inside the asset folder put the CA's key where a manifest selects it (found by an attack
    /// run on the fix above); it is refused, before anything is written there.
    @Test(arguments: ["Levels/tls", ".ba-mock/tls", "tls"])
    func aTLSFolderInsideTheAssetFolderIsRefused(_ inside: String) throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let error = #expect(throws: AssetPackServerError.self) {
            try TLSSetup.make(
                mode: .selfSigned,
                host: "127.0.0.1",
                folder: scratch.root.appending(inside),
                assetFolder: scratch.root
            )
        }
        #expect(error?.code == .invalidOption)
        #expect(error?.message.contains("is inside the asset folder") == true, "\(error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: scratch.root.appending(inside).string))
    }

    @Test func missingCertificateFilesAreNamed() throws {
        let error = #expect(throws: AssetPackServerError.self) {
            try TLSSetup.make(
                mode: .files(certificate: "/nonexistent/cert.pem", key: "/nonexistent/key.pem"),
                host: "localhost",
                folder: "/nonexistent/tls"
            )
        }
        #expect(error?.code == .tls)
        #expect(error?.message.contains("/nonexistent/cert.pem") == true)
    }

    /// On a wildcard address the URL printed names the certificate's first name (bracketed when IPv6), not
    /// the address bound; elsewhere it is the URL listened at.
    @Test func thePrintedURLNamesWhatClientsUse() {
        let url = ServerConfiguration.publicURL
        #expect(url("https://0.0.0.0:8443", "0.0.0.0", "mac.local") == "https://mac.local:8443")
        #expect(url("https://[::]:8443", "::", "fd00::5") == "https://[fd00::5]:8443")
        #expect(url("https://[::]:8443", "[::]", "mac.local") == "https://mac.local:8443")
        #expect(url("https://0.0.0.0:8443", "0.0.0.0", nil) == "https://0.0.0.0:8443")
        #expect(url("http://127.0.0.1:8443", "127.0.0.1", "mac.local") == "http://127.0.0.1:8443")
    }

    /// `--pack-version` and `--fault …,pack=` name packs being served: an unknown one is refused with the
    /// option, the ID and the packs there are.
    @Test func unknownPackIDsOnTheCommandLineAreRefused() throws {
        #expect(throws: Never.self) {
            try NamedPacks.check(pins: ["Levels"], faults: [], known: ["Levels", "Tutorial"])
        }
        let pin = #expect(throws: AssetPackServerError.self) {
            try NamedPacks.check(pins: ["Levls"], faults: [], known: ["Levels", "Tutorial"])
        }
        #expect(
            pin?.message
                == "--pack-version Levls=…: there is no pack Levls served here (did you mean Levels? packs: Levels, Tutorial)"
        )
        let fault = #expect(throws: AssetPackServerError.self) {
            try NamedPacks.check(pins: [], faults: ["Nope"], known: ["Levels"])
        }
        #expect(fault?.message == "--fault …,pack=Nope: there is no pack Nope served here (packs: Levels)")
        #expect(fault?.code == .invalidOption)
    }
}
