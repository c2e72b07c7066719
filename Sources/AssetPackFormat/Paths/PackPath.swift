/// Path rules for pack contents: what a selector may name and what an archive entry may be called.
public enum PackPath {
    /// The folder inside a pack archive under which every file is stored, as Apple's packs do.
    public static let contentsPrefix = "Contents/"
    /// The name of the index entry at the end of every pack archive.
    public static let indexEntryName = "Index.json"
    /// The name of the entry at the start of every delta archive that names its base and target.
    public static let deltaEntryName = "Delta.json"
    /// The folder inside a delta archive under which files rebuilt by a recipe are stored.
    public static let patchesPrefix = "Patches/"
    /// The name of a delta's last entry: its target's index as changes to the base's.
    public static let indexDeltaEntryName = "IndexDelta.json"
    /// The folder inside an asset folder where `ba-mock` keeps its state; never packed, never served.
    public static let stateFolderName = ".ba-mock"

    /// Normalises a relative path: drops `.` and empty components.
    ///
    /// Components are split at `/` bytes, not at `Character`s: `"../\u{301}x"` is `..` then `\u{301}x` to the
    /// file system, though Swift sees `/\u{301}` as one character.
    /// - Parameter path: A path relative to some root, with `/` separators.
    /// - Returns: The normalised path, or `nil` when it is absolute, climbs with `..`, contains NUL or a
    ///   backslash, or is empty after normalising.
    public static func normalize(_ path: String) -> String? {
        let bytes = path.utf8
        if isNormal(bytes) { return path }  // the common case, every read's path: one pass, no copy
        if bytes.first == slash || bytes.contains(0) || bytes.contains(backslash) { return nil }
        var parts: [Substring.UTF8View] = []
        for part in Substring(path).utf8.split(separator: slash, omittingEmptySubsequences: true) {
            if part.elementsEqual([dot]) { continue }
            if part.elementsEqual([dot, dot]) { return nil }
            parts.append(part)
        }
        guard !parts.isEmpty else { return nil }
        if parts.count == 1, let only = parts.first { return String(Substring(only)) }
        return parts.map { String(Substring($0)) }.joined(separator: "/")
    }

    /// Whether the path is already what ``normalize(_:)`` returns: not empty, no leading `/`, no NUL or
    /// backslash, and no empty, `.` or `..` component.
    private static func isNormal(_ bytes: String.UTF8View) -> Bool {
        var length = 0  // of the current component
        var dots = 0  // how many of its bytes are dots
        for byte in bytes {
            switch byte {
            case slash:
                if length == 0 || length == dots && dots <= 2 { return false }
                length = 0
                dots = 0
            case 0, backslash: return false
            case dot:
                length += 1
                dots += 1
            default: length += 1
            }
        }
        return length > 0 && !(length == dots && dots <= 2)
    }

    /// Whether `path` may name a file in a pack: relative and already normal (what ``normalize(_:)`` returns,
    /// byte for byte), the rule every entry name and index row is held to.
    public static func isEntryPath(_ path: String) -> Bool {
        isNormal(path.utf8)
    }

    /// `a/b/c` → (`a/b`, `c`); `c` → ("", `c`): split at the last `/` byte (a combining mark after it is part
    /// of the name, not of the separator).
    public static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: slash) else { return ("", path) }
        return (String(Substring(path.utf8[..<slash])), String(Substring(path.utf8[path.utf8.index(after: slash)...])))
    }

    /// Whether `path` has a `..` component, splitting at `/` bytes.
    /// A long path as messages show it: its first 60 and last 30 characters around "…", so that a line stays
    /// readable; a path of at most 100 characters whole.
    static func shortened(_ path: String) -> String {
        guard path.count > 100 else { return path }
        return "\(path.prefix(60))…\(path.suffix(30)) (\(path.utf8.count) bytes)"
    }

    static func climbs(_ path: String) -> Bool {
        Substring(path).utf8.split(separator: slash).contains { $0.elementsEqual([dot, dot]) }
    }

    private static let slash = UInt8(ascii: "/")
    private static let backslash = UInt8(ascii: "\\")
    private static let dot = UInt8(ascii: ".")

    /// Checks a selector path from a manifest; throws a ``ManifestProblem`` naming the file and key.
    static func checkSelector(_ path: String, file: String, key: String) throws {
        let fix = "give a path relative to the source root that stays inside it, e.g. \"Levels/World1\""
        func unsafe(_ problem: String, _ fix: String) -> ManifestProblem {
            .error(file, key, problem, fix: fix, code: .unsafePath)
        }
        if path.utf8.first == UInt8(ascii: "/") { throw unsafe("\"\(path)\" is absolute", fix) }
        if climbs(path) { throw unsafe("\"\(path)\" climbs out of the asset folder with '..'", fix) }
        if path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") }) {
            throw unsafe("the path contains a NUL, a control character or a backslash", fix)
        }
        guard let normalized = normalize(path) else {
            throw unsafe(
                "\"\(path)\" names the whole asset folder, which would pack the manifests too (ba-package fails the "
                    + "same way)",
                "name a subfolder"
            )
        }
        if normalized == stateFolderName || normalized.hasBytePrefix(stateFolderName + "/") {
            throw unsafe("\"\(path)\" is inside \(stateFolderName)/, ba-mock's own state", fix)
        }
    }
}
