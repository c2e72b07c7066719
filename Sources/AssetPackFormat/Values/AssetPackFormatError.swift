import SystemPackage

/// An error from reading, validating, building or reading back an asset pack.
///
/// Shaped like NIO's `FileSystemError`: a matchable ``code``, a ``message`` that names the file, key or
/// entry and says how to fix it, and an optional underlying ``cause``.
public struct AssetPackFormatError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; tests and callers match on it.
    public enum Code: String, Sendable, Hashable {
        /// A manifest is not valid JSON (comments allowed).
        case invalidJSON
        /// A manifest is valid JSON but breaks a rule of the packaging-manifest format.
        case invalidManifest
        /// A selector path is absolute, climbs out with `..`, or resolves outside the asset folder.
        case unsafePath
        /// A file or folder named by a manifest or an option does not exist.
        case notFound
        /// Two manifests declare the same pack ID.
        case duplicatePackID
        /// A file or folder could not be read or written.
        case io
        /// libarchive refused to write or read an archive.
        case archive
        /// An archive's content does not match its index, or the index is missing or malformed.
        case corruptPack
        /// A file changed while it was being packed.
        case changedWhilePacking
        /// An option is out of range (a compression level, a thread count).
        case invalidOption
        /// A state file does not decode: damaged, or written by a version this one does not understand.
        case invalidState
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence for the user: what went wrong, where, and how to fix it.
    public var message: String
    /// The error underneath, if any (an `Errno`, a libarchive message, a decoding error).
    public var cause: (any Error & Sendable)?
    /// For `.corruptPack`: the archive breaks a rule of packs (a link, a special file, a name outside
    /// `Contents/`), which the same bytes would break again; damage in transit would not.
    public var isRuleViolation = false
    /// The manifest problem this error is, with its file, key, message and fix apart (for `validate`), when it
    /// is one.
    public var problem: ManifestProblem?

    /// Creates an error.
    public init(code: Code, message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        guard let cause, !message.contains("\(cause)") else { return message }
        return "\(message) (\(cause))"
    }
}

/// The libarchive failure behind an ``AssetPackFormatError`` with code `.archive`.
public struct LibArchiveStatus: Error, Sendable, CustomStringConvertible {
    /// The libarchive return code (`ARCHIVE_FATAL`, `ARCHIVE_FAILED`, ...).
    public var status: Int32
    /// `archive_error_string` at the time of the failure.
    public var text: String
    /// `archive_errno` at the time of the failure.
    public var errno: Int32

    public var description: String { "libarchive \(status): \(text)" }
}

extension AssetPackFormatError {
    static func io(_ what: String, _ path: FilePath, _ errno: Errno) -> Self {
        .init(code: .io, message: "cannot \(what) \(path): \(errno)", cause: errno)
    }

    static func manifest(
        _ file: String,
        key: String,
        _ problem: String,
        fix: String?,
        code: Code = .invalidManifest
    ) -> Self {
        ManifestProblem.error(file, key, problem, fix: fix, code: code).asError
    }
}
