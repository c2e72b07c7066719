import Foundation

/// Where two byte strings first differ (the shorter one's length, when it is the other's start); `nil` when they
/// are equal. Compared with `memcmp` and reported as an offset: `#expect(a == b)` on megabytes compares them
/// element by element in a debug build and, when they differ, diffs them for the message, which took minutes
/// for a 1.5 MiB body.
public func firstDifference(_ a: Data, _ b: Data) -> Int? {
    a.withUnsafeBytes { a in
        b.withUnsafeBytes { b in
            let common = min(a.count, b.count)
            if common > 0, let x = a.baseAddress, let y = b.baseAddress, memcmp(x, y, common) != 0 {
                return (0..<common).first { a[$0] != b[$0] }
            }
            return a.count == b.count ? nil : common
        }
    }
}
