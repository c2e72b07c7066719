import Foundation
import Testing

@testable import AssetPackFormat

@Suite("Paths compare as their bytes")
struct PathKeyTests {
    /// Names a folder really holds: small (stored inline) and long strings, a prefix of another, bytes above
    /// 0x7F against ASCII, the two forms of é, combining marks, emoji, the empty path.
    static let names: [String] = [
        "", "a", "a/", "a/b", "a/\u{301}b", "A", "Z", "z", "~", "\u{7F}", "é", "e\u{301}", "e", "ea",
        "Über/日本語 🎮.json", "Über/日本語 🎮.jso", "Uber/x", "f000123.bin", "f000124.bin", "f00012.bin",
        String(repeating: "x", count: 15), String(repeating: "x", count: 16), String(repeating: "x", count: 64),
        String(repeating: "x", count: 64) + "\u{301}", String(repeating: "é", count: 40) + "/a",
        String(repeating: "é", count: 40) + "/b", "d0003/f000999.bin", "d0003/f000999.bin.tmp", "🎮", "🎮a",
    ]

    /// What byte order means: unsigned bytes compared one by one, a proper prefix first.
    static func bytesBefore(_ left: String, _ right: String) -> Bool {
        let (l, r) = (Array(left.utf8), Array(right.utf8))
        for (a, b) in zip(l, r) where a != b { return a < b }
        return l.count < r.count
    }

    @Test func orderAndEqualityAreTheBytes() {
        for left in Self.names {
            for right in Self.names {
                #expect(
                    (PathKey(left) < PathKey(right)) == Self.bytesBefore(left, right),
                    "\(Array(left.utf8)) < \(Array(right.utf8))"
                )
                #expect((PathKey(left) == PathKey(right)) == (Array(left.utf8) == Array(right.utf8)))
                #expect(left.bytesEqual(right) == (Array(left.utf8) == Array(right.utf8)))
            }
        }
        // The case Swift's `==` gets the other way: canonically equal, not the same bytes.
        #expect("é" == "e\u{301}" && PathKey("é") != PathKey("e\u{301}"))
    }

    @Test func aSortIsTheByteSort() {
        let sorted = Self.names.shuffled().map(PathKey.init).sorted().map { Array($0.path.utf8) }
        #expect(sorted == Self.names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
    }

    /// A string built from a Substring and one made in pieces are native too; both take the same path.
    @Test func stringsMadeAnyWayCompareAlike() {
        let whole = "Levels/World1/level.json"
        let piece = String(Substring(whole.utf8.dropFirst(7)))
        var built = "World1/"
        built += "level.json"
        #expect(piece.bytesEqual(built) && PathKey(piece) == PathKey(built))
        #expect(PathKey(built) < PathKey(built + "x") && !(PathKey(built + "x") < PathKey(built)))
    }
}
