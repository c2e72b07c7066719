import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// An error of the client: a pack or file that is not there, a download that failed, an install refused.
///
/// The codes follow Apple's `ManagedBackgroundAssetsError` where one exists (`assetPackNotFound`,
/// `fileNotFound`); the message names the pack, the URL or path, the cause, and what was kept.
public struct AssetPackClientError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable {
        /// No pack with that ID on the server (Apple's `assetPackNotFound(withID:)`).
        case assetPackNotFound
        /// No file at that path in the merged namespace (Apple's `fileNotFound(at:)`).
        case fileNotFound
        /// The server no longer lists the pack; it cannot be downloaded again.
        case obsolete
        /// The server could not be reached, or the connection failed.
        case network
        /// The server answered with an unexpected HTTP status.
        case httpStatus
        /// The download's size differs from the manifest's `downloadSize`.
        case sizeMismatch
        /// The download's SHA-256 differs from the manifest's.
        case digestMismatch
        /// The download manifest is invalid.
        case badManifest
        /// The pack archive is invalid or hostile; nothing of it was installed.
        case corruptPack
        /// A file in the app group could not be read or written.
        case io
        /// A path given to a read is absolute or climbs out with `..`.
        case invalidPath
        /// Verification found installed files that differ from the pack's index.
        case verificationFailed
        /// Another process held the app group's lock for longer than the lock timeout.
        case lockTimeout
        /// A language given is not a BCP-47 tag of language, script and region.
        case invalidLanguage
        /// A path is held by several installed packs and the collision rule is `fail`.
        case pathCollision
        /// A URL is plain http to a host other than this machine, and plain http was not allowed.
        case insecureHTTP
        /// A first install would go over a size limit of the app's Info.plist (Apple's
        /// `BAErrorCode.downloadWouldExceedAllowance`).
        case downloadWouldExceedAllowance
        /// A first install would download from a host the Info.plist's `BADownloadDomainAllowList` does not
        /// allow (Apple's `BAErrorCode.sessionDownloadDisallowedByDomain`).
        case downloadDisallowedByDomain
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence for the user.
    public var message: String
    /// The pack concerned, if any.
    public var assetPackID: String?
    /// The error underneath, if any.
    public var cause: (any Error & Sendable)?
    /// The HTTP status the server answered, for `.httpStatus` errors.
    public var httpStatus: Int?
    /// The namespace path, for `.fileNotFound` (Apple's `fileNotFound(at:)`).
    public var path: FilePath?
    /// How long the server asked to wait (`Retry-After`), if it did.
    var retryAfter: Duration?
    /// Whether a network failure is worth retrying: a server that refuses connections before anything was
    /// received is down or the URL is wrong, and retrying would only make the user wait.
    var retryable = true
    /// Set on the error that tells the user the disk is full, what was removed and the fix, so that a caller
    /// further up passes it on instead of wrapping it again (a flag, not a match on its text).
    var saysDiskFull = false

    /// Creates an error.
    public init(code: Code, message: String, assetPackID: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.assetPackID = assetPackID
        self.cause = cause
    }

    public var description: String {
        guard let cause else { return message }
        // A system error reads as its errno's text ("Connection refused"), not as NIO renders it.
        let text =
            (cause as? IOError).map { String(cString: strerror($0.errnoCode)) }
            ?? (cause as? URLError).map { "URLError \($0.code.rawValue)" } ?? "\(cause)"
        return message.contains(text) ? message : "\(message) (\(text))"
    }

    /// What went wrong in a few words, for a line that says a download is tried again: `status 503`,
    /// `stalled for 30 s at byte 1200`, `digest mismatch`.
    public var reason: String {
        if let shortReason { return shortReason }
        switch code {
        case .httpStatus: return httpStatus.map { "status \($0)" } ?? "unexpected answer"
        case .sizeMismatch: return "size mismatch"
        case .digestMismatch: return "digest mismatch"
        case .corruptPack: return "damaged archive"
        default: return code.rawValue
        }
    }

    /// A few words set where the error is made, when the code alone says too little.
    var shortReason: String?

