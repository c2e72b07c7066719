import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import SystemPackage

struct Template: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "template",
        abstract: "Print a commented packaging-manifest template (Apple's keys), like `ba-package template`."
    )

    @Option(name: [.short, .customLong("output")], help: "Write the template to this file instead of stdout.")
    var output: FilePath?

    func run() throws {
        guard let output else {
            print(ManifestTemplate.text, terminator: "")
            return
        }
        try AtomicFile.write(Array(ManifestTemplate.text.utf8), to: output)
        Console.err("wrote \(output); edit the values in [brackets]")
    }
}
