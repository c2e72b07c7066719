import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

/// Folders split across packs, merged for `url(for:)`.
extension AssetPackReader {
    /// A folder holding every file the namespace has below `relative`, each hard-linked from the pack a read
    /// of it resolves to, under `.ba-sync/views/<pid>/<n>/` (a symbolic link where a hard link cannot be made).
    /// Every folder of the view is made and opened relative to the one above it, never through a link: a link
    /// planted at `.ba-sync/views` (or below it) is refused, and nothing is written where it leads.
    /// - Throws: ``AssetPackClientError`` with code `.io` when the view cannot be made, `.pathCollision` under
    ///   the rule `fail`.
    func mergedFolder(_ relative: String, view: Namespace, scope: ReadScope) throws -> URL {
        let name = "\(getpid())/\(MergedViews.next())"
        let views = try store.openFolder(".ba-sync/views", creating: true)
        defer { try? views.close() }
        Self.sweepEndedViews(in: views)
        do {
            let target = try views.openFolder(name + "/" + relative, creating: true)
            defer { try? target.close() }
            for path in view.files(below: relative) {
                guard let (_, file) = try view.locate(path, in: nil, as: scope) else { continue }
                // Cut as bytes: a name's characters are not its bytes (`Ü`, `🎮`, a combining mark).
                let below = FilePath(String(Substring(path.utf8.dropFirst(relative.utf8.count + 1))))
                let folder = below.removingLastComponent()
                let into = folder.isEmpty ? target : try target.openFolder(folder.string, creating: true)
                defer { if !folder.isEmpty { try? into.close() } }
                let last = below.lastComponent?.string ?? ""
                if linkat(AT_FDCWD, file, into.rawValue, last, 0) != 0, symlinkat(file, into.rawValue, last) != 0 {
                    throw Errno(rawValue: errno)
                }
            }
        } catch let error as AssetPackClientError {
            throw error
        } catch {
            throw AssetPackClientError(
                code: .io,
                message: "cannot make the merged view of folder \(relative) in \(store.controlFolder)/views: \(error)",
                cause: error
            )
        }
        return URL(
            fileURLWithPath: store.controlFolder.appending("views/\(name)/\(relative)").string,
            isDirectory: true
        )
    }

    /// Removes the views of processes that ended (best effort), relative to the views folder: a link in place
    /// of one is unlinked, never followed.
    private static func sweepEndedViews(in views: FileDescriptor) {
        guard let owners = try? views.entryNames() else { return }
        for owner in owners {
            guard let pid = Int32(owner), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            removeTree(owner, in: views)
        }
    }

    /// Removes `name` in `folder` and, for a folder, what it holds, never through a link.
    private static func removeTree(_ name: String, in folder: FileDescriptor) {
        guard folder.entryKind(name) == .folder, let inner = try? folder.openFolder(name, creating: false) else {
            _ = unlinkat(folder.rawValue, name, 0)
            return
        }
        for entry in (try? inner.entryNames()) ?? [] { removeTree(entry, in: inner) }
        try? inner.close()
        _ = unlinkat(folder.rawValue, name, AT_REMOVEDIR)
    }
}

/// Numbers the merged views of this process.
enum MergedViews {
    private static let counter = Atomic<Int>(0)

    static func next() -> Int { counter.add(1, ordering: .relaxed).newValue }
}
