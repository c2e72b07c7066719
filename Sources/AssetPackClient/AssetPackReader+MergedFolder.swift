import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

/// Folders split across packs, merged for `url(for:)`.
extension AssetPackReader {
    /// A folder holding every file the namespace has below `relative`, each hard-linked from the pack a read
    /// of it resolves to, under `.ba-sync/views/<pid>/<n>/` (a symbolic link where a hard link cannot be made).
    /// - Throws: ``AssetPackClientError`` with code `.io` when the view cannot be made, `.pathCollision` under
    ///   the rule `fail`.
    func mergedFolder(_ relative: String, view: Namespace, scope: ReadScope) throws -> URL {
        let views = store.controlFolder.appending("views")
        Self.sweepEndedViews(in: views)
        let root = views.appending("\(getpid())").appending("\(MergedViews.next())")
        let target = root.appending(relative)
        do {
            try FileManager.default.createDirectory(atPath: target.string, withIntermediateDirectories: true)
            for path in view.files(below: relative) {
                guard let (_, file) = try view.locate(path, in: nil, as: scope) else { continue }
                let link = root.appending(path)
                try FileManager.default.createDirectory(
                    atPath: link.removingLastComponent().string,
                    withIntermediateDirectories: true
                )
                if Glibc.link(file, link.string) != 0, symlink(file, link.string) != 0 {
                    throw Errno(rawValue: errno)
                }
            }
        } catch let error as AssetPackClientError {
            throw error
        } catch {
            throw AssetPackClientError(
                code: .io,
                message: "cannot make the merged view of folder \(relative) in \(views): \(error)",
                cause: error
            )
        }
        return URL(fileURLWithPath: target.string, isDirectory: true)
    }

    /// Removes the views of processes that ended (best effort).
    private static func sweepEndedViews(in views: FilePath) {
        guard let owners = try? FileManager.default.contentsOfDirectory(atPath: views.string) else { return }
        for owner in owners {
            guard let pid = Int32(owner), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: views.appending(owner).string)
        }
    }
}

/// Numbers the merged views of this process.
enum MergedViews {
    private static let counter = Atomic<Int>(0)

    static func next() -> Int { counter.add(1, ordering: .relaxed).newValue }
}
