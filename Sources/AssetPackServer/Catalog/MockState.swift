import AssetPackFormat
import Foundation
import SystemPackage

/// What `ba-mock` remembers between runs, in `.ba-mock/state.json` inside the asset folder: each pack's
/// version and the archive built for it, so versions survive restarts and unchanged packs are not rebuilt.
struct MockState: Sendable, Codable {
    /// One pack's record.
    struct Record: Sendable, Codable, Hashable {
        /// The version, counted from 1; it rises when the archive's digest changes.
        var version: Int
        /// The archive's SHA-256.
        var sha256: String
        /// The source fingerprint the archive was built from (see ``PackSource/fingerprint(options:)``).
        var fingerprint: String
        /// The archive's file name in `.ba-mock/packs/`.
        var archive: String
        /// When this version was first built (`Last-Modified`).
        var builtAt: Date
        var downloadSize: Int64
        var installSize: Int64
        var fileCount: Int
        var compression: PackCompression
        var downloadPolicy: DownloadPolicy
        /// The manifest file the pack came from.
        var manifestFile: String
        /// Set when the pack's manifest was removed: the pack is no longer published.
        var removed: Bool
        /// The manifest's platforms, language and userInfo, for the download manifest.
        var platforms: [String]?
        var language: String?
        var userInfo: JSONValue?
        /// Earlier versions that deltas start from, newest first (at most the delta depth).
        var bases: [Base]? = nil
        /// The delta archives from those bases to this version.
        var deltas: [Delta]? = nil
        /// The archive's modification time when it was built, in nanoseconds since 1970 (nil in a state written
        /// before it was kept): with its size, what tells an archive changed since (see ``isAsBuilt(_:)``).
        var archiveModified: Int64? = nil
    }

    /// An earlier version of a pack, as clients may hold it.
    struct Base: Sendable, Codable, Hashable {
        /// The version it was published as.
        var version: Int
        /// Its archive's digest.
        var sha256: String
    }

    /// A delta archive from a base version, in `.ba-mock/deltas/`.
    struct Delta: Sendable, Codable, Hashable {
        var fromVersion: Int
        var fromSHA256: String
        /// The file name.
        var archive: String
        var sha256: String
        var downloadSize: Int64
        /// How many files it carries.
        var fileCount: Int? = nil
    }

    /// The layout version of this file.
    var formatVersion = 1
    /// Records by pack ID.
    var packs: [String: Record] = [:]

    /// Reads the state file; an empty state when there is none yet.
    /// - Throws: ``AssetPackServerError`` with code `.state` when the file does not decode.
    static func load(from file: FilePath) throws -> MockState {
        BlockingIO.checkOffPool("MockState.load")
        do {
            return try StateFile<MockState>(file).load() ?? MockState()
        } catch let error as AssetPackFormatError {
            throw AssetPackServerError(
                code: .state,
                message:
                    "\(file) is not a state file this version understands. Fix: delete the folder "
                    + "\(file.removingLastComponent()) (pack versions restart at 1)",
                cause: error
            )
        }
    }

    /// Writes the state file atomically.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    func save(to file: FilePath) throws {
        BlockingIO.checkOffPool("MockState.save")
        try StateFile<MockState>(file).save(self)
    }
}

extension MockState.Record {
    /// Whether the archive at `path` is as it was built: a regular file of the recorded size and, where the
    /// record has it, modification time. ba-mock never writes into an archive it built (it writes a new one and
    /// renames it), but an export links its packs to them, and an exported pack edited in place (`dd
    /// conv=notrunc`, a test corrupting a download on purpose) edits the archive too.
    func isAsBuilt(_ path: FilePath) -> Bool {
        guard let (size, modified) = FileDescriptor.regularFileStamp(at: path) else { return false }
        return size == downloadSize && (archiveModified.map { $0 == modified } ?? true)
    }
}

extension MockState {
    /// The files in `packsFolder`, less the records' archives that changed since they were built (those are
    /// built again, as if missing).
    /// - Returns: The names, and the changed archives as `(pack ID, path)`.
    func archives(in packsFolder: FilePath) -> (names: Set<String>, changed: [(id: String, path: FilePath)]) {
        var names = Set((try? FileManager.default.contentsOfDirectory(atPath: packsFolder.string)) ?? [])
        var changed: [(id: String, path: FilePath)] = []
        for (id, record) in packs.sorted(by: { $0.key < $1.key })
        where !record.removed && names.contains(record.archive) {
            let path = packsFolder.appending(record.archive)
            guard !record.isAsBuilt(path) else { continue }
            names.remove(record.archive)
            changed.append((id, path))
        }
        return (names, changed)
    }
}
