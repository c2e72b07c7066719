import Foundation

/// Runs `body` on a thread of its own and waits up to `seconds` for it, so that a test of something that
/// once hung (an open that waits for a FIFO's writer) fails instead of hanging the run.
///
/// When time runs out, `release` is called to unblock the thread (open the FIFO's other end, say), so that
/// it does not outlive the test, and `nil` is returned.
/// - Returns: What `body` returned or threw, or `nil` when it did not finish in time.
public func finishing<T: Sendable>(
    within seconds: Double,
    release: () -> Void,
    _ body: @escaping @Sendable () throws -> T
) -> Result<T, any Error>? {
    let outcome = Outcome<T>()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        outcome.value = Result { try body() }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else {
        release()
        done.wait()
        return nil
    }
    return outcome.value
}

/// What a thread of ``finishing(within:release:_:)`` returned: written before the semaphore is signalled, read
/// after it is waited for, which orders the two.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    var value: Result<T, any Error>?
}

/// Opens and closes the writing end of the FIFO at `path` without waiting: a reader blocked in `open` wakes
/// and then reads the end of the file.
public func releaseFIFOReader(_ path: String) {
    let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
    if fd >= 0 { close(fd) }
}

/// Checks `condition` every `interval` seconds until it holds or `seconds` have passed: a test waits for the
/// event it needs (a log line, a closed connection), never for a guess at how long it takes.
/// - Returns: Whether the condition held in time.
@discardableResult
public func waitUntil(within seconds: Double, every interval: Double = 0.02, _ condition: () throws -> Bool) rethrows
    -> Bool
{
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        usleep(useconds_t(interval * 1_000_000))
    }
}

/// The CPU time a process has used (user and system, in clock ticks), from `/proc/<pid>/stat`.
public func cpuTicks(_ pid: Int32) -> Int? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return nil }
    // After the command's ")": state is field 3 of the whole line; utime and stime are fields 14 and 15.
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
    return user + system
}

/// Waits until a process has used no CPU time for `quiet` seconds (it waits on every socket and timer it
/// has): what it does for its peers is done.
/// - Returns: Whether it went quiet within `seconds`.
@discardableResult
public func waitUntilIdle(_ pid: Int32, quiet: Double = 0.3, within seconds: Double = 20) -> Bool {
    var last = cpuTicks(pid)
    var since = Date()
    return waitUntil(within: seconds, every: 0.05) {
        let now = cpuTicks(pid)
        if now != last {
            (last, since) = (now, Date())
            return false
        }
        return Date().timeIntervalSince(since) >= quiet
    }
}

/// How many sockets a process holds open (its listening sockets and its connections), from `/proc/<pid>/fd`:
/// a connection leaves the count when the process closes it, not when the peer goes.
public func openSockets(_ pid: Int32) -> Int {
    let folder = "/proc/\(pid)/fd"
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    return descriptors.filter {
        ((try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)) ?? "").hasPrefix("socket:")
    }.count
}
