import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Line output for the command-line tools: each line goes out in one unbuffered write, so a script reading
/// a pipe sees it as it happens (the first line of `ba-mock serve` is the URL) and lines from concurrent
/// requests never interleave.
public enum Console {
    /// Writes a line to standard output.
    public static func out(_ line: String) {
        _ = try? FileDescriptor.standardOutput.writeAll(Array((line + "\n").utf8))
    }

    /// Writes a line to standard error.
    public static func err(_ line: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array((line + "\n").utf8))
    }

    /// Writes text to standard error without a newline (progress that redraws itself with `\r`).
    public static func progress(_ text: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

    /// Whether standard error is a terminal (progress is drawn only there).
    public static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }
}
