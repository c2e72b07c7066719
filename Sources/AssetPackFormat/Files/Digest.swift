import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension Sequence where Element == UInt8 {
    /// Lower-case hexadecimal, as digests are written in manifests and indexes.
    public var hexString: String {
        var out: [UInt8] = []
        out.reserveCapacity(underestimatedCount * 2)
        appendHex(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `hex` is exactly the lower-case hexadecimal of the bytes, compared without building it (a
    /// check per installed file).
    func matchesHex(_ hex: String) -> Bool {
        var digits = hex.utf8.makeIterator()
        for byte in self {
            guard digits.next() == hexDigits[Int(byte >> 4)], digits.next() == hexDigits[Int(byte & 0x0F)] else {
                return false
            }
        }
        return digits.next() == nil
    }

    /// Appends the lower-case hexadecimal of the bytes to `out`.
    func appendHex(to out: inout [UInt8]) {
        for byte in self {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
    }
}

private let hexDigits = Array("0123456789abcdef".utf8)

/// SHA-256 helpers shared by the server and the client.
public enum FileDigest {
    /// The lower-case hex SHA-256 of a regular file (never read through a symlink), in 1 MiB chunks.
    /// - Parameter path: The file to hash.
    /// - Returns: 64 hex characters.
    /// - Throws: ``AssetPackFormatError`` with code `.io` when the file cannot be read.
    public static func sha256(of path: FilePath) throws -> String {
        BlockingIO.checkOffPool("FileDigest.sha256")
        do {
            let fd = try openRegular(path)
            return try fd.closeAfter { try hasher(of: fd).finalize().hexString }
        } catch let errno as Errno {
            throw AssetPackFormatError.io("hash", path, errno)
        }
    }

    /// The SHA-256 state after the first `length` bytes of an open file (all of it by default), so that a
    /// resumed download continues the hash of the bytes it already has.
    /// - Throws: `Errno` when the file cannot be read.
    public static func hasher(of fd: FileDescriptor, upTo length: Int64 = .max) throws -> SHA256 {
        BlockingIO.checkOffPool("FileDigest.hasher")
        var hasher = SHA256()
        try fd.forEachChunk(upTo: length) { hasher.update(bufferPointer: $0) }
        return hasher
    }

    /// Copies a regular file to a new file (never following a symlink at `source`, never replacing anything
    /// at `target`), hashing it on the way: one read of the bytes for both.
    /// - Returns: The bytes copied and their lower-case hex SHA-256.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func copy(_ source: FilePath, to target: FilePath) throws -> (size: Int64, sha256: String) {
        try withParents(source, target) { try copy($0, in: $1, to: $2, $3, shownAs: source) }
    }

    /// Gives `target` the bytes of the regular file at `source` without copying them: a hard link (never
    /// following a symlink at `source`, never replacing anything at `target`), then hashes what `target`
    /// holds. Where the file system cannot link (another device, too many links, no links at all) it copies,
    /// hashing on the way.
    /// - Returns: The file's size and lower-case hex SHA-256.
    /// - Throws: ``AssetPackFormatError`` with code `.io`, also when `source` is not a regular file.
    public static func link(_ source: FilePath, to target: FilePath) throws -> (size: Int64, sha256: String) {
        try withParents(source, target) { try link($0, in: $1, to: $2, $3, shownAs: source) }
    }

    /// ``link(_:to:)`` relative to folder descriptors: the file `name` of the folder `source` becomes the file
    /// `targetName` of the folder `target`. Neither name is resolved through anything but its own folder, so
    /// a symlink planted in place of a folder on the way cannot redirect the link (open the folders with
    /// `FileDescriptor.openFolder(_:creating:)`); a symlink at `name` is linked as itself, then refused.
    /// - Parameter path: The source as the user knows it, for messages.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func link(
        _ name: String,
        in source: FileDescriptor,
        to target: FileDescriptor,
        _ targetName: String,
        shownAs path: FilePath
    ) throws -> (size: Int64, sha256: String) {
        BlockingIO.checkOffPool("FileDigest.link")
        guard linkat(source.rawValue, name, target.rawValue, targetName, 0) == 0 else {
            let failure = Errno(rawValue: errno)
            switch failure {
            case .improperLink, .tooManyLinks, .notPermitted, .notSupported:
                return try copy(name, in: source, to: target, targetName, shownAs: path)
            default: throw AssetPackFormatError.io("link", path, failure)
            }
        }
        do {
            let fd = try openRegular(targetName, in: target)
            return try fd.closeAfter {
                var hasher = SHA256()
                let size = try fd.forEachChunk { hasher.update(bufferPointer: $0) }
                return (size, hasher.finalize().hexString)
            }
        } catch let errno as Errno {
            throw AssetPackFormatError.io("hash", path, errno)
        }
    }

    /// ``copy(_:to:)`` relative to folder descriptors, as ``link(_:in:to:_:shownAs:)`` links.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func copy(
        _ name: String,
        in source: FileDescriptor,
        to target: FileDescriptor,
        _ targetName: String,
        shownAs path: FilePath
    ) throws -> (size: Int64, sha256: String) {
        BlockingIO.checkOffPool("FileDigest.copy")
        let input: FileDescriptor
        do {
            input = try openRegular(name, in: source)
        } catch let errno as Errno {
            throw AssetPackFormatError.io("open", path, errno)
        }
        return try input.closeAfter {
            let raw = openat(target.rawValue, targetName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard raw >= 0 else { throw AssetPackFormatError.io("create a copy of", path, Errno(rawValue: errno)) }
            let output = FileDescriptor(rawValue: raw)
            return try output.closeAfter {
                var hasher = SHA256()
                var size: Int64 = 0
                do {
                    try input.forEachChunk { bytes in
                        hasher.update(bufferPointer: bytes)
                        _ = try output.writeAll(bytes)
                        size += Int64(bytes.count)
                    }
                } catch let errno as Errno {
                    throw AssetPackFormatError.io("copy", path, errno)
                }
                return (size, hasher.finalize().hexString)
            }
        }
    }

    /// Runs `body` with the names and opened parent folders of two paths.
    private static func withParents<T>(
        _ source: FilePath,
        _ target: FilePath,
        _ body: (String, FileDescriptor, FileDescriptor, String) throws -> T
    ) throws -> T {
        func parent(_ path: FilePath) throws -> FileDescriptor {
            let folder = path.removingLastComponent()
            do {
                return try FileDescriptor.openFolder(folder.isEmpty ? "." : folder)
            } catch {
                throw AssetPackFormatError.io("open the folder of", path, error)
            }
        }
        let sourceFolder = try parent(source)
        return try sourceFolder.closeAfter {
            let targetFolder = try parent(target)
            return try targetFolder.closeAfter {
                try body(
                    source.lastComponent?.string ?? "",
                    sourceFolder,
                    targetFolder,
                    target.lastComponent?.string ?? ""
                )
            }
        }
    }

    /// Opens a regular file to read, never through a symlink at `path`; anything else fails (`ELOOP` for a
    /// symlink, `EINVAL` for the rest) rather than blocking (a FIFO put in a file's place would block an open
    /// forever) or reading a device.
    /// - Throws: `Errno`.
    static func openRegular(_ path: FilePath) throws -> FileDescriptor {
        try openRegular(path.string, in: FileDescriptor(rawValue: AT_FDCWD))
    }

    /// ``openRegular(_:)`` of `name` relative to the folder `folder`.
    static func openRegular(_ name: String, in folder: FileDescriptor) throws -> FileDescriptor {
        BlockingIO.checkOffPool("FileDigest.openRegular")
        let (fd, info) = try FileDescriptor.openWithoutWaiting(FilePath(name), in: folder, followingSymlink: false)
        guard info.st_mode & S_IFMT == S_IFREG else {
            try? fd.close()
            throw Errno.invalidArgument
        }
        return fd
    }

    /// The lower-case hex SHA-256 of some bytes.
    public static func sha256(of bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).hexString
    }

    /// Two digests as a message shows them: their first `digits`, or when they differ, as many more as it
    /// takes to tell them apart (a digest changed past its 12th digit must not read as the one it is
    /// compared to).
    public static func shown(_ first: String, _ second: String, digits: Int = 12) -> (String, String) {
        let common = zip(first.utf8, second.utf8).prefix { $0 == $1 }.count
        let count = first == second ? digits : max(digits, common + 1)
        return (String(first.prefix(count)), String(second.prefix(count)))
    }
}
