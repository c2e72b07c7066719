import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what a pack archive holds, from its index; --verify re-hashes every file against it."
    )

    @Argument(help: "A pack archive (from `ba-mock package`, `export`, or downloaded from /assets/<id>).")
    var archive: FilePath

    @Flag(help: "Read every entry and check sizes and SHA-256 digests against the index.")
    var verify = false

    @Flag(help: "Print the index as JSON.")
    var json = false

    func run() throws {
        let index = verify ? try PackReader.verify(at: archive) : try PackReader.readIndex(at: archive)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            Console.out(String(decoding: try encoder.encode(index), as: UTF8.self))
            return
        }
        Console.out(
            "\(index.assetPackID): \(index.downloadPolicy.name), \(ByteFormat.count(index.fileCount, "file")), "
                + "\(ByteFormat.string(index.installSize)), platforms \(index.platforms.joined(separator: ", "))"
                + (index.language.map { ", language \($0)" } ?? "")
        )
        for file in index.files {
            Console.out("  \(file.sha256.prefix(12))  \(String(file.size).leftPadded(10))  \(file.path)")
        }
        if verify { Console.out("verified: every file matches the index") }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: " ", count: max(0, width - count)) + self
    }
}
