#if canImport(Glibc)
    import Glibc
#endif

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
        left.path.bytesEqual(right.path)
    }

    public func hash(into hasher: inout Hasher) {
        var copy = path
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Byte order, the order of pack entries and indexes.
    public static func < (left: PathKey, right: PathKey) -> Bool {
        left.path.bytesPrecede(right.path)
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

    /// Whether the string's UTF-8 bytes are `other`'s (not canonical equivalence, as `==` is).
    public func bytesEqual(_ other: String) -> Bool {
        utf8.count == other.utf8.count && Self.compareBytes(self, other) { $0 == 0 }
    }

    /// Whether the string's UTF-8 bytes sort before `other`'s, byte by byte as unsigned values, a prefix first.
    public func bytesPrecede(_ other: String) -> Bool {
        Self.compareBytes(self, other) { $0 < 0 }
    }

    /// `memcmp` of both strings' bytes (lengths deciding a tie), read through `result`; byte by byte where a
    /// string has no contiguous UTF-8 (never for native strings, small ones included). Sorting the names of
    /// 1 000 files and checking paths went through `UTF8View`'s generic element-wise loops: 17% of a walk.
    private static func compareBytes(_ left: String, _ right: String, _ result: (Int32) -> Bool) -> Bool {
        let fast = left.utf8.withContiguousStorageIfAvailable { leftBytes in
            right.utf8.withContiguousStorageIfAvailable { rightBytes -> Bool in
                let common = Swift.min(leftBytes.count, rightBytes.count)
                let order = common == 0 ? 0 : memcmp(leftBytes.baseAddress!, rightBytes.baseAddress!, common)
                if order != 0 { return result(order) }
                return result(leftBytes.count < rightBytes.count ? -1 : leftBytes.count > rightBytes.count ? 1 : 0)
            }
        }
        if let fast, let fast { return fast }
        if left.utf8.lexicographicallyPrecedes(right.utf8) { return result(-1) }
        return result(left.utf8.elementsEqual(right.utf8) ? 0 : 1)
    }
}
