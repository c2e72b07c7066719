import Foundation
import Testing

@testable import AssetPackFormat

/// The scanner reads manifests as JSONDecoder read them before it (values, keys given twice, numbers, depth)
/// and says what is wrong in JSONSerialization's words, at a place counted in the text as written.
@Suite("JSON scanner")
struct JSONScannerTests {
    static func document(_ text: String, comments: Bool = true) throws -> JSONDocument {
        try JSONScanner.document(Array(text.utf8), comments: comments)
    }

    static let valid: [String] = [
        #"{"a": 1, "b": [true, false, null], "c": {"d": "e", "f": []}}"#,
        "[0, -0, 1.5, -2.5e3, 1E+2, 123456789012345678901234567890, 4.9e-324, 1.7976931348623157e308, 0e999, 100e-2]",
        #"["\u00e9\ud83c\udfae", "a\/b\\\"\b\f\n\r\t", "\u0000", "é🎮", "\u007f"]"#,
        #"{"a": 1, "a": 2}"#,
        #"{"o": {"a": "x", "a": "y"}, "o": 3}"#,
        #"{"\u00e9": 1, "e\u0301": 2, "é": 3}"#,
        #"{"a": [1, 2,], "b": {"c": 1,},}"#,
        "\u{FEFF}{\"a\": 1}",
        " \t\r\n{ \"a\" : [ ] } \n",
        #""x""#, "12", "null",
        String(repeating: "[", count: 512) + String(repeating: "]", count: 512),
    ]

    /// Each value is what JSONDecoder makes of the same text: a key given twice keeps its first value (also
    /// when the two are spelled differently but are the same Swift string), numbers are the same Doubles.
    @Test(arguments: valid)
    func readsWhatJSONDecoderReads(_ text: String) throws {
        let reference = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(try Self.document(text).value == reference)
    }

    @Test func readsUTF16AsJSONDecoderDoes() throws {
        let text = "{\"a\": [1, \"é\"]} // done"
        let bytes = text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let document = try JSONScanner.document([0xFF, 0xFE] + bytes, comments: true)
        #expect(document.value == .object(["a": .array([.number(1), .string("é")])]))
    }

    @Test func notesTrailingCommasAndKeysGivenTwiceWithTheirPaths() throws {
        let document = try Self.document(
            #"{"a": {"b": 1, "b": [{"c": 2, "c": 3,}],}, "a": 4, "d": [1,]}"#
        )
        #expect(document.trailingCommas == [36, 39, 58])
        #expect(
            document.duplicateKeys == [
                JSONDocument.DuplicateKey(path: "a.b", offset: 15),
                JSONDocument.DuplicateKey(path: "a.b.c", offset: 30),
                JSONDocument.DuplicateKey(path: "a", offset: 43),
            ]
        )
    }

    @Test func commentsAreSpacesOutsideStringsOnly() throws {
        let document = try Self.document("/* a\n */ {\"a\"/**/: // x\n\"//b/*c*/\"} // end")
        #expect(document.value == .object(["a": .string("//b/*c*/")]))
        #expect(throws: JSONScanner.Failure.self) { try Self.document(#"{"a": 1} // x"#, comments: false) }
    }

    static let refused: [(String, String)] = [
        ("", "line 1, column 1: Unexpected end of file"),
        (#"{"a": "#, "line 1, column 7: Unexpected end of file"),
        (#"{"a": "abc"#, "line 1, column 11: Unexpected end of file"),
        (#"{"a" 1}"#, "line 1, column 6: Invalid value"),
        ("{\"a\": 1,\n  oops}", "line 2, column 3: Invalid value"),
        (#"{"a": 1} x"#, "line 1, column 10: Invalid value"),
        (#"{"a": tru}"#, "line 1, column 10: Invalid value"),
        ("[1,,]", "line 1, column 4: Invalid value"),
        (#"{"a": 1} /"#, "line 1, column 10: Invalid value"),
        (#"{"a": 01}"#, "line 1, column 7: Number with leading zero"),
        (#"{"a": "\x"}"#, "line 1, column 8: Invalid escape sequence"),
        (#"{"a": "\ud800"}"#, "line 1, column 14: Invalid escape sequence"),
        ("{\"a\": \"x\ty\"}", "line 1, column 9: Unescaped control character"),
        (#"{"a": 1e999}"#, "line 1, column 7: Number 1e999 is not representable in Swift"),
        (#"{"a": -1e-400}"#, "line 1, column 7: Number -1e-400 is not representable in Swift"),
        (
            String(repeating: "[", count: 513) + String(repeating: "]", count: 513),
            "line 1, column 513: Too many nested arrays or dictionaries"
        ),
        ("{\"a\": 1}\n\n /* never", "line 3, column 2: A /* comment is never closed"),
    ]

    /// What is wrong in JSONSerialization's words (which manifest messages showed when it read them), and
    /// where, counted in the text as written.
    @Test(arguments: refused)
    func refusesWithFoundationsWordsAndAPlace(_ text: String, _ expected: String) throws {
        let failure = #expect(throws: JSONScanner.Failure.self) { try Self.document(text) }
        #expect(failure.map { "\($0.place.map(String.init(describing:)) ?? "?"): \($0.kind.words)" } == expected)
        #expect((try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) == nil, "JSONDecoder refuses it")
    }

    /// JSONDecoder, which read manifests before, stops the process (SIGILL in FoundationEssentials'
    /// `JSONError.SourceLocation`) on 513 `[` that end the file.
    @Test func aFileThatEndsTooDeepIsRefusedNotACrash() {
        let checked = PackagingManifest.check(Array(String(repeating: "[", count: 513).utf8), file: "P.json")
        #expect(
            checked.problems.map(\.message) == [
                "is not valid JSON: line 1, column 513: Too many nested arrays or dictionaries"
            ]
        )
    }

    @Test func refusesInvalidUTF8InAStringAtTheString() throws {
        let failure = #expect(throws: JSONScanner.Failure.self) {
            try JSONScanner.document(Array(#"{"ab": "A"#.utf8) + [0xFF, 0x22, 0x7D], comments: true)
        }
        #expect(failure?.kind == .invalidUTF8)
        #expect(failure?.place?.description == "line 1, column 8")
    }

    /// Mutated manifests without comments: the scanner reads each as JSONDecoder does, or refuses it as
    /// JSONDecoder does.
    @Test func agreesWithJSONDecoderOnMutatedDocuments() throws {
        let seeds = [
            #"{"assetPackID": "A", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}}, "#
                + #""fileSelectors": [{"file": "x\u00e9\n"}, {"directory": "y/z"}], "platforms": ["iOS"], "#
                + #""userInfo": {"n": -12.5e-3, "b": [true, false, null], "o": {}}}"#
        ].map { Array($0.utf8) }
        var random = SplitMix64(seed: 0x15C4)
        var (read, refused) = (0, 0)
        for _ in 0..<2000 {
            let input = FuzzTests.mutate(seeds.randomElement(using: &random) ?? [], &random)
            let reference = try? JSONDecoder().decode(JSONValue.self, from: Data(input))
            let value = try? JSONScanner.document(input, comments: false).value
            #expect(value == reference, "\(String(decoding: input, as: UTF8.self))")
            if value == nil { refused += 1 } else { read += 1 }
        }
        #expect(read > 0 && refused > 0, "read \(read), refused \(refused)")
    }
}
