import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackFormat

/// The extraction's file writer: which bytes of a large file it starts writing back to the disk while the rest
/// is still to come, and that a file written past those starts holds exactly the bytes handed to it.
@Suite("DiskWriter")
struct DiskWriterTests {
    typealias Run = Writeback.Run
    let run = Writeback.runLength

    /// Every byte of a file of `writes` is in exactly one run, in order, and the runs it starts.
    func runs(_ writes: [Int64]) -> [Run] {
        var writeback = Writeback()
        var runs = writes.compactMap { writeback.wrote(Int($0)) }
        if let tail = writeback.finish() { runs.append(tail) }
        return runs
    }

    @Test func aFileShorterThanARunIsLeftToTheFlush() {
        #expect(runs([run - 1]).isEmpty)
        #expect(runs([1 << 20, 1 << 20, 3 << 20]).isEmpty)
        #expect(runs([]).isEmpty)
    }

    @Test func eachWholeRunStartsOnceItIsWrittenAndTheTailAtTheEnd() {
        let mib: Int64 = 1 << 20
        // 3 + 3 + 3 MiB: the run starts when the third write takes it past 8 MiB; 1 MiB after it is the tail.
        let expected = [Run(offset: 0, length: 9 * mib), Run(offset: 9 * mib, length: mib)]
        #expect(runs([3 * mib, 3 * mib, 3 * mib, mib]) == expected)
        // Exactly one run: nothing left for a tail.
        #expect(runs([run]) == [Run(offset: 0, length: run)])
        // One write of 2.5 runs: one hint for all of it, none after.
        #expect(runs([run * 5 / 2]) == [Run(offset: 0, length: run * 5 / 2)])
        // Runs cover every byte, in order, without overlap.
        let covered = runs([5 * mib, 7 * mib, 1, 9 * mib, 123])
        #expect(covered.first?.offset == 0)
        for (before, after) in zip(covered, covered.dropFirst()) {
            #expect(before.offset + before.length == after.offset)
        }
        #expect(covered.last.map { $0.offset + $0.length } == 21 * mib + 124)
    }

    /// A 20 MiB file in uneven pieces (runs started twice and a tail) and a small one beside it hold exactly the
    /// bytes written.
    @Test func filesWrittenPastTheirRunsHoldTheirBytes() throws {
        let scratch = try Scratch()
        let destination = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: destination.string, withIntermediateDirectories: false)
        let noise = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        let large = [UInt8](try #require(try noise.read(upToCount: (20 << 20) + 4_321)))
        try noise.close()
        let small = Array("Über/日本語 🎮".utf8)
        let writer = try DiskWriter(root: destination)
        try writer.writeFile(at: "Levels/große Welt.bin") { write in
            var offset = 0
            for piece in [1 << 20, 7 << 20 + 17, 3, 5 << 20, large.count] where offset < large.count {
                let end = min(offset + piece, large.count)
                try large[offset..<end].withUnsafeBytes { try write($0) }
                offset = end
            }
        }
        try writer.writeFile(at: "Levels/日本語 🎮.json") { write in try small.withUnsafeBytes { try write($0) } }
        let read = { (name: String) in
            try [UInt8](Data(contentsOf: URL(fileURLWithPath: destination.appending("Levels/\(name)").string)))
        }
        #expect(try read("große Welt.bin") == large)
        #expect(try read("日本語 🎮.json") == small)
    }
}
