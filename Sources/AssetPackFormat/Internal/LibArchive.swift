import CLibArchive
import Glibc
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
    /// Anything else (a device, FIFO or socket), as Apple Archive entries report them.
    static let special = UInt32(BA_AE_IFMT)
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

/// Checks the return code of a write (a header, data, the end of an entry): anything but `ARCHIVE_OK` is a
/// failure. libarchive returns `ARCHIVE_WARN` when `write(2)` wrote less than asked (a full disk), and
/// accepting it would keep a file with holes. (Extraction does not use libarchive's disk writer: see
/// ``DiskWriter``.)
func checkWrite(
    _ status: Int,
    _ archive: OpaquePointer,
    _ what: @autoclosure () -> String,
    code: AssetPackFormatError.Code = .io
) throws {
    guard status != Int(ArchiveStatus.ok) else { return }
    let cause = libArchiveStatus(archive, Int32(clamping: status))
    throw AssetPackFormatError(code: code, message: "\(what()): \(cause.text)", cause: cause)
}

/// Runs libarchive work with the calling thread's locale set to `C.UTF-8`.
///
/// libarchive converts entry names through the C library's current locale, and a Swift process runs in the
/// "C" locale (ASCII): any non-ASCII name failed to convert, and libarchive 3.6's pax writer then read a NULL
/// name (a crash in `archive_write_header` on `Über/b.txt`). With a UTF-8 locale on the thread (not the
/// process), names stay the UTF-8 bytes they are, from the asset folder to the app group.
func withUTF8Locale<T>(_ body: () throws -> T) rethrows -> T {
    guard let locale = utf8Locale else { return try body() }
    let previous = uselocale(locale)
    defer { uselocale(previous) }
    return try body()
}

/// Runs libarchive reads with the calling thread's locale set to "C", whatever the process set: names stored
/// as UTF-8 then come through as the bytes stored (with a warning), not converted and normalized to NFC as a
/// UTF-8 locale would (see ``ArchiveReader/next()``).
func withCLocale<T>(_ body: () throws -> T) rethrows -> T {
    guard let locale = cLocale else { return try body() }
    let previous = uselocale(locale)
    defer { uselocale(previous) }
    return try body()
}

/// The "C" locale, made once.
nonisolated(unsafe) private let cLocale: locale_t? = newlocale(LC_CTYPE_MASK, "C", nil)

/// `C.UTF-8` (built into glibc 2.35 and later), made once.
nonisolated(unsafe) private let utf8Locale: locale_t? = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil)
