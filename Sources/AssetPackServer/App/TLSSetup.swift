import AssetPackFormat
import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import SystemPackage
import X509

/// How the server speaks TLS.
public enum TLSMode: Sendable, Hashable {
    /// Plain HTTP (the default on 127.0.0.1).
    case none
    /// A certificate chain and key from PEM files.
    case files(certificate: FilePath, key: FilePath)
    /// A local CA and a server certificate made by `ba-mock` and kept in a folder of the user's
    /// (``TLSSetup/defaultFolder(environment:)``), never inside an asset folder.
    case selfSigned
}

/// TLS material ready for the server, and the CA file a client must trust (self-signed mode).
public struct TLSSetup: Sendable {
    /// The server's TLS configuration.
    public var configuration: TLSConfiguration
    /// The CA certificate to trust, in self-signed mode.
    public var caFile: FilePath?
    /// What the setup did that the user should hear of (a CA moved out of an asset folder).
    public var notes: [String] = []

    /// Where `--tls-self-signed` keeps its CA and certificates by default: `$XDG_STATE_HOME/ba-mock/tls`, else
    /// `~/.local/state/ba-mock/tls`. One CA for every asset folder, as mkcert keeps one: a phone trusts it
    /// once; and its key lives where no manifest can select it.
    public static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> FilePath {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return FilePath(state).appending("ba-mock/tls")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return FilePath(home).appending(".local/state/ba-mock/tls")
    }

    /// Loads or makes the TLS material for `mode`.
    ///
    /// In self-signed mode the CA is made once and kept; the server certificate is made again whenever it
    /// does not name exactly `names` or is about to expire. Its subject alternative names are `names` (by
    /// default `host`): an IP address entry for an address, a DNS entry for a name, as Apple's clients
    /// require. A wildcard `host` (0.0.0.0, ::) names no address a client can use: `names` must be given.
    /// - Parameters:
    ///   - mode: Where the certificate comes from.
    ///   - host: The address listened on.
    ///   - names: The names or addresses clients use (`--tls-name`); empty for `host`.
    ///   - folder: Where the self-signed CA and certificates are kept (made `0700`).
    ///   - legacyFolder: Where an older ba-mock kept them (an asset folder's `.ba-mock/tls`): a CA found there
    ///     is moved to `folder` when that has none (a phone that trusts it keeps working), and the old folder
    ///     is deleted, so that no private key stays inside an asset folder.
    ///   - assetFolder: The folder being served: `folder` must not be inside it, where a manifest could
    ///     select the keys.
    /// - Returns: `nil` for plain HTTP.
    /// - Throws: ``AssetPackServerError`` with code `.tls`, or `.invalidOption` for a wildcard host without
    ///   names.
    public static func make(
        mode: TLSMode,
        host: String,
        names: [String] = [],
        folder: FilePath,
        legacyFolder: FilePath? = nil,
        assetFolder: FilePath? = nil
    ) throws -> TLSSetup? {
        BlockingIO.checkOffPool("TLSSetup.make")
        switch mode {
        case .none:
            return nil
        case .files(let certificate, let key):
            return TLSSetup(configuration: try serverConfiguration(certificate: certificate, key: key), caFile: nil)
        case .selfSigned:
            let names = names.isEmpty ? [host] : names
            try checkSelfSigned(host: host, names: names, folder: folder, assetFolder: assetFolder)
            return try makeSelfSigned(names: names, folder: folder, legacyFolder: legacyFolder)
        }
    }

    /// Refuses a wildcard `host` that `names` do not replace, and a `folder` inside `assetFolder` (`.invalidOption`).
    private static func checkSelfSigned(
        host: String,
        names: [String],
        folder: FilePath,
        assetFolder: FilePath?
    ) throws {
        if names == [host], isWildcard(host) {
            throw AssetPackServerError(
                code: .invalidOption,
                message:
                    "--host \(host) listens on every address, but a certificate must name the one clients use. "
                    + "Fix: add --tls-name with that address or name, e.g. --tls-name 192.168.1.20 (repeatable)"
            )
        }
        if let assetFolder, isInside(folder, assetFolder) {
            throw AssetPackServerError(
                code: .invalidOption,
                message:
                    "--tls-dir \(folder) is inside the asset folder \(assetFolder), where a manifest could select "
                    + "the CA's private key and serve it. Fix: choose a folder outside it, or leave --tls-dir out "
                    + "(\(defaultFolder()))"
            )
        }
    }

