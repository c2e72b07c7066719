import AsyncHTTPClient
import Foundation
import NIOCore
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's nginx on 127.0.0.1 at a free port, one process, its files in a scratch folder: a real web server
/// (or, with `proxy_cache`, a CDN edge) in front of what a test serves.
public final class Nginx: @unchecked Sendable {
    /// `http://127.0.0.1:PORT`.
    public let base: String
    private let server: RunningTool

    /// Whether nginx is installed (`make deps` installs it).
    public static var installed: Bool { FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") }

    /// Starts nginx with `server` as the body of its one `server` block (after `listen`) and `http` inside the
    /// `http` block, and waits until it answers.
    public init(scratch: Scratch, server body: String, http: String = "") async throws {
        let port = try freeLoopbackPort()
        let root = scratch.root.string
        let config = try scratch.write(
            "nginx-\(port).conf",
            """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(root)/nginx-\(port).pid;
            error_log \(root)/nginx-error.log;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(root)/nginx-body;
                proxy_temp_path \(root)/nginx-proxy;
                fastcgi_temp_path \(root)/nginx-fastcgi;
                uwsgi_temp_path \(root)/nginx-uwsgi;
                scgi_temp_path \(root)/nginx-scgi;
                sendfile on;
                default_type application/octet-stream;
                \(http)
                server {
                    listen 127.0.0.1:\(port);
                    \(body)
                }
            }
            """
        )
        // A single-process nginx keeps the signal mask it inherits from the test runner, where SIGINT and
        // SIGTERM may be blocked; it holds nothing that needs a clean stop, so it is stopped with SIGKILL.
        server = try RunningTool(URL(fileURLWithPath: "/usr/sbin/nginx"), ["-c", config.string, "-e", "stderr"])
        base = "http://127.0.0.1:\(port)"
        for _ in 0..<200 {
            if let response = try? await HTTPClient.shared.execute(
                HTTPClientRequest(url: base + "/"),
                timeout: .seconds(5)
            ) {
                _ = try? await response.body.collect(upTo: 1 << 20)
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let stderr = server.stderr
        server.interrupt(signal: SIGKILL)
        throw NginxError(message: "nginx did not start: \(stderr)")
    }

    /// Stops the server (SIGKILL). Call it in a `defer`: that also keeps the server alive to the end of the test.
    public func stop() { server.interrupt(signal: SIGKILL) }

    deinit { server.interrupt(signal: SIGKILL) }

    struct NginxError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
