import CLibArchive
import SystemPackage

// Everything that touches libarchive's C API lives in this folder; OpaquePointers never leave it.

/// libarchive's return codes, from its header.
enum ArchiveStatus {
    static let ok = ARCHIVE_OK
    static let eof = ARCHIVE_EOF
    static let retry = ARCHIVE_RETRY
    static let warn = ARCHIVE_WARN
    static let failed = ARCHIVE_FAILED
    static let fatal = ARCHIVE_FATAL
}

/// File type bits of `archive_entry_filetype`, from its header (through the shim).
enum ArchiveFileType {
    static let mask = UInt32(BA_AE_IFMT)
    static let regular = UInt32(BA_AE_IFREG)
    static let directory = UInt32(BA_AE_IFDIR)
    static let symlink = UInt32(BA_AE_IFLNK)
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
