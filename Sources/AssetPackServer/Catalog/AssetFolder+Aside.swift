import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// One process at a time writes a folder's `.ba-mock`: two that did (`export` while `serve` watches) each swept
/// what the other had just built. The first claims it; a second (another server, an export) and a check that
/// builds the packs (`validate --info-plist`) work on a temporary folder seeded from `.ba-mock`, so that
/// versions and deltas come out as the owner's would, and leave the owner's state as it was.
public final class StateClaim: Sendable {
    /// The open `.ba-mock/lock`, flocked: the kernel releases it when the process ends, however it ends.
    let descriptor: FileDescriptor

    init(descriptor: FileDescriptor) { self.descriptor = descriptor }

    deinit { try? descriptor.close() }
}

/// Where a command keeps its state: the folder's own `.ba-mock` (claimed), or a copy aside.
public struct ClaimedState: Sendable {
    /// The asset folder, with the state folder to use.
    public let folder: AssetFolder
    /// Held for as long as the folder's own state is written; `nil` when the state is aside (or not lockable).
    public let claim: StateClaim?
    /// The process that holds the folder's state when this one works aside (`0` when it is not known).
    public let heldBy: Int32?

    /// What to tell the user when the state is aside, naming the process that holds it.
    public var note: String? {
        guard let heldBy else { return nil }
        let who = heldBy > 0 ? "another ba-mock (process \(heldBy))" : "another ba-mock"
        return "note: \(who) keeps \(folder.root.appending(PackPath.stateFolderName)) (it serves or exports that "
            + "folder); this one builds in a copy of it, and leaves it as it is"
    }
}

extension AssetFolder {
    /// Runs `body` on the folder at `root` with its state claimed (``claimState()``), or beside a copy of it
    /// when another ba-mock holds it (the note naming that process goes to `log`); the copy is removed after
    /// `body`, whatever it does, and the claim is held until then.
    /// - Throws: What ``claimState()`` and `body` throw.
    public static func withClaimedState<T: Sendable>(
        root: FilePath,
        mayBeEmpty: Bool = false,
        log: @Sendable (String) -> Void,
        _ body: (AssetFolder) async throws -> T
    ) async throws -> T {
        let claimed = try await BlockingIO.longJob {
            try AssetFolder(root: root, mayBeEmpty: mayBeEmpty).claimState()
        }
        if let note = claimed.note { log(note) }
        // The jobs below take the folder alone: a closure that held the claim could keep it past the return on
        // the job's thread, and a next command of this process would find the folder still held.
        let folder = claimed.folder
        let result: T
        do {
            result = try await body(folder)
        } catch {
            try await BlockingIO.longJob { folder.removeStateAside() }
            throw error
        }
        try await BlockingIO.longJob { folder.removeStateAside() }
        withExtendedLifetime(claimed.claim) {}
        return result
    }

    /// Claims the folder's `.ba-mock` for this process, or, when another process holds it, sets up a copy
    /// aside (``withStateAside()``): a second ba-mock never writes the state another one serves from.
    ///
    /// The claim is an advisory `flock` on `.ba-mock/lock` (opened without following a link), which holds the
    /// owner's process ID for messages. A state folder that cannot be made or locked (a read-only folder) is
    /// used as before, unclaimed: the build says what it cannot write.
    /// - Throws: ``AssetPackServerError`` with code `.state` when `.ba-mock` is a link, or the copy aside
    ///   cannot be made.
    public func claimState() throws -> ClaimedState {
        BlockingIO.checkOffPool("AssetFolder.claimState")
        guard separateState == nil else { return ClaimedState(folder: self, claim: nil, heldBy: nil) }
        try PackCatalog.checkStateFolder(of: self)
        guard let folder = try? FileDescriptor.openFolder(root) else {  // the scan says why
            return ClaimedState(folder: self, claim: nil, heldBy: nil)
        }
        defer { try? folder.close() }
        guard let state = try? folder.openFolder(PackPath.stateFolderName, creating: true) else {
            return ClaimedState(folder: self, claim: nil, heldBy: nil)
        }
        defer { try? state.close() }
        let raw = openat(state.rawValue, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o644)
        guard raw >= 0 else { return ClaimedState(folder: self, claim: nil, heldBy: nil) }
        let lock = FileDescriptor(rawValue: raw)
        if flock(raw, LOCK_EX | LOCK_NB) == 0 {
            let line = Array("\(getpid())\n".utf8)
            _ = ftruncate(raw, 0)
            _ = line.withUnsafeBytes { pwrite(raw, $0.baseAddress, $0.count, 0) }
            return ClaimedState(folder: self, claim: StateClaim(descriptor: lock), heldBy: nil)
        }
        let failure = errno
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(raw, $0.baseAddress, $0.count, 0) }
        try? lock.close()
        guard failure == EWOULDBLOCK else { return ClaimedState(folder: self, claim: nil, heldBy: nil) }
        let written = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
        let owner = Int32(written.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        return ClaimedState(folder: try withStateAside(), claim: nil, heldBy: owner)
    }

    /// The same asset folder with its state in a new temporary folder holding what `.ba-mock` holds: the state
    /// file, the indexes and chunk lists, the deltas and the archives, each as a hard link where the file
    /// system allows (ba-mock never writes into a file it keeps: it writes a new one and renames it, so a
    /// build in the copy cannot reach the original) and as a copy otherwise. Only regular files are taken,
    /// opened without following a link or waiting on a FIFO. Call ``removeStateAside()`` when done.
    /// - Parameter base: Where the temporary folder is made.
    /// - Throws: ``AssetPackServerError`` with code `.state` when the temporary folder cannot be made or a
    ///   file not copied.
    public func withStateAside(in base: String = NSTemporaryDirectory()) throws -> AssetFolder {
        BlockingIO.checkOffPool("AssetFolder.withStateAside")
        try PackCatalog.checkStateFolder(of: self)  // a linked .ba-mock is refused, not read through
        var template = Array((base + "/ba-mock-check-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap(mkdtemp) }) else {
            throw AssetPackServerError(
                code: .state,
                message: "cannot create a folder in \(base). Fix: set TMPDIR to a writable folder",
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
            for name in try inner.entryNames() where inner.entryKind(name) == .regular && name != "lock" {
                if linkat(inner.rawValue, name, target.rawValue, name, 0) == 0 { continue }
                if errno == ENOENT { continue }  // swept by the process that owns the state since it was listed
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
        guard input >= 0 else {
            if errno == ENOENT { return }  // swept since it was listed: what the state names and lacks is rebuilt
            throw failed("read")
        }
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
        writer.keepTimes(of: reader)  // a record tells an archive changed since it was built by its time
    }
}
