/// A path that compares, hashes and sorts as its UTF-8 bytes.
///
/// Swift's `String` equality is canonical equivalence: `"é"` (U+00E9) equals `"e\u{301}"`, and a
/// `[String: …]` dictionary keeps one of them. A file system holds them as two different names, and names
/// travel byte-exact from the asset folder to the app group (no Unicode normalization anywhere), so paths are
/// keyed by their bytes.
public struct PathKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The path.
    public let path: String

    /// Wraps a path.
    public init(_ path: String) { self.path = path }

    public static func == (left: PathKey, right: PathKey) -> Bool {
        left.path.utf8.elementsEqual(right.path.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        var copy = path
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Byte order, the order of pack entries and indexes.
    public static func < (left: PathKey, right: PathKey) -> Bool {
        left.path.utf8.lexicographicallyPrecedes(right.path.utf8)
    }

    public var description: String { path }
}

extension String {
    /// Whether the string's UTF-8 bytes start with `prefix`'s. Unlike `hasPrefix`, which compares
    /// characters, `"a/\u{301}b"` does not start with `"a/"` by `hasPrefix` but does by bytes, as the file
    /// system sees it.
    public func hasBytePrefix(_ prefix: String) -> Bool {
        utf8.starts(with: prefix.utf8)
    }
}
