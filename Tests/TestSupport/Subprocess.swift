import Foundation

/// A built command-line tool run as a user would, with its output captured.
public final class RunningTool: @unchecked Sendable {
    public let process: Process
    private let lock = NSLock()
    // Bytes, decoded when read: a chunk of a pipe can end inside a character (a "…" written in pieces came out
    // as three U+FFFD when each chunk was decoded alone).
    private var stdoutBytes = Data()
    private var stderrBytes = Data()
    private let firstLine = DispatchSemaphore(value: 0)
    private var firstLineSignalled = false
    /// Left once by each pipe's reader when it reads the end of its pipe: after it, all output is in.
    private let drained = DispatchGroup()

    /// Starts `tool` with `arguments` in `directory`, with `environment` set over this process's (a value of
    /// `nil` unsets the variable).
    public init(_ tool: URL, _ arguments: [String], directory: String? = nil, environment: [String: String?] = [:])
        throws
    {
        process = Process()
        process.executableURL = tool
        process.arguments = arguments
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (key, value) in environment { merged[key] = value }
            process.environment = merged
        }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        // Each pipe is read on a thread of its own with blocking reads, to its end: Foundation's
        // readabilityHandler on Linux did not always report the end, so "all output is in" could not be told.
        drain(out.fileHandleForReading) { tool, data in
            tool.lock.lock()
            tool.stdoutBytes += data
            let signal = !tool.firstLineSignalled && (data.contains(UInt8(ascii: "\n")) || data.isEmpty)
            if signal { tool.firstLineSignalled = true }
            tool.lock.unlock()
            if signal { tool.firstLine.signal() }
        }
        drain(err.fileHandleForReading) { tool, data in
            tool.lock.lock()
            tool.stderrBytes += data
            tool.lock.unlock()
        }
        do {
            try process.run()
        } catch {
            // Nothing will write: the readers see the end and their threads finish.
            try? out.fileHandleForWriting.close()
            try? err.fileHandleForWriting.close()
            throw error
        }
    }

    /// Reads `handle` to its end on a thread of its own, handing each piece (the last one empty) to `take`,
    /// then leaves `drained`.
    private func drain(_ handle: FileHandle, _ take: @escaping @Sendable (RunningTool, Data) -> Void) {
        drained.enter()
        Thread.detachNewThread { [weak self] in
            while true {
                let data = handle.availableData
                guard let self else { return }
                take(self, data)
                if data.isEmpty {
                    self.drained.leave()
                    return
                }
            }
        }
    }

    /// The first line of standard output, waiting up to `timeout` seconds.
    public func waitForFirstLine(timeout: Double = 60) -> String? {
        guard firstLine.wait(timeout: .now() + timeout) == .success else { return nil }
        return stdout.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init)
    }

    public var stdout: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: stdoutBytes, as: UTF8.self)
    }

    public var stderr: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: stderrBytes, as: UTF8.self)
    }

    /// Sends `signal` (SIGINT by default) and waits for the exit status (up to `timeout` seconds, then SIGKILL).
    @discardableResult
    public func interrupt(signal: Int32 = SIGINT, timeout: Double = 10) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return wait(timeout: timeout)
    }

    /// Waits for the process to end; kills it after `timeout` seconds.
    @discardableResult
    public func wait(timeout: Double = 60) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -9
        }
        process.waitUntilExit()
        // Both pipes read to their end, not 50 ms in the hope they were; a process the tool started and left
        // running could hold them open, hence the bound.
        _ = drained.wait(timeout: .now() + 5)
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Runs a tool to completion: exit status, stdout, stderr.
public func runTool(
    _ tool: URL,
    _ arguments: [String],
    directory: String? = nil,
    environment: [String: String?] = [:],
    timeout: Double = 120
) throws -> (status: Int32, stdout: String, stderr: String) {
    let running = try RunningTool(tool, arguments, directory: directory, environment: environment)
    let status = running.wait(timeout: timeout)
    return (status, running.stdout, running.stderr)
}

/// Where the package's built products are (next to the test bundle), or `BA_BIN_DIR`.
public func builtProduct(_ name: String) -> URL {
    if let dir = ProcessInfo.processInfo.environment["BA_BIN_DIR"] {
        return URL(fileURLWithPath: dir).appendingPathComponent(name)
    }
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    while url.path != "/" {
        url.deleteLastPathComponent()
        let candidate = url.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    return URL(fileURLWithPath: ".build/debug").appendingPathComponent(name)
}

/// The repository's root folder (where Package.swift is), found from this source file.
public func repositoryRoot(file: String = #filePath) -> URL {
    var url = URL(fileURLWithPath: file)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
    }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
}

/// A TCP port that was free a moment ago on 127.0.0.1 (for tools such as nginx that cannot take port 0).
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether this machine lets the tests mount a small tmpfs (root with CAP_SYS_ADMIN, as on CI here), to fill
/// a disk on purpose.
public let canMountTmpfs: Bool = {
    let probe = FileManager.default.temporaryDirectory.appendingPathComponent("ba-mount-probe-\(getpid())").path
    try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: probe) }
    guard
        (try? runTool(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe]))?.status
            == 0
    else { return false }
    _ = try? runTool(URL(fileURLWithPath: "/bin/umount"), [probe])
    return true
}()
