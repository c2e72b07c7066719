import Foundation
import TestSupport
import Testing

/// The README's table of Apple's API, keys and tools keeps its totals true, and says why for every row that
/// is not a match.
@Suite("README mapping table")
struct MappingTableTests {
    @Test func totalsMatchTheRowsAndEveryDifferenceSaysWhy() throws {
        let readme = try String(
            contentsOf: repositoryRoot().appendingPathComponent("README.md"),
            encoding: .utf8
        )
        let start = try #require(readme.range(of: "## Apple's API, keys and tools, mapped"))
        let section = readme[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        let lines = section[..<end].split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| Apple |") }
        var counts: [String: Int] = [:]
        for line in lines {
            // Cells split on `|` not escaped as `\|`.
            var cells: [String] = []
            var cell = ""
            var previous: Character = " "
            for character in line.dropFirst() {
                if character == "|" && previous != "\\" {
                    cells.append(cell.trimmingCharacters(in: .whitespaces))
                    cell = ""
                } else {
                    cell.append(character)
                }
                previous = character
            }
            #expect(cells.count == 4, "\(line)")
            guard cells.count == 4 else { continue }
            #expect(["match", "differs", "missing"].contains(cells[2]), "\(line)")
            if cells[2] != "match" { #expect(!cells[3].isEmpty, "a \(cells[2]) row says why: \(line)") }
            if cells[2] == "match" {
                let cited = ["developer.apple.com", "third-part", "third part", "reference"].contains {
                    cells[3].contains($0)
                }
                #expect(cited, "a match row names the Apple page (or the third-party source) it follows: \(line)")
            }
            counts[cells[2], default: 0] += 1
        }
        let totals =
            "Totals: \(counts["match"] ?? 0) match, \(counts["differs"] ?? 0) differ by choice, "
            + "\(counts["missing"] ?? 0) missing."
        #expect(section[..<end].contains(totals), "the README should say: \(totals)")
    }
}
