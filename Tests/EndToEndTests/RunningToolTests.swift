import Foundation
import TestSupport
import Testing

/// The harness every end-to-end test reads output through: once `wait()` returns, all of it is in.
@Suite("Running a tool")
struct RunningToolTests {
    /// 8 MiB on stdout and a line on stderr, written just before the exit: a reader that waited 50 ms after
    /// the exit for the pipes to drain saw the end of neither.
    @Test func waitReturnsOnceAllOutputIsIn() throws {
        let tool = try RunningTool(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "head -c 8388608 /dev/zero | tr '\\0' x; echo END; echo last >&2"]
        )
        #expect(tool.wait(timeout: 60) == 0)
        let out = tool.stdout
        #expect(out.utf8.count == 8_388_608 + 4 && out.hasSuffix("xEND\n"), "\(out.utf8.count) bytes")
        #expect(tool.stderr == "last\n")
    }
}
