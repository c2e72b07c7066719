import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// A download kept in a file so that a later run resumes it: `.ba-sync/downloads/<id>.partial`, beside a
/// description (`<id>.partial.json`) of the archive it holds, so that a later run never splices two
/// versions. Every method blocks (file I/O).
struct PartialDownload: Sendable {
    let store: AppGroupStore
    let pack: AssetPack

    /// What a partial file was downloading.
    private struct Description: Codable, Sendable {
        /// The archive's digest, or its identity without one (URL, version, size).
        var sha256: String
        var downloadSize: Int64
        var url: String
    }

    var file: FilePath { store.downloadsFolder.appending("\(pack.id).partial") }
    private var descriptionFile: StateFile<Description> {
        StateFile(store.downloadsFolder.appending("\(pack.id).partial.json"))
    }

    /// Whether a partial download of this very archive is on disk, left by an earlier run (a regular file: a
    /// symlink planted in its place is no partial download).
    var exists: Bool {
        var status = stat()
        return describesThisArchive && lstat(file.string, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
            && status.st_size > 0
    }

    private var describesThisArchive: Bool {
        guard let description = try? descriptionFile.load() else { return false }
        return description.sha256 == pack.archiveIdentity && description.downloadSize == pack.downloadSize
    }

    /// Keeps the partial file only if it is of this very archive, describes it, and returns how many of its
    /// bytes can be kept (0 for a new download; a file longer than the archive starts over).
    /// - Throws: ``AssetPackClientError`` with code `.io`.
    func prepare() throws -> Int64 {
        if !describesThisArchive {
            discard()
            do {
                try descriptionFile.save(
                    Description(
                        sha256: pack.archiveIdentity,
                        downloadSize: pack.downloadSize,
                        url: pack.url.absoluteString
                    )
                )
            } catch let error as AssetPackFormatError {
                throw AssetPackClientError(code: .io, message: error.message, assetPackID: pack.id, cause: error)
            }
        }
        var status = stat()
        guard lstat(file.string, &status) == 0 else { return 0 }
        guard status.st_mode & S_IFMT == S_IFREG else {
            // Something planted in its place (a symlink to a file elsewhere would be appended to): removed,
            // never written through; the download starts over.
            _ = unlink(file.string)
            return 0
        }
        let size = Int64(status.st_size)
        return size > pack.downloadSize ? 0 : size  // a longer file starts over (`open` truncates it)
    }

    /// Opens the partial file for appending after its first `offset` bytes.
    /// - Throws: ``AssetPackClientError`` with code `.io`.
    func open(keeping offset: Int64) throws -> FileDescriptor {
        // Relative to the downloads folder opened without following links, and never through a link at the
        // file itself; a FIFO in its place fails the regular-file check instead of blocking the open.
        let folder = try store.openFolder(".ba-sync/downloads", creating: true)
        defer { try? folder.close() }
        do {
            let raw = openat(
                folder.rawValue,
                "\(pack.id).partial",
                O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                0o644
            )
            guard raw >= 0 else { throw Errno(rawValue: errno) }
            let fd = FileDescriptor(rawValue: raw)
            var info = stat()
            guard fstat(raw, &info) == 0, info.st_mode & S_IFMT == S_IFREG, fcntl(raw, F_SETFL, 0) == 0 else {
                try? fd.close()
                throw Errno.invalidArgument
            }
            if ftruncate(fd.rawValue, off_t(offset)) != 0 {
                let failure = Errno(rawValue: errno)
                try? fd.close()
                throw failure
            }
            _ = try fd.seek(offset: offset, from: .start)
            return fd
        } catch {
            throw AssetPackClientError.io("open", file, error)
        }
    }

    /// Removes the partial file and its description.
    func discard() { Self.discard(pack.id, in: store) }

    /// Removes pack `id`'s partial file and its description, whatever archive they were of: once a version is
    /// installed, or the pack removed, none is of use (one of another version is never resumed, and held its
    /// bytes for good).
    /// Relative to the downloads folder opened without following links: a `.ba-sync/downloads` planted as a
    /// symlink leads nowhere (this runs after every install, and on remove).
    static func discard(_ id: String, in store: AppGroupStore) {
        guard let folder = try? store.openFolder(".ba-sync/downloads", creating: false) else { return }
        _ = unlinkat(folder.rawValue, "\(id).partial", 0)
        _ = unlinkat(folder.rawValue, "\(id).partial.json", 0)
        try? folder.close()
    }
}
