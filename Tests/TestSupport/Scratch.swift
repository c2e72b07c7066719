import Foundation
import SystemPackage

/// A scratch folder for one test, removed when the test ends.
public final class Scratch: @unchecked Sendable {
    public let root: FilePath

    public init() throws {
        let base = FileManager.default.temporaryDirectory.path
        let path = "\(base)/ba-format-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        root = FilePath(path)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root.string)
    }

    /// A copy of the repository's sample `Assets/` as `<root>/Assets`, without the state a server left in it
    /// (serving writes its state into the folder).
    public func copySampleAssets() throws -> FilePath {
        let folder = root.appending("Assets")
        try FileManager.default.copyItem(
            atPath: repositoryRoot().appendingPathComponent("Assets").path,
            toPath: folder.string
        )
        try? FileManager.default.removeItem(atPath: folder.appending(".ba-mock").string)
        return folder
    }

    /// Writes a file (creating folders) and returns its path.
    @discardableResult
    public func write(_ relative: String, _ content: String) throws -> FilePath {
        try write(relative, Data(content.utf8))
    }

    @discardableResult
    public func write(_ relative: String, _ data: Data) throws -> FilePath {
        let path = root.appending(relative)
        try FileManager.default.createDirectory(
            atPath: path.removingLastComponent().string,
            withIntermediateDirectories: true
        )
        try data.write(to: URL(fileURLWithPath: path.string))
        return path
    }

    public func read(_ path: FilePath) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path.string))
    }

    /// Deterministic pseudo-random bytes (incompressible content without a fixture file).
    public static func noise(_ count: Int, seed: UInt64) -> Data {
        var state = seed &+ 0x9E37_79B9_7F4A_7C15
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes[index] = UInt8(truncatingIfNeeded: state)
        }
        return Data(bytes)
    }

    /// A small asset folder with one manifest per policy, like the sample.
    public func makeSampleFolder() throws {
        try write("Videos/Intro.m4v", Self.noise(200_000, seed: 1))
        try write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 3}"#)
        try write("Levels/World1/deep/nested/tiles.bin", Self.noise(30_000, seed: 2))
        try write("Levels/World2/level1.json", #"{"name": "2-1", "enemies": 5}"#)
        try write("Textures/rock.ktx2", Self.noise(50_000, seed: 3))
        try write(
            "Tutorial.json",
            """
            // essential pack
            {
              "assetPackID": "Tutorial",
              "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}},
              "fileSelectors": [{"file": "Videos/Intro.m4v"}],
              "platforms": ["iOS"]
            }
            """
        )
        try write(
            "Levels.json",
            """
            {
              "assetPackID": "Levels",
              "downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}},
              "fileSelectors": [{"directory": "Levels"}],
              "platforms": ["iOS", "macOS"]
            }
            """
        )
        try write(
            "Textures.json",
            """
            {
              "assetPackID": "Textures",
              "downloadPolicy": {"onDemand": {}},
              "fileSelectors": [{"directory": "Textures"}],
              "platforms": ["visionOS"]
            }
            """
        )
    }
}
