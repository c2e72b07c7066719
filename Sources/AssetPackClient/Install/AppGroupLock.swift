import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The app group's exclusive lock (the counterpart of Apple's `withExclusiveControl`): an `flock` on
/// `.ba-sync/lock`, held by one process at a time while it changes anything. The holder's PID is written
/// into the file so that a waiting process can say who it waits for.
final class AppGroupLock: Sendable {
    private let fd: FileDescriptor

    private init(fd: FileDescriptor) { self.fd = fd }

    /// How often a waiting process tries the lock again.
    static let pollInterval: Duration = .milliseconds(50)

    /// Takes the lock, waiting while another process holds it; `onWait` is called once with the holder's PID
    /// before waiting. The wait ends when the task is cancelled (`CancellationError`) or after `timeout`.
    /// Every file call (open, `flock`, the PID's write and read) is a ``BlockingIO/shortCall(_:)``.
    /// - Throws: ``AssetPackClientError`` with code `.lockTimeout` or `.io`, or `CancellationError`.
    static func acquire(
        _ store: AppGroupStore,
        timeout: Duration?,
        onWait: @Sendable (Int32?) -> Void
    ) async throws -> AppGroupLock {
        let fd = try await BlockingIO.shortCall { try open(store) }
        do {
            try await take(fd, path: store.lockFile, timeout: timeout, onWait: onWait)
        } catch {
            try? fd.close()
            throw error
        }
        return AppGroupLock(fd: fd)
    }

    /// Opens `.ba-sync/lock` relative to the control folder, opened without following links, and never
    /// through a link at `lock` itself: a planted `lock -> PATH` would otherwise create PATH.
    private static func open(_ store: AppGroupStore) throws -> FileDescriptor {
        BlockingIO.checkOffPool("AppGroupLock.open")
        let path = store.lockFile
        let control = try store.openFolder(".ba-sync", creating: true)
        let raw = openat(control.rawValue, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o640)
        let failure = Errno(rawValue: errno)
        try? control.close()
        guard raw >= 0 else {
            if failure == .tooManySymbolicLinkLevels {
                throw AssetPackClientError(
                    code: .io,
                    message:
                        "\(path) is a symlink; ba-sync never follows a link inside the app group. Fix: remove it "
                        + "(and find out who put it there), then run again",
                    cause: failure
                )
            }
            throw AssetPackClientError.io("open the lock", path, failure)
        }
        var info = stat()
        guard fstat(raw, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(raw)
            throw AssetPackClientError(
                code: .io,
                message: "\(path) is not a regular file. Fix: remove it, then run again"
            )
        }
        return FileDescriptor(rawValue: raw)
    }

    /// What one try of the lock found: taken (and the PID written), or held by another process.
    private enum Attempt: Sendable {
        case taken
        case held(by: Int32?)
    }

    /// Tries `flock` without blocking; when taken, writes this process's PID into the file, else reads the
    /// holder's. `errno` is read right after the call that set it.
    private static func attempt(_ fd: FileDescriptor, path: FilePath) throws -> Attempt {
        BlockingIO.checkOffPool("AppGroupLock.attempt")
        if flock(fd.rawValue, LOCK_EX | LOCK_NB) == 0 {
            _ = ftruncate(fd.rawValue, 0)
            _ = try? fd.writeAll(toAbsoluteOffset: 0, Array("\(getpid())\n".utf8))
            return .taken
        }
        let failure = errno
        guard failure == EWOULDBLOCK || failure == EINTR else {
            throw AssetPackClientError.io("lock", path, Errno(rawValue: failure))
        }
        return .held(by: holder(of: fd))
    }

    /// Polls the lock (a short call every ``pollInterval``), so that the wait holds no thread and can be
    /// cancelled.
    private static func take(
        _ fd: FileDescriptor,
        path: FilePath,
        timeout: Duration?,
        onWait: @Sendable (Int32?) -> Void
    ) async throws {
        let clock = ContinuousClock()
        let start = clock.now
        var announced = false
        while true {
            guard case .held(let holder) = try await BlockingIO.shortCall({ try attempt(fd, path: path) }) else {
                return
            }
            if !announced {
                announced = true
                onWait(holder)
            }
            if let timeout, clock.now - start >= timeout {
                let who = holder.map { "ba-sync (pid \($0))" } ?? "another process"
                throw AssetPackClientError(
                    code: .lockTimeout,
                    message:
                        "\(who) held \(path) for more than \(timeout.inSeconds) s. Fix: wait for it to finish, or raise "
                        + "--lock-timeout"
                )
            }
            try await Task.sleep(for: pollInterval)
        }
    }

