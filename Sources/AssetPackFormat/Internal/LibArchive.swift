import CLibArchive
import SystemPackage

// Everything that touches libarchive's C API lives in this folder; OpaquePointers never leave it.

/// libarchive's return codes, as Swift constants (the C macros are not imported as Int32 everywhere).
enum ArchiveStatus {
    static let ok: Int32 = 0  // ARCHIVE_OK
    static let eof: Int32 = 1  // ARCHIVE_EOF
    static let retry: Int32 = -10  // ARCHIVE_RETRY
    static let warn: Int32 = -20  // ARCHIVE_WARN
    static let failed: Int32 = -25  // ARCHIVE_FAILED
    static let fatal: Int32 = -30  // ARCHIVE_FATAL
}

/// File type bits of `archive_entry_filetype`.
enum ArchiveFileType {
    static let mask: UInt32 = 0o170000
    static let regular: UInt32 = 0o100000
    static let directory: UInt32 = 0o040000
    static let symlink: UInt32 = 0o120000
}

/// The libarchive error of `archive`, as a status value to attach to an ``AssetPackFormatError``.
func libArchiveStatus(_ archive: OpaquePointer, _ status: Int32) -> LibArchiveStatus {
    let text = archive_error_string(archive).map { String(cString: $0) } ?? "unknown error"
    return LibArchiveStatus(status: status, text: text, errno: archive_errno(archive))
}

/// Checks a libarchive return code: `ARCHIVE_OK` and `ARCHIVE_WARN` pass (the warning text is kept by the
/// caller if it wants it), anything else throws an `.archive` error naming `what`.
@discardableResult
func check(_ status: Int32, _ archive: OpaquePointer, _ what: @autoclosure () -> String) throws -> Int32 {
    if status == ArchiveStatus.ok || status == ArchiveStatus.warn { return status }
    let cause = libArchiveStatus(archive, status)
    throw AssetPackFormatError(code: .archive, message: "\(what()): \(cause.text)", cause: cause)
}
