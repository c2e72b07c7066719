import Foundation
import System

/// An asset folder for the tests: packs of each policy, a Unicode name, a folder split across two packs, and
/// localized packs in French and German.
enum Fixture {
    static let map = Data(#"{"level": 1, "enemies": 3}"#.utf8)
    static let unicode = Data(#"{"name": "日本語 🎮"}"#.utf8)

    /// A new path named `name-<UUID>` in a folder of this test run's own, which is removed when the run ends
    /// (each run left its fixtures in the temporary folder, ~13 MB of them).
    static func temporary(_ name: String) -> URL {
        runFolder.appendingPathComponent("\(name)-\(UUID().uuidString)")
    }

    private static let runFolder: URL = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ba-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: Fixture.runFolder) }
        return folder
    }()

    /// Writes the folder under this run's temporary folder and returns it (the server serves a copy of it).
    /// - Parameter extraPack: The ID of one more on-demand pack, to tell two folders apart.
    static func make(extraPack: String? = nil) throws -> FilePath {
        let root = temporary("ba-fixture")
        func write(_ path: String, _ data: Data) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try data.write(to: url)
        }
        func manifest(_ id: String, policy: String, selectors: [String], language: String? = nil) throws {
            let selectorList = selectors.map {
                $0.hasSuffix("/") ? #"{"directory": "\#($0.dropLast())"}"# : #"{"file": "\#($0)"}"#
            }
            let languageKey = language.map { #""language": "\#($0)", "# } ?? ""
            try write(
                "\(id).json",
                Data(
                    #"{"assetPackID": "\#(id)", \#(languageKey)"downloadPolicy": \#(policy), "fileSelectors": [\#(selectorList.joined(separator: ", "))], "platforms": ["iOS"]}"#
                        .utf8
                )
            )
        }
        let onDemand = #"{"onDemand": {}}"#
        try write("Tutorial/steps.json", Data(#"["tap", "swipe"]"#.utf8))
        try manifest(
            "Tutorial",
            policy: #"{"essential": {"installationEventTypes": ["firstInstallation"]}}"#,
            selectors: ["Tutorial/"]
        )
        try write("Levels/World1/map.json", map)
        try write("Levels/Über/日本語 🎮.json", unicode)
        try write("Shared/levels.txt", Data("levels".utf8))
        try manifest(
            "Levels",
            policy: #"{"prefetch": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}}"#,
            selectors: ["Levels/", "Shared/levels.txt"]
        )
        var big = Data(count: 256 << 10)
        big.withUnsafeMutableBytes { bytes in
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for index in bytes.indices {  // incompressible, so that a throttle slows it
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
            }
        }
        try write("Extras/big.bin", big)
        try write("Shared/extras.txt", Data("extras".utf8))
        try manifest("Extras", policy: onDemand, selectors: ["Extras/", "Shared/extras.txt"])
        try write("VoicesFR/Voices/hello.txt", Data("bonjour".utf8))
        try write("VoicesDE/Voices/hello.txt", Data("hallo".utf8))
        try write("VoicesDE/Voices/intro.txt", Data("willkommen".utf8))
        for (id, language) in [("VoicesFR", "fr"), ("VoicesDE", "de")] {
            try write(
                "\(id).json",
                Data(
                    #"{"assetPackID": "\#(id)", "language": "\#(language)", "sourceRoot": "\#(id)", "downloadPolicy": \#(onDemand), "fileSelectors": [{"directory": "Voices"}], "platforms": ["iOS"]}"#
                        .utf8
                )
            )
        }
        if let extraPack {
            try write("\(extraPack)/file.txt", Data(extraPack.utf8))
            try manifest(extraPack, policy: onDemand, selectors: ["\(extraPack)/"])
        }
        return FilePath(root.path)
    }
}
