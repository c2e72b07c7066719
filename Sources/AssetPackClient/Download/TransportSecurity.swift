import Foundation

/// Apple's rule for where packs come from: "Background Assets uses HTTPS for all downloads" (Testing asset
/// packs locally). Plain http is allowed to this machine only (a mock server on 127.0.0.1), unless the user
/// allows it; the rule is applied to the manifest's URL and to each pack's before any connection is made.
public enum TransportSecurity {
    /// Whether `host` names this machine: an IPv4 address in 127.0.0.0/8 written as four decimal numbers,
    /// `::1` (bracketed or not), or `localhost` (any case, with or without the root's trailing dot). A name
    /// that merely contains one of these (`localhost.example.com`, `127.0.0.1.nip.io`) is another machine.
    public static func isLoopback(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") && !name.hasSuffix("..") { name.removeLast() }
        if name == "localhost" || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCIIDigit) && (Int(part) ?? 256) <= 255
        }
    }

    /// Why fetching `url` breaks the rule, or `nil` when it may be fetched: https, plain http to a loopback
    /// host, or any http when `allowHTTP`.
    public static func problem(with url: URL, allowHTTP: Bool) -> String? {
        guard !allowHTTP, url.scheme?.lowercased() == "http" else { return nil }
        let host = url.host ?? ""
        guard !isLoopback(host: host) else { return nil }
        return "\(url.absoluteString) is plain http to \(host), which is not this machine: Background Assets uses "
            + "HTTPS for all downloads. Fix: serve it over https, or pass --allow-http to fetch it anyway"
    }

    /// Throws when fetching `url` breaks the rule.
    /// - Parameters:
    ///   - url: The manifest's or a pack's URL.
    ///   - allowHTTP: Whether plain http to any host is allowed.
    ///   - pack: The pack the URL is for, if any.
    /// - Throws: ``AssetPackClientError`` with code `.insecureHTTP`.
    public static func check(_ url: URL, allowHTTP: Bool, pack: String? = nil) throws {
        guard let problem = problem(with: url, allowHTTP: allowHTTP) else { return }
        var error = AssetPackClientError(code: .insecureHTTP, message: problem, assetPackID: pack)
        error.retryable = false
        throw error
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