    /// Loads or makes the CA and the server certificate for `names` in `folder`; throws `.tls` when that fails.
    private static func makeSelfSigned(names: [String], folder: FilePath, legacyFolder: FilePath?) throws -> TLSSetup {
        do {
            try prepareFolder(folder)
            let (caFile, caKeyFile) = (folder.appending("ca.pem"), folder.appending("ca-key.pem"))
            let notes = try legacyFolder.map { try moveLegacy($0, caFile: caFile, caKeyFile: caKeyFile) } ?? []
            if !FileManager.default.fileExists(atPath: caFile.string)
                || !FileManager.default.fileExists(atPath: caKeyFile.string)
            {
                try makeCA(certificate: caFile, key: caKeyFile)
            }
            let (leafFile, leafKeyFile) = try serverCertificate(
                names: names,
                folder: folder,
                caFile: caFile,
                caKeyFile: caKeyFile
            )
            return TLSSetup(
                configuration: try serverConfiguration(certificate: leafFile, key: leafKeyFile),
                caFile: caFile,
                notes: notes
            )
        } catch let error as AssetPackServerError {
            throw error
        } catch {
            throw AssetPackServerError(
                code: .tls,
                message: "cannot make a self-signed certificate in \(folder). Fix: delete that folder and retry",
                cause: error
            )
        }
    }

