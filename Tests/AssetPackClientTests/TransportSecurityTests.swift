import AssetPackServer
import AsyncHTTPClient
import Foundation
import NIOCore
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackClient

/// "Background Assets uses HTTPS for all downloads": plain http only to this machine, unless allowed.
@Suite("Transport security")
struct TransportSecurityTests {
    @Test(arguments: [
        ("127.0.0.1", true), ("127.1.2.3", true), ("127.255.255.255", true), ("[::1]", true), ("localhost", true),
        ("LOCALHOST.", true), ("localhost.", true), ("10.0.0.1", false), ("example.com", false),
        ("localhost.example.com", false), ("127.0.0.1.nip.io", false), ("128.0.0.1", false), ("[::2]", false),
        ("127.0.0", false), ("0x7f.0.0.1", false), ("[::ffff:127.0.0.1]", false), ("127.0.0.256", false),
    ])
    func loopbackHosts(_ host: String, _ loopback: Bool) throws {
        #expect(TransportSecurity.isLoopback(host: host) == loopback, "\(host)")
        let url = try #require(URL(string: "http://\(host):8080/manifest"))
        let problem = TransportSecurity.problem(with: url, allowHTTP: false)
        #expect((problem == nil) == loopback, "\(host): \(problem ?? "allowed")")
        #expect(TransportSecurity.problem(with: url, allowHTTP: true) == nil)
        let https = try #require(URL(string: "https://\(host):8443/manifest"))
        #expect(TransportSecurity.problem(with: https, allowHTTP: false) == nil)
    }

    @Test func theRefusalSaysWhyAndHowToAllowIt() throws {
        let url = try #require(URL(string: "HTTP://example.com/packs/Levels"))
        let problem = try #require(TransportSecurity.problem(with: url, allowHTTP: false))
        #expect(
            problem
                == "HTTP://example.com/packs/Levels is plain http to example.com, which is not this machine: "
                + "Background Assets uses HTTPS for all downloads. Fix: serve it over https, or pass --allow-http "
                + "to fetch it anyway"
        )
        let error = try #require(throws: AssetPackClientError.self) {
            try TransportSecurity.check(url, allowHTTP: false, pack: "Levels")
        }
        #expect(error.code == .insecureHTTP)
        #expect(error.assetPackID == "Levels")
    }

    /// A failed handshake is known by the error's type (NIOSSL's), not by words in its description: an
    /// error of another kind that quotes BoringSSL's text is not one.
    @Test func aTLSFailureIsKnownByItsTypeNotItsText() async throws {
        struct Quoting: Error, CustomStringConvertible {
            var description: String { "the proxy said: CERTIFICATE_VERIFY_FAILED" }
        }
        #expect(!AssetPackClientError.isTLSFailure(Quoting()))

        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let tls = try #require(
            try TLSSetup.make(mode: .selfSigned, host: "127.0.0.1", folder: scratch.root.appending("tls-home"))
        )
        let client = AssetPackManager.makeHTTPClient(connectTimeout: .seconds(5))
        defer { _ = client.shutdown() }
        try await LiveServer.with(folder: scratch.root, tls: tls) { server in
            let untrusted = await #expect(throws: (any Error).self) {
                _ = try await server.get("/manifest", client: client, timeout: .seconds(5))
            }
            let error = try #require(untrusted)
            #expect(AssetPackClientError.isTLSFailure(error), "\(error)")
            #expect(!AssetPackClientError.isConnectFailure(error), "\(error)")
        }
    }
}