    /// Whether the bytes received were wrong (size, digest, or an archive that does not extract): the
    /// download starts over rather than resuming.
    var isIntegrityFailure: Bool { code == .sizeMismatch || code == .digestMismatch || code == .corruptPack }

    /// Whether `error` is a connection that could not be made (refused, unreachable, timed out connecting).
    static func isConnectFailure(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError, error == .connectTimeout { return true }
        if let error = error as? IOError {
            return [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN].contains(error.errnoCode)
        }
        if error is NIOConnectionError { return true }
        return false
    }

    /// Whether `error` is a TLS handshake that failed (an untrusted or mismatched certificate, most often):
    /// an error of NIOSSL's types, never one whose text merely mentions TLS.
    static func isTLSFailure(_ error: any Error) -> Bool {
        error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError
    }

    /// Whether a TLS failure comes from a server that does not speak TLS (an https URL to plain HTTP).
    static func isPlainHTTP(_ error: any Error) -> Bool {
        "\(error)".contains("WRONG_VERSION_NUMBER")
    }

    /// The advice for a TLS failure.
    static let tlsFix =
        "Fix: trust the server's CA with --ca-cert FILE (`ba-mock serve --tls-self-signed` prints the file), "
        + "and use the name or address its certificate holds (--tls-name)"

    /// Whether `error` comes from a full disk, however deep in the chain of causes.
    package static func isDiskFull(_ error: any Error) -> Bool {
        if let errno = error as? Errno { return errno == .noSpace }
        if let status = error as? LibArchiveStatus { return status.errno == Errno.noSpace.rawValue }
        if let error = error as? AssetPackFormatError { return error.cause.map(isDiskFull) ?? false }
        if let error = error as? AssetPackClientError { return error.cause.map(isDiskFull) ?? false }
        // FileManager's errors carry the system's in their underlying error.
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        return underlying?.domain == NSPOSIXErrorDomain && underlying?.code == Int(ENOSPC)
    }

    /// Whether `error` says a file is not there (a missing installed file, as opposed to an unreadable one).
    static func isNotFound(_ error: any Error) -> Bool {
        let cause = (error as? AssetPackFormatError)?.cause ?? (error as? AssetPackClientError)?.cause
        return (cause as? Errno ?? error as? Errno) == .noSuchFileOrDirectory
    }

    static func network(
        _ message: String,
        reason: String,
        pack: AssetPack,
        cause: (any Error & Sendable)? = nil
    ) -> Self {
        var error = Self(code: .network, message: message, assetPackID: pack.id, cause: cause)
        error.shortReason = reason
        return error
    }

    static func invalidLanguage(_ text: String, _ problem: LanguageTagError) -> Self {
        AssetPackClientError(
            code: .invalidLanguage,
            message: "the language \"\(text)\" \(problem). Fix: give a tag such as fr, pt-BR or zh-Hant-TW"
        )
    }

    /// No pack with this ID at `server` (Apple's `assetPackNotFound(withID:)`); `near`, the listed ID it was
    /// perhaps meant to be (another case, a letter or two off).
    public static func assetPackNotFound(withID id: String, server: String, near: String? = nil) -> Self {
        let guess = near.map { " (did you mean \"\(AssetPackID.printable($0))\"?)" } ?? ""
        return .init(
            code: .assetPackNotFound,
            message:
                "no asset pack \"\(AssetPackID.printable(id))\" at \(server)\(guess). Fix: `ba-sync list` shows the packs",
            assetPackID: id
        )
    }

    /// Pack `id` is not installed in the app group at `root` (what the tool says for Apple's
    /// `assetPackNotFound(withID:)` from `remove(assetPackWithID:)`).
    public static func notInstalled(_ id: String, in root: FilePath) -> Self {
        .init(code: .assetPackNotFound, message: "pack \(id) is not installed in \(root)", assetPackID: id)
    }

    /// A file in the app group could not be read or written: "cannot \(what) \(path): \(error)".
    public static func io(_ what: String, _ path: FilePath, _ error: any Error & Sendable) -> Self {
        .init(code: .io, message: "cannot \(what) \(path): \(error)", cause: error)
    }
}