    /// The PID written into the lock file by its holder, read through this process's own descriptor of it.
    private static func holder(of fd: FileDescriptor) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 32)
        guard let count = try? bytes.withUnsafeMutableBytes({ try fd.read(fromAbsoluteOffset: 0, into: $0) })
        else { return nil }
        let text = String(decoding: bytes.prefix(count), as: UTF8.self)
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Empties the PID, unlocks and closes: a short call.
    func release() async {
        let fd = self.fd
        _ = try? await BlockingIO.shortCall {
            _ = ftruncate(fd.rawValue, 0)
            _ = flock(fd.rawValue, LOCK_UN)
            try? fd.close()
        }
    }
}

/// The app group's lock as the tasks of one process share it: the first task in takes the `flock` (and
/// recovers what a crashed run left), the last one out releases it, whatever path it leaves by. Tasks of the
/// same process coordinate through ``InstallGate`` and ``AppGroupStore/update(_:)``, not through this lock.
actor AppGroupLockHolder {
    private let store: AppGroupStore
    private let timeout: Duration?
    private let onWait: @Sendable (Int32?) -> Void
    private var lock: AppGroupLock?
    private var holders = 0
    private var acquiring: Task<AppGroupLock, any Error>?
    private var releasing: Task<Void, Never>?

    init(store: AppGroupStore, timeout: Duration?, onWait: @escaping @Sendable (Int32?) -> Void) {
        self.store = store
        self.timeout = timeout
        self.onWait = onWait
    }

    /// Runs `body` while this process holds the app group's lock.
    func withLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await enter()
        do {
            let result = try await body()
            await leave()
            return result
        } catch {
            await leave()
            throw error
        }
    }

    private func enter() async throws {
        while true {
            if lock != nil {
                holders += 1
                return
            }
            if let releasing {
                await releasing.value
                if self.releasing == releasing { self.releasing = nil }  // whoever gets here first
                continue
            }
            // The first task in starts taking the lock; others of this process wait for the same attempt.
            let task: Task<AppGroupLock, any Error>
            let mine = acquiring == nil
            if let acquiring {
                task = acquiring
            } else {
                task = takeLock()
                acquiring = task
            }
            let result =
                mine
                ? await withTaskCancellationHandler {
                    await task.result
                } onCancel: {
                    task.cancel()
                }
                : await task.result
            // Whoever gets here first records the outcome (awaiting a finished task may not suspend, so a
            // waiter must not count on the first task to do it).
            if acquiring == task {
                acquiring = nil
                if case .success(let acquired) = result { lock = acquired }
            }
            if lock != nil {
                holders += 1
                return
            }
            if mine, case .failure(let error) = result { throw error }
            try Task.checkCancellation()  // the attempt this task waited for failed: try anew
        }
    }

    /// Takes the `flock` and recovers what a crashed run left, releasing the lock if recovery fails.
    private func takeLock() -> Task<AppGroupLock, any Error> {
        let (store, timeout, onWait) = (self.store, self.timeout, self.onWait)
        return Task {
            try await BlockingIO.shortCall { try store.createFolders() }
            let lock = try await AppGroupLock.acquire(store, timeout: timeout, onWait: onWait)
            do {
                // A crashed run's staging folders may be large: their delete is a long job.
                try await BlockingIO.longJob { try store.recover() }
            } catch {
                await lock.release()
                throw error
            }
            return lock
        }
    }

    /// The last one out releases the lock; a task entering meanwhile waits for that release before it takes
    /// the lock anew (else it would find this very process holding it).
    private func leave() async {
        holders -= 1
        if holders == 0, let lock {
            self.lock = nil
            let release = Task { await lock.release() }
            releasing = release
            await release.value
            if releasing == release { releasing = nil }
        }
    }
}
