import CLinux
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Writes the regular files of an extraction under one destination folder, each relative to a descriptor of
/// a folder the writer made itself: files with `openat(O_CREAT | O_EXCL | O_NOFOLLOW)` (never through a
/// symlink, never over anything), folders with `mkdirat` and opened `O_DIRECTORY | O_NOFOLLOW`, so that a
/// symlink put anywhere on the way is refused, with no window between a check and an open. Three system
/// calls a file (open, write, close) where libarchive's secure disk writer spent about twenty checking each
/// component of an absolute path (8 opens, 7 stats, 2 umasks a file: 15% of `ensure`'s time at 100 000
/// files). Entry names are validated by the caller (relative, normalized, no `..`).
final class DiskWriter {
    private let root: FilePath
    private let rootFolder: FileDescriptor
    /// Folders made and opened, by path relative to the root, compared as bytes (`Café` spelled two ways is
    /// two folders); a few at a time: archives list a folder's files together.
    private var folders: [PathKey: FileDescriptor] = [:]

    /// Opens the destination, which must be a folder and not a symlink.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    init(root: FilePath) throws {
        self.root = root
        do {
            rootFolder = try FileDescriptor.open(root, .readOnly, options: [.directory, .noFollow, .closeOnExec])
        } catch let errno as Errno {
            throw AssetPackFormatError.io("open", root, errno)
        }
    }

    deinit {
        for fd in folders.values { try? fd.close() }
        try? rootFolder.close()
    }

    /// Creates the file at `relative` (which must not exist) and fills it from `fill`, which is handed a
    /// function that appends bytes; a short or failed write is an error (`ENOSPC` as its cause).
    /// - Throws: ``AssetPackFormatError`` with code `.io`, or what `fill` throws.
    func writeFile(at relative: String, _ fill: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        let (folderPath, name) = PackPath.split(relative)
        let folder = try self.folder(folderPath)
        let raw = openat(folder.rawValue, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard raw >= 0 else {
            throw AssetPackFormatError.io("create", root.appending(relative), Errno(rawValue: errno))
        }
        let file = FileDescriptor(rawValue: raw)
        var writeback = Writeback()
        do {
            try fill { bytes in
                do {
                    _ = try file.writeAll(bytes)
                } catch let errno as Errno {
                    throw AssetPackFormatError.io("write", root.appending(relative), errno)
                }
                if let run = writeback.wrote(bytes.count) { Self.startWriteback(file, run) }
            }
            if let tail = writeback.finish() { Self.startWriteback(file, tail) }
        } catch {
            try? file.close()
            throw error
        }
        do {
            try file.close()
        } catch let errno as Errno {
            throw AssetPackFormatError.io("write", root.appending(relative), errno)
        }
    }

    /// Starts writing a run of a file's bytes back to the disk (see ``Writeback``); the outcome is not
    /// checked: `syncfs` reports any write error.
    private static func startWriteback(_ file: FileDescriptor, _ run: Writeback.Run) {
        _ = c_linux_start_writeback(file.rawValue, off_t(run.offset), off_t(run.length))
    }

    /// The folder at `relative` ("" for the root), made (with its parents) when missing.
    private func folder(_ relative: String) throws -> FileDescriptor {
        if relative.isEmpty { return rootFolder }
        if let known = folders[PathKey(relative)] { return known }
        let (parentPath, name) = PackPath.split(relative)
        let parent = try folder(parentPath)
        if mkdirat(parent.rawValue, name, 0o755) != 0, errno != EEXIST {
            throw AssetPackFormatError.io("create folder", root.appending(relative), Errno(rawValue: errno))
        }
        let raw = openat(parent.rawValue, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard raw >= 0 else {
            throw AssetPackFormatError.io("open folder", root.appending(relative), Errno(rawValue: errno))
        }
        if folders.count >= 64 {  // a bounded number of descriptors, whatever the pack's shape
            for fd in folders.values { try? fd.close() }
            folders.removeAll()
        }
        // Evicting above happens after `parent` was used, and callers use what this returns at once.
        folders[PathKey(relative)] = FileDescriptor(rawValue: raw)
        return FileDescriptor(rawValue: raw)
    }
}

/// Which bytes of a file being written to start writing back to the disk while the rest is still to come, a
/// run at a time, so that the one `syncfs` that makes an extraction durable finds little left to write and the
/// disk works while the next bytes are decoded and hashed (`ensure` of 1 GiB in four files: 0.81x the time).
/// A hint only (`sync_file_range` with `SYNC_FILE_RANGE_WRITE`, which does not wait): `syncfs` still decides
/// durability and reports any write error. A file shorter than a run is left to that flush, as hinting many
/// small files one by one would hand the disk many small writes.
struct Writeback {
    /// Bytes of a file, from `offset`.
    struct Run: Equatable {
        var offset: Int64
        var length: Int64
    }

    /// The bytes a hint covers: one large request to the disk, not a page at a time.
    static let runLength: Int64 = 8 << 20
    private var started: Int64 = 0
    private var written: Int64 = 0

    /// Counts `count` more bytes written; the run to start writing back once a whole one is waiting.
    mutating func wrote(_ count: Int) -> Run? {
        written += Int64(count)
        return written - started >= Self.runLength ? take() : nil
    }

    /// After the last write: the tail of a file whose earlier runs were started (none for a short file).
    mutating func finish() -> Run? {
        started > 0 && written > started ? take() : nil
    }

    private mutating func take() -> Run {
        defer { started = written }
        return Run(offset: started, length: written - started)
    }
}
