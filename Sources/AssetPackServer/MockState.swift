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
    }

    /// The layout version of this file.
    var formatVersion = 1
    /// Records by pack ID.
    var packs: [String: Record] = [:]

    static func load(from file: FilePath) throws -> MockState {
        guard let data = FileManager.default.contents(atPath: file.string) else { return MockState() }
        do {
            return try decoder.decode(MockState.self, from: data)
        } catch {
            throw AssetPackServerError(
                code: .state,
                message:
                    "\(file) is not a state file this version understands. Fix: delete the folder "
                    + "\(file.removingLastComponent()) (pack versions restart at 1)",
                cause: error
            )
        }
    }

    func save(to file: FilePath) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        try AtomicFile.write(try encoder.encode(self), to: file)
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
