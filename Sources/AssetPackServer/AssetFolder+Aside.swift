import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// A check that builds the packs (`validate --info-plist`) must not change the folder it checks: its state goes
/// to a temporary folder, seeded from `.ba-mock` so that versions and deltas come out as the next `export`
/// would write them.
extension AssetFolder {
    /// The same asset folder with its state in a new temporary folder holding what `.ba-mock` holds: the state
    /// file, the indexes and chunk lists, the deltas and the archives, each as a hard link where the file
    /// system allows (ba-mock never writes into a file it keeps: it writes a new one and renames it, so a
    /// build in the copy cannot reach the original) and as a copy otherwise. Only regular files are taken,
    /// opened without following a link or waiting on a FIFO. Call ``removeStateAside()`` when done.
    /// - Throws: ``AssetPackServerError`` with code `.state` when the temporary folder cannot be made or a
    ///   file not copied.
    public func withStateAside() throws -> AssetFolder {
        BlockingIO.checkOffPool("AssetFolder.withStateAside")
        try PackCatalog.checkStateFolder(of: self)  // a linked .ba-mock is refused, not read through
        var template = Array((NSTemporaryDirectory() + "/ba-mock-check-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap(mkdtemp) }) else {
            throw AssetPackServerError(
                code: .state,
                message: "cannot create a folder in \(NSTemporaryDirectory()). Fix: set TMPDIR to a writable folder",
                cause: Errno(rawValue: errno)
            )
        }
        let aside = FilePath(String(cString: made))
        do {
            try Self.mirror(from: stateFolder, to: aside)
        } catch {
            _ = try? FileManager.default.removeItem(atPath: aside.string)
            throw error
        }
        return AssetFolder(root: root, mayBeEmpty: mayBeEmpty, stateFolder: aside)
    }

    /// Removes the temporary state folder of ``withStateAside()`` (nothing for a folder's own state).
    public func removeStateAside() {
        BlockingIO.checkOffPool("AssetFolder.removeStateAside")
        guard let separateState else { return }
        _ = try? FileManager.default.removeItem(atPath: separateState.string)
    }

    /// Links or copies the regular files of `source` and of its `packs`, `indexes` and `deltas` folders.
    private static func mirror(from source: FilePath, to destination: FilePath) throws {
        guard let from = try? FileDescriptor.openFolder(source) else { return }  // no state yet
        defer { try? from.close() }
        let to = try FileDescriptor.openFolder(destination)
        defer { try? to.close() }
        for folder in ["", "packs", "indexes", "deltas"] {
            guard folder.isEmpty || from.entryKind(folder) == .folder,
                let inner = try? from.openFolder(folder, creating: false)
            else { continue }
            defer { try? inner.close() }
            let target = try to.openFolder(folder, creating: true)
            defer { try? target.close() }
            for name in try inner.entryNames() where inner.entryKind(name) == .regular {
                if linkat(inner.rawValue, name, target.rawValue, name, 0) == 0 { continue }
                try copy(name, from: inner, to: target, shownAs: source.appending(folder).appending(name))
            }
        }
    }

    private static func copy(_ name: String, from: FileDescriptor, to: FileDescriptor, shownAs path: FilePath) throws {
        func failed(_ what: String) -> AssetPackServerError {
            AssetPackServerError(
                code: .state,
                message: "cannot \(what) \(path) to check it aside. Fix: free space in \(NSTemporaryDirectory())",
                cause: Errno(rawValue: errno)
            )
        }
        let input = openat(from.rawValue, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard input >= 0 else { throw failed("read") }
        let reader = FileDescriptor(rawValue: input)
        defer { try? reader.close() }
        // Listed as a regular file; one swapped for a FIFO since is not waited on (O_NONBLOCK): its read fails.
        let output = openat(to.rawValue, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw failed("copy") }
        let writer = FileDescriptor(rawValue: output)
        defer { try? writer.close() }
        do {
            try reader.forEachChunk { chunk in _ = try writer.writeAll(chunk) }
        } catch {
            throw failed("copy")
        }
    }
}
