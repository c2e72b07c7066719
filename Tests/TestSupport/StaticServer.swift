import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// `python3 -m http.server` over `folder` on 127.0.0.1, port 0: a plain static server, none of ours, for
/// what any web server or CDN would serve.
/// - Returns: The running server (the caller stops it with `interrupt(signal: SIGKILL)`: a test process may
///   block SIGINT and SIGTERM for its children) and its base URL, `http://127.0.0.1:PORT`.
public func pythonStaticServer(_ folder: FilePath) throws -> (RunningTool, String) {
    // Debian's python3 (make deps installs it); a version manager's shim on PATH can take seconds to start.
    let debian = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    let server = try RunningTool(
        URL(fileURLWithPath: debian ? "/usr/bin/python3" : "/usr/bin/env"),
        (debian ? [] : ["python3"])
            + ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", folder.string]
    )
    // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
    guard let line = server.waitForFirstLine(), let range = line.range(of: "http://127.0.0.1:"),
        let port = Int(line[range.upperBound...].prefix { $0.isNumber })
    else {
        server.interrupt(signal: SIGKILL)
        throw CancellationError()
    }
    return (server, "http://127.0.0.1:\(port)")
}

/// The JSON objects of `--json` output, one a line; lines that are not objects are left out.
public func jsonLines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
}
