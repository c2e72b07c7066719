import AssetPackFormat
import CAppleCompression
import Foundation
import SystemPackage
import TestSupport
import Testing

/// The corpus: hand-made inputs for each parser that takes outside input, each held to the exact outcome
/// written in the `<name>.expected` beside it. An input is named `<kind>-<what>.<ext>`; its kind picks the
/// parser (`manifest`, `download`, `index`, `archive`, `delta`, `lzfse`). The binary ones are made by
/// `scripts/make-fuzz-corpus.py`; the `.expected` files are written by hand:
///
/// ```
/// parsed                      refused invalidJSON
/// assetPackID: A              not valid JSON
/// platforms: iOS              (one fragment of the message a line, each must appear in it)
/// ```
///
/// After `parsed` comes the whole summary the test makes of the value (compared line for line); after
/// `refused <code>`, fragments of the message. Lines that start with `# ` are notes for the reader. An LZFSE stream is `decoded <bytes> <sha256>` or `error <code>`.
extension FuzzTests {
    static let corpusFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Corpus"
    )

    /// Every input of the corpus (not its `.expected` files nor `.keep`), sorted.
    static var corpusInputs: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: corpusFolder.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".expected") }.sorted()
    }

    @Test func corpusHoldsInputsOfEveryKind() {
        let kinds = Set(Self.corpusInputs.map { String($0.prefix { $0 != "-" }) })
        #expect(kinds == ["archive", "delta", "download", "index", "lzfse", "manifest"])
        #expect(Self.corpusInputs.count >= 50)
    }

    @Test(arguments: corpusInputs)
    func corpusOutcomes(_ name: String) throws {
        let input = [UInt8](try Data(contentsOf: Self.corpusFolder.appendingPathComponent(name)))
        let expectedFile = Self.corpusFolder.appendingPathComponent(name + ".expected")
        let actual = try Self.outcome(of: name, input)
        guard let text = try? String(contentsOf: expectedFile, encoding: .utf8) else {
            Issue.record("\(name) has no \(name).expected; its outcome now:\n\(actual.joined(separator: "\n"))")
            return
        }
        let expected = text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("# ") }
        try #require(!expected.isEmpty, "\(name).expected is empty")
        let shown = actual.joined(separator: "\n")
        #expect(actual.first == expected.first, "\(name): \(shown)")
        if expected[0].hasPrefix("refused") {
            let message = actual.dropFirst().joined(separator: "\n")
            for fragment in expected.dropFirst() {
                #expect(message.contains(fragment), "\(name): the message lacks \"\(fragment)\": \(message)")
            }
        } else {
            #expect(Array(actual.dropFirst()) == Array(expected.dropFirst()), "\(name):\n\(shown)")
        }
    }

    /// What the parser of the input's kind makes of it: `parsed` and a summary, or `refused <code>` and the
    /// message.
    static func outcome(of name: String, _ input: [UInt8]) throws -> [String] {
        let kind = name.prefix { $0 != "-" }
        do {
            switch kind {
            case "manifest": return ["parsed"] + summary(try PackagingManifest.parse(input, file: name))
            case "download": return ["parsed"] + summary(try DownloadManifest.decode(Data(input), source: name))
            case "index": return ["parsed"] + summary(try PackIndex.decode(Data(input), source: name))
            case "archive": return try extractOutcome(name, input)
            case "delta": return try extractOutcome(name, input, delta: true)
            case "lzfse": return [lzfseOutcome(input)]
            default:
                Issue.record("\(name): no parser for the kind \(kind)")
                return []
            }
        } catch let error as AssetPackFormatError {
            return ["refused \(error.code.rawValue)", error.description]
        }
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "(does not encode)"
    }

    static func summary(_ parsed: ParsedManifest) -> [String] {
        let manifest = parsed.manifest
        let selectors = manifest.fileSelectors.map { selector -> String in
            switch selector {
            case .file(let path), .directory(let path): "\(selector.key) \(path.debugDescription)"
            case .filePattern(let glob), .fileExclusion(let glob): "\(selector.key) \(glob.pattern.debugDescription)"
            case .fileMapping(let source, let destination), .directoryMapping(let source, let destination):
                "\(selector.key) \(source.debugDescription) -> \(destination.debugDescription)"
            }
        }
        return [
            "assetPackID: \(manifest.assetPackID.debugDescription)",
            "downloadPolicy: \(json(manifest.downloadPolicy))",
            "fileSelectors: \(selectors.joined(separator: ", "))",
            "platforms: \(manifest.platforms.joined(separator: ", "))",
            "userInfo: \(manifest.userInfo.map { json($0) } ?? "none")",
        ] + parsed.problems.map { "warning \($0.key): \($0.message)" }
    }

    static func summary(_ manifest: DownloadManifest) -> [String] {
        manifest.assetPacks.map { entry in
            "\(entry.id) v\(entry.version) url=\(entry.url) downloadSize=\(entry.downloadSize) "
                + "sha256=\(entry.sha256 ?? "none") installSize=\(entry.installSize.map(String.init) ?? "none") "
                + "fileCount=\(entry.fileCount.map(String.init) ?? "none") "
                + "compression=\(entry.compression?.rawValue ?? "none") deltas=\(entry.deltas.map { String($0.count) } ?? "none") "
                + "userInfo=\(entry.userInfo.map { json($0).prefix(40) } ?? "none")"
        }
    }

    static func summary(_ index: PackIndex) -> [String] {
        [
            "\(index.assetPackID) formatVersion=\(index.formatVersion) installSize=\(index.installSize) "
                + "fileCount=\(index.fileCount) policy=\(json(index.downloadPolicy)) "
                + "platforms=\(index.platforms.joined(separator: ",")) language=\(index.language ?? "none")"
        ] + index.files.map { "\($0.path.debugDescription) \($0.size) \($0.sha256)" }
    }

    /// An archive extracted into a folder of its own (1 MiB at most): the index and every file written, each
    /// with its size; nothing may land beside that folder, whatever the outcome. A delta is extracted as one
    /// bound to ``PackDelta/Binding/hostile`` over a base of one file, and the rows it leaves with the base
    /// are listed too.
    static func extractOutcome(_ name: String, _ input: [UInt8], delta: Bool = false) throws -> [String] {
        let scratch = try Scratch()
        let archive = try scratch.write("input.pack", Data(input))
        let destination = scratch.root.appending("app-group/staging")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
        defer {
            let beside = (try? FileManager.default.contentsOfDirectory(atPath: scratch.root.string))?.sorted()
            #expect(beside == ["app-group", "input.pack"], "\(name)")
            #expect(!FileManager.default.fileExists(atPath: "/tmp/ba-escape.txt"), "\(name)")
        }
        var absent: [String] = []
        let index: PackIndex
        if delta {
            let extracted = try PackArchiveReader.extractDelta(
                archive,
                into: destination,
                limit: 1 << 20,
                expecting: .hostile,
                baseFileCount: 1
            )
            (index, absent) = (extracted.index, extracted.absent.map(\.path.debugDescription))
        } else {
            index = try PackArchiveReader.extract(archive, into: destination, limit: 1 << 20)
        }
        var files: [String] = []
        let walker = FileManager.default.enumerator(atPath: destination.string)
        while let path = walker?.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: destination.appending(path).string)
            if attributes[.type] as? FileAttributeType == .typeRegular {
                files.append("\(path) \((attributes[.size] as? NSNumber)?.intValue ?? -1)")
            }
        }
        return ["parsed"] + summary(index) + (delta ? ["absent: \(absent.joined(separator: ", "))"] : [])
            + ["written:"] + files.sorted()
    }

    /// A raw LZFSE stream decoded into 64 KiB: its length and digest, or the decoder's error.
    static func lzfseOutcome(_ input: [UInt8]) -> String {
        var output = [UInt8](repeating: 0, count: 1 << 16)
        let result = ac_lzfse_decode(&output, output.count, input, input.count)
        guard result >= 0 else {
            let names = [
                Int(AC_ERROR_CORRUPT): "corrupt", Int(AC_ERROR_OUTPUT_FULL): "outputFull",
                Int(AC_ERROR_UNSUPPORTED): "unsupported", Int(AC_ERROR_NO_MEMORY): "noMemory",
            ]
            return "error \(names[result] ?? String(result))"
        }
        return "decoded \(result) \(ArchiveFixture.sha256Hex(Data(output.prefix(result))))"
    }
}
