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
