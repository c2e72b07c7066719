/// The index entry stored at the end of every pack archive: what the pack holds, file by file.
public struct PackIndex: Sendable, Hashable, Codable {
    /// One file of the pack.
    public struct File: Sendable, Hashable, Codable {
        /// Path in the merged namespace (the archive entry is `Contents/` + this).
        public var path: String
        /// Size in bytes.
        public var size: Int64
        /// Lower-case hex SHA-256 of the content.
        public var sha256: String

        /// Creates an index row.
        public init(path: String, size: Int64, sha256: String) {
            self.path = path
            self.size = size
            self.sha256 = sha256
        }
    }

    /// The index layout version; readers refuse versions they do not know.
    public var formatVersion: Int
    /// The pack's ID.
    public var assetPackID: String
    /// The pack's download policy.
    public var downloadPolicy: DownloadPolicy
    /// The pack's platforms.
    public var platforms: [String]
    /// The sum of the files' sizes.
    public var installSize: Int64
    /// How many files the pack holds.
    public var fileCount: Int
    /// Every file, sorted by path.
    public var files: [File]

    /// The layout version this code writes.
    public static let currentFormatVersion = 1
}
