import AssetPackFormat
import Testing

/// Where a packaging manifest's JSON problems are said to be: in the file as written, comments included.
@Suite("Packaging manifests: JSON positions")
struct ManifestJSONTests {
    /// Comments were cut out of a line before the JSON was parsed, so a place after a `/* */` on the same
    /// line was given as many columns too far left as the comment was long.
    @Test func aSyntaxErrorAfterACommentOnItsLineHasItsColumn() {
        let checked = PackagingManifest.check(Array(#"{"assetPackID": "P", /* a note */ oops}"#.utf8), file: "P.json")
        #expect(checked.parsed == nil)
        #expect(checked.problems.map(\.message) == ["is not valid JSON: line 1, column 35: Invalid value"])
    }

    @Test func aTrailingCommaAndADuplicateKeyAfterCommentsHaveTheirColumns() {
        let text =
            #"{"assetPackID": "P", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "a"}],"#
            + "\n" + #" "platforms": [/* the first */ "iOS",], /* again */ "assetPackID": "Q"}"#
        let checked = PackagingManifest.check(Array(text.utf8), file: "P.json")
        let places = checked.problems.map { "\($0.severity) \($0.key) \($0.message.prefix { $0 != ";" })" }
        #expect(
            places == [
                "error assetPackID is written twice in one object (the second at line 2, column 53)",
                "warning (file) has a comma before a closing bracket (line 2, column 37)",
            ]
        )
    }
}
