import CAppleCompression
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackFormat

/// Property-based fuzzing of the two parsers that take outside input: packaging manifests and pack archives.
/// Every generated input must either parse into a value that keeps the parser's promises (the same as a
/// reference reads, or the same once written out and read again) or be refused with an
/// ``AssetPackFormatError`` of a code the parser documents; never crash, hang, or write outside the
/// destination. `BA_FUZZ_ITERATIONS` sets the count (`make fuzz`). Hand-made inputs of past bugs and edge
/// cases are kept in `Corpus/`, each held to the exact outcome in its `.expected` file
/// (FuzzCorpusTests.swift) and used as a seed here.
@Suite("Fuzzing")
struct FuzzTests {
    var iterations: Int { Int(ProcessInfo.processInfo.environment["BA_FUZZ_ITERATIONS"] ?? "") ?? 400 }

    /// Flips, deletes, duplicates, inserts and truncates bytes.
    static func mutate(_ input: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let interesting: [[UInt8]] = [
            Array("\"".utf8), Array("{".utf8), Array("}".utf8), Array("[".utf8), Array(",".utf8), Array("//".utf8),
            Array("/*".utf8), Array("\\u0000".utf8), Array("..".utf8), Array("/".utf8), [0], [0xFF], [0xC3],
            Array("-1".utf8), Array("99999999999999999999".utf8), Array("null".utf8),
        ]
        for _ in 0..<Int.random(in: 1...8, using: &random) {
            guard !bytes.isEmpty else { break }
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0: bytes[at] ^= UInt8.random(in: 1...255, using: &random)
            case 1: bytes.remove(at: at)
            case 2: bytes.insert(contentsOf: interesting.randomElement(using: &random) ?? [], at: at)
            case 3: bytes = Array(bytes.prefix(at))
            case 4:
                let end = min(bytes.count, at + Int.random(in: 1...64, using: &random))
                bytes.insert(contentsOf: bytes[at..<end], at: at)
            default: bytes[at] = UInt8.random(in: 0...255, using: &random)
            }
        }
        return bytes
    }

    /// Each mutated manifest is either refused with a code of the parser's (and a message naming the file), or
    /// read as JSONSerialization reads the same text: the ID and platforms it holds, nothing else.
    @Test func mutatedManifestsAreReadFaithfullyOrRefused() throws {
        let seeds =
            [
                ManifestTemplate.text,
                #"{"assetPackID": "A", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}}, "fileSelectors": [{"file": "x"}, {"directory": "y/z"}], "platforms": ["iOS"]}"#,
            ].map { Array($0.utf8) } + corpus("manifest")
        var random = SplitMix64(seed: 0xBA5E)
        var (parsed, refused) = (0, 0)
        for _ in 0..<iterations {
            let input = Self.mutate(seeds.randomElement(using: &random) ?? [], &random)
            let shown = String(decoding: input, as: UTF8.self)
            do {
                let manifest = try PackagingManifest.parse(input, file: "fuzz.json").manifest
                let reference = try JSONSerialization.jsonObject(with: Data(Self.withoutComments(input)))
                let object = reference as? [String: Any]
                #expect(object?["assetPackID"] as? String == manifest.assetPackID, "\(shown)")
                let platforms = (object?["platforms"] as? [String] ?? []).reduce(into: [String]()) {
                    if !$0.contains($1) { $0.append($1) }  // a platform listed twice counts once
                }
                #expect(platforms == manifest.platforms, "\(shown)")
                #expect(AssetPackID.problem(with: manifest.assetPackID) == nil, "\(shown)")
                parsed += 1
            } catch let error as AssetPackFormatError {
                #expect([.invalidJSON, .invalidManifest, .unsafePath].contains(error.code), "\(error) for \(shown)")
                #expect(error.message.contains("fuzz.json"), "\(error.message)")
                refused += 1
            } catch {
                Issue.record("manifest parser threw \(type(of: error)): \(error) for \(shown)")
            }
        }
        // The mutations reach both ends: some inputs survive them, most do not.
        #expect(parsed > 0 && refused > parsed, "parsed \(parsed), refused \(refused)")
    }

    /// Each mutated download manifest is either refused with one of the two codes its decoder documents, or
    /// decoded into entries that keep its promises (IDs valid and unique, digests lower-case hex, sizes in
    /// range) and that read back the same after being written out again.
    @Test func mutatedDownloadManifestsRoundTripOrAreRefused() throws {
        let seed = Array(
            #"{"assetPacks": [{"id": "P", "url": "assets/P", "version": 1, "downloadSize": 10, "downloadPolicy": {"onDemand": {}}, "host": {"thirdParty": {}}, "sha256": "\#(String(repeating: "a", count: 64))", "installSize": 10, "fileCount": 1, "compression": "zstd"}]}"#
                .utf8
        )
        var random = SplitMix64(seed: 0xD0C)
        var (decoded, refused) = (0, 0)
        for _ in 0..<iterations {
            let input = Self.mutate(seed, &random)
            let shown = String(decoding: input, as: UTF8.self)
            do {
                let manifest = try DownloadManifest.decode(Data(input), source: "fuzz")
                let again = try DownloadManifest.decode(try manifest.encoded(), source: "fuzz, written again")
                #expect(again == manifest, "\(shown)")
                #expect(Set(manifest.assetPacks.map(\.id)).count == manifest.assetPacks.count, "\(shown)")
                for entry in manifest.assetPacks {
                    #expect(AssetPackID.problem(with: entry.id) == nil, "\(shown)")
                    #expect(entry.sha256.map { $0 == $0.lowercased() && $0.utf8.count == 64 } ?? true, "\(shown)")
                    #expect(entry.downloadSize >= 0 && entry.version >= 0 && (entry.installSize ?? 0) >= 0)
                }
                decoded += 1
            } catch let error as AssetPackFormatError {
                #expect([.invalidJSON, .invalidManifest].contains(error.code), "\(error) for \(shown)")
                #expect(error.message.contains("at fuzz"), "\(error.message)")
                refused += 1
            } catch {
                Issue.record("download manifest decoder threw \(type(of: error)): \(error) for \(shown)")
            }
        }
        #expect(decoded > 0 && refused > decoded, "decoded \(decoded), refused \(refused)")
    }

    /// The index parser reads a byte at a time, not through JSONDecoder: on mutated indexes it must agree
    /// with JSONDecoder, never reading a document JSONDecoder refuses, never reading one differently, and
    /// refusing one JSONDecoder reads only for what the index says (its version, its totals), not its syntax.
    @Test func indexParserAgreesWithJSONDecoder() throws {
        let sha = String(repeating: "ab", count: 32)
        let seeds =
            [
                #"{"assetPackID": "P", "downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstallation"]}}, "fileCount": 2, "files": [{"path": "a/\u00e9 \ud83c\udfae.json", "sha256": "\#(sha)", "size": 3}, {"size": 0, "path": "b\"\\\/\t", "sha256": "\#(sha)", "extra": [1, {"x": null}]}], "formatVersion": 1, "installSize": 3, "language": "fr-CA", "platforms": ["iOS", "macOS"]}"#,
                #"{ "formatVersion" : 1, "platforms" : [ ], "language" : null, "files" : [ ], "installSize" : 0, "fileCount" : 0, "assetPackID" : "Q", "downloadPolicy" : { "onDemand" : { } }, "unknown" : [ true, false, -1.5e3, "s" ] }"#,
            ].map { Array($0.utf8) } + Self.indexSpellings(sha: sha)
        let reference = JSONDecoder()
        var random = SplitMix64(seed: 0x1D3)
        var agreed = 0
        for round in 0..<(iterations * 2 + seeds.count) {
            let input = round < seeds.count ? seeds[round] : Self.mutate(seeds[round % seeds.count], &random)
            let theirs = try? reference.decode(PackIndex.self, from: Data(input))
            do {
                let ours = try PackIndex.decode(Data(input), source: "fuzz")
                #expect(theirs == ours, "\(String(decoding: input, as: UTF8.self))")
                agreed += 1
            } catch let error as AssetPackFormatError {
                if theirs != nil && theirs?.formatVersion == PackIndex.currentFormatVersion {
                    #expect(
                        !error.message.contains("does not decode"),
                        "JSONDecoder reads it: \(error.message) for \(String(decoding: input, as: UTF8.self))"
                    )
                }
            } catch {
                Issue.record("index parser threw \(type(of: error)): \(error)")
            }
        }
        #expect(agreed >= seeds.count)
    }

    /// Indexes JSONDecoder reads that a first parser of our own refused (found by a tester): whole numbers
    /// with a fraction or an exponent, a byte order mark, UTF-16 and UTF-32, nesting past 256 levels.
    static func indexSpellings(sha: String) -> [[UInt8]] {
        func index(size: String, version: String = "1", extra: String = "") -> String {
            #"{"assetPackID": "P", "downloadPolicy": {"onDemand": {}}, "fileCount": 1, "files": [{"path": "a", "sha256": "\#(sha)", "size": \#(size)}], "formatVersion": \#(version), "installSize": 6, "platforms": ["iOS"]\#(extra)}"#
        }
        var spellings = ["6", "6.0", "6e0", "6E0", "6e+0", "60e-1", "0.6e1", "6.5", "06", "-0", "1e400"].map {
            Array(index(size: $0).utf8)
        }
        spellings.append(Array(index(size: "6", version: "1.0").utf8))
        for depth in [300, 512, 513] {
            let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            spellings.append(Array(index(size: "6", extra: #", "deep": \#(nested)"#).utf8))
        }
        let plain = index(size: "6")
        spellings.append([0xEF, 0xBB, 0xBF] + Array(plain.utf8))
        for encoding: String.Encoding in [
            .utf16, .utf16BigEndian, .utf16LittleEndian, .utf32BigEndian, .utf32LittleEndian,
        ] {
            spellings.append(Array(plain.data(using: encoding) ?? Data()))
        }
        return spellings
    }

    @Test func archiveReaderNeverCrashesNorWritesOutside() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let parsed = try PackagingManifest.load(from: scratch.root.appending("Levels.json"))
        var seeds: [[UInt8]] = corpus("archive")
        for compression in [PackCompression.zstd, .none, .gzip] {
            let path = scratch.root.appending("seed-\(compression.rawValue).pack")
            _ = try PackBuilder.build(
                try PackSource.resolve(parsed, root: scratch.root),
                to: path,
                options: PackBuildOptions(compression: compression)
            )
            seeds.append([UInt8](try scratch.read(path)))
        }
        // Apple Archives: every block algorithm, and plain.
        for compression in PackFormat.aar.compressions {
            let path = scratch.root.appending("seed-aar-\(compression.rawValue).pack")
            _ = try PackBuilder.build(
                try PackSource.resolve(parsed, root: scratch.root),
                to: path,
                options: PackBuildOptions(format: .aar, compression: compression)
            )
            seeds.append([UInt8](try scratch.read(path)))
        }
        var random = SplitMix64(seed: 0xA4C)
        let archive = scratch.root.appending("fuzz.pack")
        let iterations = max(20, self.iterations / 10)  // each case extracts: a tenth of the manifest count
        // Each seed is extracted once as it is, so the accepted branch's checks run too (few mutated packs
        // survive): the packs built here are read, and so are the corpus's valid ones.
        let valid = seeds.count - corpus("archive").count + 2
        var accepted = 0
        for index in 0..<(seeds.count + iterations) {
            let input =
                index < seeds.count ? seeds[index] : Self.mutate(seeds.randomElement(using: &random) ?? [], &random)
            try scratch.write("fuzz.pack", Data(input))
            let destination = scratch.root.appending("out/\(index)")
            try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: true)
            do {
                let index = try PackArchiveReader.extract(archive, into: destination, limit: 1 << 20)
                // Accepted: what was written is what the index lists, file for file and size for size.
                let written = FileManager.default.enumerator(atPath: destination.string)?.allObjects as? [String]
                let files = (written ?? []).filter {
                    let attributes = try? FileManager.default.attributesOfItem(atPath: destination.appending($0).string)
                    return attributes?[.type] as? FileAttributeType == .typeRegular
                }
                #expect(files.count == index.files.count, "\(files) against \(index.files.map(\.path))")
                for row in index.files {
                    let attributes = try? FileManager.default.attributesOfItem(
                        atPath: destination.appending(row.path).string
                    )
                    #expect((attributes?[.size] as? NSNumber)?.int64Value == row.size, "\(row.path)")
                }
                accepted += 1
            } catch let error as AssetPackFormatError {
                #expect([.corruptPack, .archive].contains(error.code), "\(error)")
            } catch {
                Issue.record("archive reader threw \(type(of: error)): \(error)")
            }
            try? FileManager.default.removeItem(atPath: destination.string)
        }
        #expect(accepted >= valid && accepted < seeds.count + iterations, "\(accepted) accepted, \(valid) valid seeds")
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.root.string).sorted()
        #expect(
            left == [
                "Levels", "Levels.json", "Textures", "Textures.json", "Tutorial.json", "Videos", "fuzz.pack", "out",
                "seed-aar-lz4.pack", "seed-aar-lzfse.pack", "seed-aar-lzma.pack", "seed-aar-none.pack",
                "seed-aar-zlib.pack", "seed-gzip.pack", "seed-none.pack", "seed-zstd.pack",
            ]
        )
    }

    /// LZFSE streams from a peer: ours, mutated, decode into the capacity given or fail with an error value;
    /// never a crash, a hang or a write past the buffer (ASan's job in `scripts/codec`; here, the canary after
    /// it). Unmutated, every stream decodes to exactly what was encoded.
    @Test func lzfseDecoderNeverCrashesAndRoundTrips() throws {
        var random = SplitMix64(seed: 0x12F5E)
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: ac_lzfse_encode_scratch_size(), alignment: 64)
        defer { scratch.deallocate() }
        let text = Array(String(repeating: "the level's enemies: 3, the boss: 🎮; ", count: 8000).utf8)
        var seeds: [(plain: [UInt8], stream: [UInt8])] = []
        for size in [0, 1, 7, 100, 4095, 4096, 5000, 70_000, 300_000] {
            for kind in 0..<3 {
                let plain: [UInt8] =
                    kind == 0
                    ? Array(text.prefix(size))
                    : kind == 1
                        ? (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
                        : Array(repeating: 7, count: size)
                var stream = [UInt8](repeating: 0, count: size + size / 8 + 4096)
                let count = ac_lzfse_encode(&stream, stream.count, plain, plain.count, scratch)
                try #require(count > 0, "size \(size) kind \(kind)")
                stream.removeLast(stream.count - count)
                var back = [UInt8](repeating: 0, count: max(size, 1))
                let decoded = ac_lzfse_decode(&back, plain.count, stream, stream.count)
                #expect(decoded == plain.count, "size \(size) kind \(kind)")
                let same = Array(back.prefix(plain.count)) == plain
                #expect(same, "size \(size) kind \(kind): decoded bytes differ")
                seeds.append((plain, stream))
            }
        }
        for _ in 0..<iterations {
            guard let seed = seeds.randomElement(using: &random) else { break }
            let input = Self.mutate(seed.stream, &random)
            let capacity = seed.plain.count + Int.random(in: 0...64, using: &random)
            var output = [UInt8](repeating: 0xA5, count: capacity + 64)
            let result = ac_lzfse_decode(&output, capacity, input, input.count)
            #expect(result <= capacity)
            #expect(result >= 0 || [Int(AC_ERROR_CORRUPT), Int(AC_ERROR_OUTPUT_FULL)].contains(result), "\(result)")
            #expect(output[capacity...].allSatisfy { $0 == 0xA5 }, "wrote past the capacity")
        }
    }

    /// A delta's index rows are paths from a peer, never seen as entries when the delta leaves the file with
    /// the base: whatever a row says, it is refused or it is a normal relative path inside the pack.
    @Test func deltaIndexRowsAreNormalPathsOrRefused() throws {
        let scratch = try Scratch()
        let pieces = ["a", "é", "e\u{301}", "/", "/", ".", "..", "\\", "\\u0000", "日本", " ", "%2e", "\u{2024}"]
        let digest = String(repeating: "0", count: 64)
        let binding = PackDelta.Binding.hostile
        var random = SplitMix64(seed: 0xDE17A)
        let folder = scratch.root.appending("staging")
        try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        var accepted = 0
        for _ in 0..<max(200, iterations / 10) {
            let row = (0..<Int.random(in: 1...6, using: &random)).map { _ in
                pieces[Int.random(in: 0..<pieces.count, using: &random)]
            }.joined()
            let index =
                #"{"formatVersion":1,"assetPackID":"Hostile","downloadPolicy":{"onDemand":{}},"platforms":["iOS"],"#
                + #""installSize":1,"fileCount":1,"files":[{"path":"\#(row)","size":1,"sha256":"\#(digest)"}]}"#
            let delta = try scratch.write(
                "fuzz.delta",
                ArchiveFixture.rawTar([
                    ("Delta.json", [:], binding.entryBytes), ("Index.json", [:], Data(index.utf8)),
                ])
            )
            do {
                let (_, absent) = try PackArchiveReader.extractDelta(
                    delta,
                    into: folder,
                    limit: 1,
                    expecting: binding,
                    baseFileCount: 1
                )
                for file in absent {
                    let parts = Substring(file.path).utf8.split(
                        separator: UInt8(ascii: "/"),
                        omittingEmptySubsequences: false
                    )
                    let bad =
                        file.path.utf8.first == UInt8(ascii: "/") || file.path.utf8.contains(0)
                        || parts.contains { $0.isEmpty || $0.elementsEqual([46]) || $0.elementsEqual([46, 46]) }
                    #expect(!bad, "a row that leaves the pack was accepted: \(Array(file.path.utf8))")
                }
                accepted += 1
            } catch is AssetPackFormatError {
            } catch {
                Issue.record("delta reader threw \(type(of: error)): \(error)")
            }
        }
        #expect(accepted > 0)  // the generator makes good rows too
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.string).isEmpty)
    }

    /// The corpus inputs of a kind (`Corpus/<kind>-*`), as seeds: each is also held to its own outcome by
    /// ``corpusOutcomes(_:)``.
    func corpus(_ kind: String) -> [[UInt8]] {
        Self.corpusInputs.filter { $0.hasPrefix(kind + "-") }.compactMap {
            (try? Data(contentsOf: Self.corpusFolder.appendingPathComponent($0))).map { [UInt8]($0) }
        }
    }

    /// The text with each `//` and `/* */` comment outside strings turned into a space (its line breaks kept):
    /// a reference written apart from the scanner, for JSONSerialization to read what the manifest parser reads.
    static func withoutComments(_ text: [UInt8]) -> [UInt8] {
        let (slash, star, newline) = (UInt8(ascii: "/"), UInt8(ascii: "*"), UInt8(ascii: "\n"))
        var out: [UInt8] = []
        var index = 0
        var inString = false
        while index < text.count {
            let byte = text[index]
            let next = index + 1 < text.count ? text[index + 1] : nil
            if !inString, byte == slash, next == slash || next == star {
                let rest = text[(index + 2)...]
                let end =
                    next == slash
                    ? rest.firstIndex(of: newline) ?? text.count
                    : rest.indices.first { rest[$0...].starts(with: [star, slash]) }.map { $0 + 2 } ?? text.count
                out.append(UInt8(ascii: " "))
                out += text[index..<end].filter { $0 == newline }
                index = end
                continue
            }
            out.append(byte)
            if inString, byte == UInt8(ascii: "\\"), let next {
                out.append(next)
                index += 1
            } else if byte == UInt8(ascii: "\"") {
                inString.toggle()
            }
            index += 1
        }
        return out
    }
}
