/// Path rules for pack contents: what a selector may name and what an archive entry may be called.
public enum PackPath {
    /// The folder inside a pack archive under which every file is stored, as Apple's packs do.
    public static let contentsPrefix = "Contents/"
    /// The name of the index entry at the end of every pack archive.
    public static let indexEntryName = "Index.json"
    /// The folder inside an asset folder where `ba-mock` keeps its state; never packed, never served.
    public static let stateFolderName = ".ba-mock"

    /// Normalises a relative path: drops `.` and empty components.
    ///
    /// - Parameter path: A path relative to some root, with `/` separators.
    /// - Returns: The normalised path, or `nil` when it is absolute, climbs with `..`, contains NUL or a
    ///   backslash, or is empty after normalising.
    public static func normalize(_ path: String) -> String? {
        if path.hasPrefix("/") || path.contains("\0") || path.contains("\\") { return nil }
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." { return nil }
            parts.append(part)
        }
        return parts.isEmpty ? nil : parts.joined(separator: "/")
    }

    /// Checks a selector path from a manifest; throws an `.unsafePath` error naming the file and key.
    static func checkSelector(_ path: String, file: String, key: String) throws {
        let fix = "give a path relative to the asset folder that stays inside it, e.g. \"Levels/World1\""
        if path.hasPrefix("/") {
            throw AssetPackFormatError(
                code: .unsafePath,
                message: "\(file): \(key): \"\(path)\" is absolute. Fix: \(fix)"
            )
        }
        if path.split(separator: "/").contains("..") {
            throw AssetPackFormatError(
                code: .unsafePath,
                message: "\(file): \(key): \"\(path)\" climbs out of the asset folder with '..'. Fix: \(fix)"
            )
        }
        if path.contains("\0") || path.contains("\\") || path.unicodeScalars.contains(where: { $0.value < 0x20 }) {
            throw AssetPackFormatError(
                code: .unsafePath,
                message: "\(file): \(key): the path contains a NUL, a control character or a backslash. Fix: \(fix)"
            )
        }
        guard let normalized = normalize(path) else {
            throw AssetPackFormatError(
                code: .unsafePath,
                message:
                    "\(file): \(key): \"\(path)\" names the whole asset folder, which would pack the manifests too "
                    + "(ba-package fails the same way). Fix: name a subfolder"
            )
        }
        if normalized == stateFolderName || normalized.hasPrefix(stateFolderName + "/") {
            throw AssetPackFormatError(
                code: .unsafePath,
                message: "\(file): \(key): \"\(path)\" is inside \(stateFolderName)/, ba-mock's own state. Fix: \(fix)"
            )
        }
    }
}