    /// Makes `folder` (`0700`) and its keys private (`0600`); throws what `FileManager` throws.
    private static func prepareFolder(_ folder: FilePath) throws {
        try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.string)
        // Keys made by hand or by an older ba-mock may be readable by others: they are private.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.string)) ?? []
        where name.hasSuffix("-key.pem") {
            try? FileManager.default.setAttributes(
                [.posixPermissions: 0o600],
                ofItemAtPath: folder.appending(name).string
            )
        }
    }

    /// The server certificate and key files for `names`, made again when not usable; throws when making fails.
    private static func serverCertificate(
        names: [String],
        folder: FilePath,
        caFile: FilePath,
        caKeyFile: FilePath
    ) throws -> (certificate: FilePath, key: FilePath) {
        let label = names.joined(separator: "+")
        let safe = String(
            label.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "+" ? $0 : "_" }
        )
        let leafFile = folder.appending("server-\(safe).pem")
        let leafKeyFile = folder.appending("server-\(safe)-key.pem")
        if try !isUsable(leafFile, names: names) || !FileManager.default.fileExists(atPath: leafKeyFile.string) {
            try makeServerCertificate(
                names: names,
                ca: caFile,
                caKey: caKeyFile,
                into: leafFile,
                key: leafKeyFile
            )
        }
        return (leafFile, leafKeyFile)
    }

    /// Whether `path` is `folder` or inside it, symlinks resolved as far as the path exists.
    static func isInside(_ path: FilePath, _ folder: FilePath) -> Bool {
        func real(_ path: FilePath) -> String {
            URL(fileURLWithPath: path.string).standardizedFileURL.resolvingSymlinksInPath().path
        }
        let (inner, outer) = (real(path), real(folder))
        return inner == outer || inner.hasBytePrefix(outer.hasSuffix("/") ? outer : outer + "/")
    }

    /// Moves a CA an older ba-mock kept inside an asset folder to `caFile` and `caKeyFile` (when those do
    /// not exist yet), then deletes the old folder with every key in it.
    /// - Returns: What was done, for the user.
    private static func moveLegacy(_ legacy: FilePath, caFile: FilePath, caKeyFile: FilePath) throws -> [String] {
        let fileManager = FileManager.default
        guard let kind = try? fileManager.attributesOfItem(atPath: legacy.string)[.type] as? FileAttributeType else {
            return []
        }
        var notes: [String] = []
        let (oldCA, oldKey) = (legacy.appending("ca.pem"), legacy.appending("ca-key.pem"))
        if kind == .typeDirectory, !fileManager.fileExists(atPath: caFile.string),
            !fileManager.fileExists(atPath: caKeyFile.string), let key = regularFileText(oldKey),
            let ca = regularFileText(oldCA)
        {
            try writePEM(key, to: caKeyFile, secret: true)
            try writePEM(ca, to: caFile, secret: false)
            notes.append(
                "TLS: moved the CA from \(legacy) to \(caFile.removingLastComponent()); clients that trust it go on"
            )
        }
        try fileManager.removeItem(atPath: legacy.string)
        notes.append("TLS: deleted \(legacy): no private key is kept inside an asset folder any more")
        return notes
    }

    /// The text of a small regular file (not a link, FIFO or device), or `nil`.
    private static func regularFileText(_ path: FilePath) -> String? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path.string),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let size = attributes[.size] as? Int, size < 1 << 20
        else { return nil }
        return try? String(contentsOfFile: path.string, encoding: .utf8)
    }

    private static func serverConfiguration(certificate: FilePath, key: FilePath) throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        let privateKey: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate.string)
        } catch {
            throw AssetPackServerError(
                code: .tls,
                message: "cannot read the certificate chain \(certificate). Fix: pass a PEM file with --tls-cert",
                cause: error
            )
        }
        do {
            privateKey = try NIOSSLPrivateKey(file: key.string, format: .pem)
        } catch {
            throw AssetPackServerError(
                code: .tls,
                message: "cannot read the private key \(key). Fix: pass an unencrypted PEM key with --tls-key",
                cause: error
            )
        }
        guard !chain.isEmpty else {
            throw AssetPackServerError(code: .tls, message: "\(certificate) holds no certificate")
        }
        return TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(privateKey)
        )
    }

    private static func makeCA(certificate: FilePath, key: FilePath) throws {
        let privateKey = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName("ba-mock local CA")
            OrganizationName("ba-mock")
        }
        let now = Date()
        let publicKey = Certificate.PublicKey(privateKey.publicKey)
        let ca = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: publicKey)
            },
            issuerPrivateKey: .init(privateKey)
        )
        try writePEM(privateKey.pemRepresentation, to: key, secret: true)
        try writePEM(try ca.serializeAsPEM().pemString, to: certificate, secret: false)
    }

    /// Whether `host` is an address that listens everywhere rather than one a client connects to.
    public static func isWildcard(_ host: String) -> Bool {
        ["0.0.0.0", "::", "[::]", "*"].contains(host)
    }

    private static func makeServerCertificate(
        names: [String],
        ca caFile: FilePath,
        caKey caKeyFile: FilePath,
        into file: FilePath,
        key keyFile: FilePath
    ) throws {
        let ca = try Certificate(pemEncoded: try String(contentsOfFile: caFile.string, encoding: .utf8))
        let caKey = try P256.Signing.PrivateKey(
            pemRepresentation: try String(contentsOfFile: caKeyFile.string, encoding: .utf8)
        )
        let privateKey = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(privateKey.publicKey)
        let name = try DistinguishedName { CommonName(names.first ?? "localhost") }
        let alternativeNames: [GeneralName] = names.map { host in
            if let address = ipAddressBytes(host) {
                .ipAddress(ASN1OctetString(contentBytes: ArraySlice(address)))
            } else {
                .dnsName(host)
            }
        }
        let now = Date()
        let leaf = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(397 * 86400),  // Apple's limit for TLS server certificates
            issuer: ca.subject,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternativeNames)
                SubjectKeyIdentifier(hash: publicKey)
            },
            issuerPrivateKey: .init(caKey)
        )
        try writePEM(privateKey.pemRepresentation, to: keyFile, secret: true)
        try writePEM(try leaf.serializeAsPEM().pemString, to: file, secret: false)
    }

    /// Whether an existing server certificate names every one of `names` and stays valid for at least a day.
    private static func isUsable(_ file: FilePath, names: [String]) throws -> Bool {
        guard let text = try? String(contentsOfFile: file.string, encoding: .utf8),
            let leaf = try? Certificate(pemEncoded: text)
        else { return false }
        guard leaf.notValidAfter > Date().addingTimeInterval(86400) else { return false }
        guard let alternatives = try? leaf.extensions.subjectAlternativeNames else { return false }
        return names.allSatisfy { host in
            alternatives.contains { name in
                switch name {
                case .dnsName(let dns): dns == host
                case .ipAddress(let bytes): ipAddressBytes(host).map { ArraySlice($0) == bytes.bytes } ?? false
                default: false
                }
            }
        }
    }

    private static func writePEM(_ text: String, to file: FilePath, secret: Bool) throws {
        let permissions: FilePermissions = secret ? [.ownerReadWrite] : [.ownerReadWrite, .groupRead, .otherRead]
        try AtomicFile.write(to: file, permissions: permissions) { fd in
            _ = try fd.writeAll(Array((text.hasSuffix("\n") ? text : text + "\n").utf8))
        }
    }

    /// The bytes of an IPv4 or IPv6 address literal, or `nil` for a DNS name.
    static func ipAddressBytes(_ host: String) -> [UInt8]? {
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
