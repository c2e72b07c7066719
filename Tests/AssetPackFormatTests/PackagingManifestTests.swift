import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("Packaging manifests")
struct PackagingManifestTests {
    static let valid = """
        {"assetPackID": "Pack", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "a.txt"}],
         "platforms": ["iOS"]}
        """

    func parse(_ text: String) throws -> ParsedManifest {
        try PackagingManifest.parse(Array(text.utf8), file: "Pack.json")
    }

    @Test func acceptsApplesTemplateWithComments() throws {
        let parsed = try parse(ManifestTemplate.text.replacingOccurrences(of: "[Asset-Pack ID]", with: "Tutorial"))
        #expect(parsed.manifest.assetPackID == "Tutorial")
        #expect(
            parsed.manifest.downloadPolicy
                == .prefetch(installationEventTypes: [.firstInstallation, .subsequentUpdate])
        )
        #expect(parsed.manifest.fileSelectors == [.file("[Path to File]"), .directory("[Path to Directory]")])
        #expect(parsed.warnings.isEmpty)
    }

    @Test func commentMarkersInsideStringsAreKept() throws {
        let parsed = try parse(
            """
            /* block
               comment */ {"assetPackID": "Pack", // trailing comment
              "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "a//b/*c*/.txt"}], "platforms": ["iOS"]}
            """
        )
        #expect(parsed.manifest.fileSelectors == [.file("a//b/*c*/.txt")])
    }

    @Test func syntaxErrorsSayWhere() throws {
        let error = #expect(throws: AssetPackFormatError.self) {
            try parse("// header\n{\n  \"assetPackID\": \"Pack\",\n  oops\n}")
        }
        #expect(error?.code == .invalidJSON)
        #expect(error?.message.contains("line 4, column 3") == true, "\(error?.message ?? "")")
        let truncated = #expect(throws: AssetPackFormatError.self) { try parse("{\"assetPackID\": ") }
        #expect(truncated?.message.contains("Unexpected end of file") == true, "\(truncated?.message ?? "")")
    }

    @Test func decodesEveryPolicy() throws {
        let essential = try parse(
            Self.valid.replacingOccurrences(
                of: #"{"onDemand": {}}"#,
                with: #"{"essential": {"installationEventTypes": ["firstInstallation"]}}"#
            )
        )
        #expect(essential.manifest.downloadPolicy == .essential(installationEventTypes: [.firstInstallation]))
        #expect(try parse(Self.valid).manifest.downloadPolicy == .onDemand)
    }

    struct Rule: CustomTestStringConvertible, Sendable {
        var name: String
        var text: String
        var code: AssetPackFormatError.Code
        var key: String
        var fix: String
        var testDescription: String { name }
    }

    static func replacing(_ old: String, _ new: String) -> String {
        valid.replacingOccurrences(of: old, with: new)
    }

    static let rules: [Rule] = [
        Rule(name: "not JSON", text: "{\"assetPackID\": ", code: .invalidJSON, key: "not valid JSON", fix: "brackets"),
        Rule(
            name: "top level not an object",
            text: "[1, 2]",
            code: .invalidManifest,
            key: "(top level)",
            fix: "ba-mock template"
        ),
        Rule(
            name: "missing ID",
            text: replacing(#""assetPackID": "Pack", "#, ""),
            code: .invalidManifest,
            key: "assetPackID: is missing",
            fix: "add \"assetPackID\""
        ),
        Rule(
            name: "ID not a string",
            text: replacing(#""Pack""#, "42"),
            code: .invalidManifest,
            key: "assetPackID: is a number",
            fix: "in quotes"
        ),
        Rule(
            name: "ID with a slash",
            text: replacing(#""Pack""#, #""a/b""#),
            code: .invalidManifest,
            key: "contains '/'",
            fix: "letters, digits and hyphens"
        ),
        Rule(
            name: "ID with a control character",
            text: replacing(#""Pack""#, #""a\u0001b""#),
            code: .invalidManifest,
            key: "control character",
            fix: "letters, digits"
        ),
        Rule(
            name: "ID with dot-dot",
            text: replacing(#""Pack""#, #""..""#),
            code: .invalidManifest,
            key: "starts with '.'",
            fix: "hyphens"
        ),
        Rule(
            name: "missing policy",
            text: replacing(#""downloadPolicy": {"onDemand": {}}, "#, ""),
            code: .invalidManifest,
            key: "downloadPolicy: is missing",
            fix: "exactly one of"
        ),
        Rule(
            name: "two policies",
            text: replacing(
                #"{"onDemand": {}}"#,
                #"{"onDemand": {}, "prefetch": {"installationEventTypes": ["firstInstallation"]}}"#
            ),
            code: .invalidManifest,
            key: "has 2 policies",
            fix: "exactly one of"
        ),
        Rule(
            name: "no policy",
            text: replacing(#"{"onDemand": {}}"#, "{}"),
            code: .invalidManifest,
            key: "has no policy",
            fix: "exactly one of"
        ),
        Rule(
            name: "unknown policy",
            text: replacing(#"{"onDemand": {}}"#, #"{"sometimes": {}}"#),
            code: .invalidManifest,
            key: "downloadPolicy.sometimes",
            fix: "exactly one of"
        ),
        Rule(
            name: "prefetch without event types",
            text: replacing(#"{"onDemand": {}}"#, #"{"prefetch": {}}"#),
            code: .invalidManifest,
            key: "downloadPolicy.prefetch.installationEventTypes: is missing",
            fix: "firstInstallation"
        ),
        Rule(
            name: "essential with empty event types",
            text: replacing(#"{"onDemand": {}}"#, #"{"essential": {"installationEventTypes": []}}"#),
            code: .invalidManifest,
            key: "non-empty array",
            fix: "firstInstallation"
        ),
        Rule(
            name: "unknown event type",
            text: replacing(#"{"onDemand": {}}"#, #"{"essential": {"installationEventTypes": ["firstLaunch"]}}"#),
            code: .invalidManifest,
            key: "\"firstLaunch\"",
            fix: "subsequentUpdate"
        ),
        Rule(
            name: "onDemand not empty",
            text: replacing(#"{"onDemand": {}}"#, #"{"onDemand": {"installationEventTypes": ["firstInstallation"]}}"#),
            code: .invalidManifest,
            key: "downloadPolicy.onDemand.installationEventTypes: is not a key of the onDemand policy",
            fix: "\"onDemand\": {}"
        ),
        Rule(
            name: "missing selectors",
            text: replacing(#""fileSelectors": [{"file": "a.txt"}],"#, ""),
            code: .invalidManifest,
            key: "fileSelectors: is missing",
            fix: "Videos/Intro.m4v"
        ),
        Rule(
            name: "empty selectors",
            text: replacing(#"[{"file": "a.txt"}]"#, "[]"),
            code: .invalidManifest,
            key: "fileSelectors: must be a non-empty array",
            fix: "list what goes"
        ),
        Rule(
            name: "unknown selector",
            text: replacing(#"{"file": "a.txt"}"#, #"{"fileGlob": "*.txt"}"#),
            code: .invalidManifest,
            key: "fileSelectors[0].fileGlob",
            fix: "{\"fileExclusion\": GLOB}"
        ),
        Rule(
            name: "misspelt selector",
            text: replacing(#"{"file": "a.txt"}"#, #"{"filepattern": "*.txt"}"#),
            code: .invalidManifest,
            key: "fileSelectors[0].filepattern",
            fix: "did you mean \"filePattern\"?"
        ),
        Rule(
            name: "a destination without its source",
            text: replacing(#"{"file": "a.txt"}"#, #"{"fileDestination": "b.txt"}"#),
            code: .invalidManifest,
            key: "fileSelectors[0].fileDestination: needs \"fileSource\"",
            fix: "write both"
        ),
        Rule(
            name: "a pattern that climbs out",
            text: replacing(#"{"file": "a.txt"}"#, #"{"filePattern": "../**/*.key"}"#),
            code: .unsafePath,
            key: "fileSelectors[0].filePattern",
            fix: "relative to the source root"
        ),
        Rule(
            name: "an unclosed bracket",
            text: replacing(#"{"file": "a.txt"}"#, #"{"fileExclusion": "[a-z*.png"}"#),
            code: .unsafePath,
            key: "never closed",
            fix: "(* ? [a-z] **)"
        ),
        Rule(
            name: "an absolute source root",
            text: replacing(#""platforms""#, #""sourceRoot": "/etc", "platforms""#),
            code: .unsafePath,
            key: "sourceRoot: \"/etc\" is absolute",
            fix: "relative to the manifest's own folder"
        ),
        Rule(
            name: "a language with a variant",
            text: replacing(#""platforms""#, #""language": "de-Latn-DE-1996", "platforms""#),
            code: .invalidManifest,
            key: "has more than a language, a script and a region",
            fix: "zh-Hant-TW"
        ),
        Rule(
            name: "a language that is not one",
            text: replacing(#""platforms""#, #""language": "english", "platforms""#),
            code: .invalidManifest,
            key: "language: \"english\"",
            fix: "pt-BR"
        ),
        Rule(
            name: "userInfo not an object",
            text: replacing(#""platforms""#, #""userInfo": [1], "platforms""#),
            code: .invalidManifest,
            key: "userInfo: is an array",
            fix: "minimumAppVersion"
        ),
        Rule(
            name: "misspelt key",
            text: replacing(#""assetPackID""#, #""assetPackId""#),
            code: .invalidManifest,
            key: "assetPackId: is not a key",
            fix: "did you mean \"assetPackID\"?"
        ),
        Rule(
            name: "selector with two keys",
            text: replacing(#"{"file": "a.txt"}"#, #"{"file": "a.txt", "directory": "b"}"#),
            code: .invalidManifest,
            key: "fileSelectors[0]",
            fix: "{\"file\""
        ),
        Rule(
            name: "absolute path",
            text: replacing(#""a.txt""#, #""/etc/passwd""#),
            code: .unsafePath,
            key: "is absolute",
            fix: "relative to the source root"
        ),
        Rule(
            name: "dot-dot path",
            text: replacing(#""a.txt""#, #""../secret.txt""#),
            code: .unsafePath,
            key: "climbs out",
            fix: "relative to the source root"
        ),
        Rule(
            name: "whole folder",
            text: replacing(#"{"file": "a.txt"}"#, #"{"directory": "."}"#),
            code: .unsafePath,
            key: "names the whole asset folder",
            fix: "name a subfolder"
        ),
        Rule(
            name: "state folder",
            text: replacing(#"{"file": "a.txt"}"#, #"{"directory": ".ba-mock/packs"}"#),
            code: .unsafePath,
            key: ".ba-mock/",
            fix: "relative to the source root"
        ),
        Rule(
            name: "missing platforms",
            text: replacing(",\n \"platforms\": [\"iOS\"]", ""),
            code: .invalidManifest,
            key: "platforms: is missing",
            fix: "\"platforms\": [\"iOS\""
        ),
        Rule(
            name: "iPadOS",
            text: replacing(#"["iOS"]"#, #"["iPadOS"]"#),
            code: .invalidManifest,
            key: "ba-package rejects",
            fix: "it covers iPadOS"
        ),
        Rule(
            name: "unknown platform",
            text: replacing(#"["iOS"]"#, #"["watchOS"]"#),
            code: .invalidManifest,
            key: "\"watchOS\"",
            fix: "known: iOS"
        ),
    ]

    @Test(arguments: rules)
    func rejects(_ rule: Rule) throws {
        let error = #expect(throws: AssetPackFormatError.self) { try parse(rule.text) }
        #expect(error?.code == rule.code)
        let message = error?.message ?? ""
        #expect(message.hasPrefix("Pack.json: "), "names the file: \(message)")
        #expect(message.contains(rule.key), "names the key: \(message)")
        #expect(message.contains("Fix: "), "says how to fix: \(message)")
        #expect(message.contains(rule.fix), "fix: \(message)")
    }

    @Test(arguments: ["Level_1", "Level.1"])
    func warnsAboutIDsAppStoreConnectRejects(_ id: String) throws {
        let parsed = try parse(Self.replacing(#""Pack""#, "\"\(id)\""))
        #expect(parsed.manifest.assetPackID == id)
        #expect(parsed.warnings.count == 1)
        #expect(parsed.warnings.first?.contains("App Store Connect rejects") == true)
    }

    @Test func everyProblemIsFoundNotOnlyTheFirst() throws {
        let text =
            #"{"assetPackId": "P", "downloadPolicy": {"prefetch": {}}, "fileSelectors": [], "platforms": ["iPadOS"], "language": "x"}"#
        let checked = PackagingManifest.check(Array(text.utf8), file: "Pack.json")
        #expect(checked.parsed == nil)
        let keys = checked.problems.map(\.key)
        #expect(
            keys == [
                // assetPackId is said with "did you mean", not again as assetPackID "is missing"
                "assetPackId", "downloadPolicy.prefetch.installationEventTypes", "fileSelectors", "platforms[0]",
                "language",
            ],
            "\(checked.problems)"
        )
        #expect(checked.problems.allSatisfy { $0.severity == .error && $0.fix != nil })
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackagingManifest.parse(Array(text.utf8), file: "Pack.json")
        }
        let more = "(and 4 more: `ba-mock validate` of the same folder lists every problem)"
        #expect(error?.message.contains(more) == true)
    }

    @Test func xcode27KeysAreRead() throws {
        let text = """
            {"assetPackID": "Strings-fr", "downloadPolicy": {"onDemand": {}}, "sourceRoot": "../Content",
             "language": "FR_ca", "userInfo": {"minimumAppVersion": "2.1", "tier": 3},
             "fileSelectors": [{"filePattern": "Strings/**/*.json"}, {"fileExclusion": "**/draft-*"},
                               {"fileSource": "Logo.png", "fileDestination": "Images/logo.png"},
                               {"directorySource": "Voice/fr", "directoryDestination": "Voice"}],
             "platforms": ["iOS", "visionOS"]}
            """
        let manifest = try parse(text).manifest
        #expect(manifest.sourceRoot == "../Content")
        #expect(manifest.language == "fr-CA")
        #expect(manifest.userInfo == .object(["minimumAppVersion": .string("2.1"), "tier": .number(3)]))
        #expect(manifest.fileSelectors.map(\.key) == ["filePattern", "fileExclusion", "fileSource", "directorySource"])
        #expect(manifest.fileSelectors[2] == .fileMapping(source: "Logo.png", destination: "Images/logo.png"))
    }

    @Test func aManifestThatIsNotJSONByNameIsRefusedAsBaPackageDoes() throws {
        let scratch = try Scratch()
        let file = try scratch.write("Pack.jsonc", Self.valid)
        let checked = try PackagingManifest.check(file: file)
        #expect(checked.parsed == nil)
        #expect(checked.problems.first?.message.contains("not \"json\", which ba-package refuses") == true)
        #expect(checked.problems.first?.fix == "rename it to Pack.json")
    }

    /// A FIFO named like a manifest is a problem of that manifest, said at once: an open that waited for a
    /// writer hung `validate`, `export` and a server's watcher for good.
    @Test func aFIFONamedLikeAManifestIsAProblemNotAHang() throws {
        let scratch = try Scratch()
        let fifo = scratch.root.appending("Bad.json")
        #expect(mkfifo(fifo.string, 0o644) == 0)
        let outcome = finishing(within: 10, release: { releaseFIFOReader(fifo.string) }) {
            try PackagingManifest.check(file: fifo)
        }
        let checked = try #require(outcome, "check(file:) waited for a writer on the FIFO").get()
        #expect(checked.parsed == nil)
        #expect(
            checked.problems.map(\.description) == [
                "\(fifo): (file): is a FIFO, not a regular file. Fix: remove it from the asset folder (a manifest is "
                    + "a regular file)"
            ]
        )
        let error = #expect(throws: AssetPackFormatError.self) { try PackagingManifest.load(from: fifo) }
        #expect(error?.code == .invalidManifest)
    }

    /// A manifest larger than the largest download manifest a client accepts (64 MiB) could never be served:
    /// it is refused from its size, unread (a sparse file here, so nothing is written).
    @Test func aManifestOverTheSizeBoundIsRefusedUnread() throws {
        let scratch = try Scratch()
        let big = try scratch.write("Big.json", "")
        let fd = try FileDescriptor.open(big, .writeOnly)
        try fd.closeAfter { #expect(ftruncate(fd.rawValue, (64 << 20) + 1) == 0) }
        let checked = try PackagingManifest.check(file: big)
        #expect(checked.parsed == nil)
        #expect(
            checked.problems.map(\.description) == [
                "\(big): (file): is larger than 64 MiB, the most a manifest may have (a download manifest holding "
                    + "its entry would be more than clients accept). Fix: make it smaller (userInfo is copied into the "
                    + "download manifest as is)"
            ]
        )
    }

    @Test func missingManifestFileSaysHowToMakeOne() throws {
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackagingManifest.load(from: "/nonexistent/Manifest.json")
        }
        #expect(error?.code == .notFound)
        #expect(error?.message.contains("ba-mock template") == true)
    }
}

/// Problems that hid behind the first one, nested keys and JSON that only some readers take.
@Suite("Packaging manifests: every problem")
struct ManifestEveryProblemTests {
    func keys(_ text: String) -> [String] {
        PackagingManifest.check(Array(text.utf8), file: "P.json").problems.map { "\($0.severity) \($0.key)" }
    }

    @Test func eachWrongPlatformAndSelectorIsSaid() {
        let text = """
            {"assetPackID": "P", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS", "Android", 3, "iPadOS"],
             "fileSelectors": [{"file": "/abs"}, {"directory": "ok"}, {"fiel": "x"}, {"fileSource": "a"}]}
            """
        #expect(
            keys(text) == [
                "error fileSelectors[0].file", "error fileSelectors[2].fiel", "error fileSelectors[3].fileSource",
                "error platforms[1]", "error platforms[2]", "error platforms[3]",
            ]
        )
        let checked = PackagingManifest.check(Array(text.utf8), file: "P.json")
        #expect(checked.selection?.manifest.fileSelectors == [.directory("ok")])
        #expect(checked.selectorIndices == [1])
        #expect(checked.assetPackID == "P")
    }

    @Test func nestedKeysAreCheckedWithTheirFix() {
        let prefetch = #"{"assetPackID": "P", "platforms": ["iOS"], "fileSelectors": [{"file": "a"}], "#
        let checked = PackagingManifest.check(
            Array(
                (prefetch
                    + #""downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstall"], "priority": 1}}}"#)
                    .utf8
            ),
            file: "P.json"
        )
        #expect(
            checked.problems.map(\.key) == [
                "downloadPolicy.prefetch.priority", "downloadPolicy.prefetch.installationEventTypes[0]",
            ]
        )
        #expect(checked.problems.last?.fix == "did you mean \"firstInstallation\"?")
        let policy = PackagingManifest.check(
            Array(
                (prefetch + #""downloadPolicy": {"esential": {"installationEventTypes": ["firstInstallation"]}}}"#).utf8
            ),
            file: "P.json"
        )
        #expect(policy.problems.map(\.key) == ["downloadPolicy.esential"])
        #expect(policy.problems.first?.fix == "did you mean \"essential\"?")
    }

    @Test func trailingCommasAreAWarningWithTheirPlace() {
        let text =
            "{\"assetPackID\": \"P\", \"downloadPolicy\": {\"onDemand\": {}},\n \"platforms\": [\"iOS\",],\n"
            + " \"fileSelectors\": [{\"file\": \"a,]\"}], // a comment, }\n}"
        let checked = PackagingManifest.check(Array(text.utf8), file: "P.json")
        #expect(checked.parsed != nil)
        #expect(checked.problems.map(\.severity) == [.warning, .warning])
        #expect(checked.problems.first?.message.contains("(line 2, column 21)") == true, "\(checked.problems)")
        #expect(checked.problems.last?.message.contains("(line 3, column 36)") == true, "\(checked.problems)")
        #expect(checked.problems.first?.fix == "remove the comma")
    }

    /// A `/*` never closed was read past to the end of the file without a word; it is a syntax error with its
    /// line, and `/*` inside a string or a closed comment is not one.
    @Test func aCommentNeverClosedIsRefusedWithItsLine() {
        let body =
            #"{"assetPackID": "A", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "a/*b"}], "#
            + #""platforms": ["iOS"]}"#
        let refused = PackagingManifest.check(Array((body + "\n\n/* the end, never closed\n").utf8), file: "A.json")
        #expect(refused.parsed == nil)
        #expect(refused.problems.map(\.message) == ["is not valid JSON: the /* comment on line 3 is never closed"])
        #expect(refused.problems.first?.fix == "close it with */ (or remove it)")
        let closed = PackagingManifest.check(Array(("/* a\n comment */\n" + body + " // done").utf8), file: "A.json")
        #expect(closed.parsed?.manifest.fileSelectors == [.file("a/*b")], "\(closed.problems)")
    }

    /// A platform listed twice was folded into one without a word: a warning now, naming both places.
    @Test func aPlatformListedTwiceIsAWarning() {
        let body =
            #"{"assetPackID": "A", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "a"}], "#
            + #""platforms": ["iOS", "macOS", "iOS"]}"#
        let checked = PackagingManifest.check(Array(body.utf8), file: "A.json")
        #expect(checked.parsed?.manifest.platforms == ["iOS", "macOS"])
        let warning = checked.problems.first { $0.key == "platforms[2]" }
        #expect(warning?.severity == .warning)
        #expect(warning?.message == #"lists "iOS" again (platforms[0] is "iOS" already); it counts once"#)
        #expect(warning?.fix == "list each platform once")
    }
}
