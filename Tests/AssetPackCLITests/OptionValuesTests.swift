import AssetPackCLI
import Testing

/// Values given on the command line: what `ba-sync bench` and the other commands accept, and what they say
/// of the rest.
@Suite("Command-line values")
struct OptionValuesTests {
    @Test func byteCountsTakeSuffixesAndRefuseWhatDoesNotFit() {
        #expect(byteCount("4096") == 4096)
        #expect(byteCount("4k") == 4096)
        #expect(byteCount("64K") == 65536)
        #expect(byteCount("1m") == 1 << 20)
        #expect(byteCount("2g") == 2 << 30)
        #expect(byteCount("") == nil)
        #expect(byteCount("k") == nil)
        #expect(byteCount("4kb") == 4000)
        #expect(byteCount("200MB") == 200_000_000)
        #expect(byteCount("1MiB") == 1 << 20)
        #expect(byteCount("512B") == 512)
        #expect(byteCount("MB") == nil)
        #expect(byteCount("-1m") == nil)
        #expect(byteCount("1 MB") == nil)
        #expect(byteCount("1.5m") == nil)
        // Once a trap: 9 999 999 999 999 999 × 2^30 overflows an Int.
        #expect(byteCount("9999999999999999g") == nil)
        #expect(byteCount("\(Int.max / 1024 + 1)k") == nil)
    }

    @Test func listsNameTheItemThatIsWrong() {
        let parse = { (text: String) in listValues(text, { ["a", "b"].contains($0) ? $0 : nil }, "method") }
        #expect(parse("a") == .success(["a"]))
        #expect(parse(" a , b ") == .success(["a", "b"]))
        #expect(parse("a,c") == .failure(OptionValueError("unknown method 'c'")))
        #expect(parse("") == .failure(OptionValueError("empty method list")))
        #expect(parse(",") == .failure(OptionValueError("empty method list")))
        #expect(parse("a,,b") == .failure(OptionValueError("an empty method in the list")))
    }

    @Test func secondsAreFiniteAndAtMostAWeek() {
        #expect(secondsProblem(1, option: "--duration", positive: true) == nil)
        #expect(secondsProblem(0, option: "--duration", positive: true) == "--duration must be more than 0 seconds")
        #expect(secondsProblem(0, option: "--settle", positive: false) == nil)
        #expect(secondsProblem(-1, option: "--settle", positive: false) == "--settle must be 0 or more seconds")
        #expect(secondsProblem(.infinity, option: "--settle", positive: false)?.contains("up to a week") == true)
    }
}
