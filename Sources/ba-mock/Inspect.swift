import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show what a pack archive holds; --verify re-hashes every file.",
        discussion: """
            A tar pack (ba-mock's own) is shown from its Index.json. An Apple Archive (.aar, from ba-package, \
            `ba-mock package --format aar` or any tool that writes them; told apart by its bytes, not its name) \
            is shown entry by entry, folders included, with the SHA-256 each file carries (its SH2 field; "-" \
            where it carries none), and its ID, policy and platforms from the Manifest.json it carries (else its \
            ID is taken from the file name, with a warning). --verify then hashes every file and checks it \
            against its SH2.
            """
    )

    @Argument(help: "A pack archive: .aar, or a tar pack (from `ba-mock package`, `export`, or /assets/<id>).")
    var archive: FilePath

    @Flag(help: "Read every entry and check sizes and SHA-256 digests against the index (the SH2 fields of an .aar).")
    var verify = false

    @Flag(help: "Print JSON: the index of a tar pack; format, compression, manifest and entries of an .aar.")
    var json = false

    func run() throws {
        let inspection = try PackArchiveReader.inspect(at: archive, verify: verify) { Console.err("warning: \($0)") }
        if json {
            Console.out(try JSONOutput.text(inspection, pretty: true))
            return
        }
        switch inspection {
        case .tar(let index, let verified): show(index, verified: verified)
        case .appleArchive(let archive): show(archive)
        }
    }

    private func show(_ archive: AppleArchiveInspection) {
        let (summary, files) = (archive.summary, archive.files)
        let size: Int64 = files.reduce(0) { $0 + $1.size }
        let platforms = summary.platforms.isEmpty ? "unknown" : summary.platforms.joined(separator: ", ")
        let language = summary.language.map { ", language \($0)" } ?? ""
        let carried = archive.carriesManifest ? ", manifest carried" : ""
        let compression = archive.listing.compression?.rawValue ?? "none"
        Console.out(
            "\(summary.assetPackID): \(summary.downloadPolicy.name), \(ByteFormat.count(files.count, "file")), "
                + "\(ByteFormat.string(size)), platforms \(platforms)\(language); Apple Archive, \(compression)\(carried)"
        )
        for entry in archive.listing.entries {
            let digest = entry.sha256.map { String($0.prefix(12)) } ?? String(repeating: "-", count: 12)
            let kind = entry.type.padding(toLength: 7, withPad: " ", startingAt: 0)
            Console.out(
                "  \(kind) \(digest)  \(String(entry.size).leftPadded(10))  \(entry.path.isEmpty ? "." : AssetPackID.printable(entry.path))"
            )
        }
        if let verified = archive.verifiedFiles {
            let carried = files.filter { $0.sha256 != nil }.count
            Console.out(
                "verified: \(ByteFormat.count(verified, "file")) read whole; \(carried) checked against the "
                    + "SHA-256 the archive carries"
                    + (carried < verified ? ", \(verified - carried) carry none" : "")
            )
        }
    }

    private func show(_ index: PackIndex, verified: Bool) {
        Console.out(
            "\(index.assetPackID): \(index.downloadPolicy.name), \(ByteFormat.count(index.fileCount, "file")), "
                + "\(ByteFormat.string(index.installSize)), platforms \(index.platforms.joined(separator: ", "))"
                + (index.language.map { ", language \($0)" } ?? "")
        )
        for file in index.files {
            Console.out("  \(file.sha256.prefix(12))  \(String(file.size).leftPadded(10))  \(file.path)")
        }
        if verified { Console.out("verified: every file matches the index") }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: " ", count: max(0, width - count)) + self
    }
}
